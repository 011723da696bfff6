// The blocking quick start: std::scoped_lock over a distributed lock.
// Usage: rlock_blocking_quick_start [redis-url]
#include <iostream>
#include <mutex>
#include <rlock/rlock.hpp>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  try {
    rlock::blocking::client redis{
        rlock::config::from_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379")};
    auto lock = redis.get_lock("rlock-example:account:42");  // the owner is the calling thread
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; ++i) {
      threads.emplace_back([&lock, i] {
        std::scoped_lock guard{lock};  // std Lockable
        std::cout << "thread " << i << " holds the lock\n";
      });
    }
    for (auto& t : threads) t.join();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
}
