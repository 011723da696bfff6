// The blocking facade with the standard library's tools: std::scoped_lock for a section, and a
// std::condition_variable_any over the distributed lock for a bounded producer/consumer queue
// (cv.wait releases the Redis lock while it sleeps and takes it again before returning). Three
// producers push 10 items each; two consumers take them all.
// Usage: rlock_blocking_condition [redis-url]
#include <chrono>
#include <condition_variable>
#include <deque>
#include <iostream>
#include <mutex>
#include <rlock/rlock.hpp>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
  try {
    rlock::blocking::client redis{
        rlock::config::from_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379")};
    auto lock = redis.get_lock("rlock-example:queue");  // the owner is the calling thread
    std::condition_variable_any changed;
    std::deque<int> queue;
    int consumed = 0;
    constexpr int total = 30;

    std::vector<std::thread> threads;
    for (int p = 0; p < 3; ++p) {
      threads.emplace_back([&, p] {
        for (int i = 0; i < 10; ++i) {
          std::unique_lock guard{lock};
          // Bounded queue: wait (releasing the lock) while it is full. Bounded in time too.
          if (!changed.wait_for(guard, 10s, [&] { return queue.size() < 4; })) return;
          queue.push_back(p * 100 + i);
          changed.notify_all();
        }
      });
    }
    for (int c = 0; c < 2; ++c) {
      threads.emplace_back([&] {
        for (;;) {
          std::unique_lock guard{lock};
          if (!changed.wait_for(guard, 10s, [&] { return !queue.empty() || consumed == total; })) {
            return;
          }
          if (consumed == total) return;
          queue.pop_front();
          ++consumed;
          changed.notify_all();
        }
      });
    }
    for (auto& t : threads) t.join();
    {
      std::scoped_lock guard{lock};
      std::cout << "consumed " << consumed << " items; queue empty: " << std::boolalpha
                << queue.empty() << '\n';
    }
    return consumed == total && queue.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
}
