// rlock demo: coroutines on two clients and a blocking thread contend on one lock.
// Shows who holds it, how each waiter was woken, a reentrant acquire, a watchdog renewal past
// the lease, and a waiter that gets a crashed holder's lock when its lease runs out.
// Usage: rlock_demo [redis://127.0.0.1:6379]
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <fmt/format.h>

#include <chrono>
#include <exception>
#include <mutex>
#include <rlock/rlock.hpp>
#include <string>
#include <thread>

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

const auto start = clock_type::now();
std::mutex print_mutex;

template <typename... Args>
void say(fmt::format_string<Args...> f, Args&&... args) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start);
  std::lock_guard guard(print_mutex);
  fmt::print("[{:>6} ms] {}\n", ms.count(), fmt::format(f, std::forward<Args>(args)...));
  std::fflush(stdout);
}

const char* describe(rlock::wake_reason r) {
  switch (r) {
    case rlock::wake_reason::immediate:
      return "first try";
    case rlock::wake_reason::notification:
      return "woken by unlock notification";
    case rlock::wake_reason::expiry:
      return "woken when the holder's lease ran out";
    case rlock::wake_reason::handoff:
      return "handed over by an unlock in this process";
  }
  return "?";
}

asio::awaitable<void> sleep_for(clock_type::duration d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

// Holds the lock through the watchdog for longer than its lease, re-entering once.
asio::awaitable<void> first_holder(rlock::client& redis, std::string name) {
  auto lock = redis.get_lock(name);
  co_await lock.lock();
  say("alpha   (client A) holds '{}' (watchdog lease {} ms)", name,
      redis.get_config().watchdog_timeout.count());
  co_await lock.lock();
  say("alpha   re-entered: hold count {}", co_await lock.hold_count());
  co_await sleep_for(redis.get_config().watchdog_timeout * 2);
  say("alpha   still holds it after 2 leases: PTTL {} ms, {} renewal calls so far",
      (co_await lock.remaining_ttl()).count(), redis.stats().renewal_calls);
  co_await lock.unlock();
  co_await lock.unlock();
  say("alpha   released it (hold count now {})", co_await lock.hold_count());
}

asio::awaitable<void> waiter(rlock::client& redis, std::string name, std::string who) {
  auto lock = redis.get_lock(name);
  const auto asked = clock_type::now();
  co_await lock.lock();
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - asked);
  say("{} holds it after {} ms ({})", who, waited.count(), describe(lock.last_wake()));
  co_await sleep_for(100ms);
  co_await lock.unlock();
  say("{} released it", who);
}

// Takes the lock with a short lease and never unlocks: a crashed process.
asio::awaitable<void> crashed_holder(rlock::client& redis, std::string name) {
  auto lock = redis.get_lock(name);
  co_await lock.lock(600ms);
  say("crash   (client B) holds it with a 600 ms lease and will never unlock");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    auto cfg = rlock::config::from_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379");
    cfg.watchdog_timeout = 1500ms;  // short, so a renewal is visible within seconds
    const std::string name =
        "rlock-demo:" + boost::uuids::to_string(boost::uuids::random_generator()()).substr(0, 8);

    asio::io_context io;
    rlock::client a(io.get_executor(), cfg);
    rlock::client b(io.get_executor(), cfg);
    std::exception_ptr failure;
    auto check = [&](std::exception_ptr e) {
      std::lock_guard guard(print_mutex);
      if (e && !failure) failure = e;
    };

    // Waiters start once alpha holds the lock; they queue behind it and behind each other.
    auto waiters = [&]() -> asio::awaitable<void> {
      co_await sleep_for(200ms);  // demo pacing: alpha first
      say("beta, gamma (client A) and delta (client B) start waiting");
      co_await (waiter(a, name, "beta   (client A)") && waiter(a, name, "gamma  (client A)") &&
                waiter(b, name, "delta  (client B)"));
      co_await crashed_holder(b, name);
      co_await waiter(a, name, "omega  (client A)");
    };
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await a.connect();
          co_await b.connect();
          say("connected two clients to {}:{} (client A id {})", cfg.host, cfg.port, a.id());
          co_await (first_holder(a, name) && waiters());
          const auto stats = a.stats();
          say("done: client A made {} acquire attempts, {} notified and {} expiry wake-ups",
              stats.acquire_attempts, stats.notified_wakeups, stats.expiry_wakeups);
          co_await a.close();
          co_await b.close();
        },
        check);

    std::thread blocking_thread([&] {
      try {
        std::this_thread::sleep_for(300ms);  // demo pacing only: let alpha take the lock first
        rlock::blocking::client sync_redis(cfg);
        auto lock = sync_redis.get_lock(name);
        const auto asked = clock_type::now();
        {
          std::scoped_lock guard{lock};
          say("blocking thread holds it via std::scoped_lock after {} ms ({})",
              std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - asked)
                  .count(),
              describe(lock.for_this_thread().last_wake()));
          std::this_thread::sleep_for(100ms);
        }
        say("blocking thread released it");
      } catch (...) {
        check(std::current_exception());
      }
    });

    io.run_for(60s);
    blocking_thread.join();
    if (failure) std::rethrow_exception(failure);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "demo failed: {}\n", e.what());
    return 1;
  }
}
