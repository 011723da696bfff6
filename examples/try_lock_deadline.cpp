// try_lock(wait, lease) against a deadline: a holder keeps the lock for 300 ms. A caller with a
// 100 ms deadline gives up (false, about 100 ms later); a caller whose deadline is 2 s away gets
// it as soon as the holder unlocks (woken by the unlock notification, not by polling), with a
// 5 s lease of its own (no watchdog: the key expires 5 s later unless unlocked).
// Usage: rlock_try_lock_deadline [redis-url]
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <iostream>
#include <rlock/rlock.hpp>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

/// Tries until `deadline` (a point in time, as a request's deadline usually is).
asio::awaitable<bool> lock_before(rlock::reentrant_lock& lock, clock_type::time_point deadline,
                                  std::chrono::milliseconds lease) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(
      std::max(deadline - clock_type::now(), clock_type::duration::zero()));
  co_return co_await lock.try_lock(left, lease);  // completes by left + command_timeout
}

int main(int argc, char** argv) {
  try {
    asio::io_context io;
    rlock::client redis(io.get_executor(),
                        rlock::config::from_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379"));
    int status = 1;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await redis.connect();
          auto holder = redis.get_lock("rlock-example:invoice:7");
          co_await holder.lock();
          asio::steady_timer release_at(io, 300ms);
          release_at.async_wait([&](boost::system::error_code) {
            asio::co_spawn(io, holder.unlock(), asio::detached);
          });

          auto caller = redis.get_lock("rlock-example:invoice:7");
          auto start = clock_type::now();
          const bool quick = co_await lock_before(caller, start + 100ms, 5s);
          std::cout << "deadline 100 ms: " << (quick ? "acquired" : "gave up") << " after "
                    << std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() -
                                                                             start)
                           .count()
                    << " ms\n";
          start = clock_type::now();
          const bool patient = co_await lock_before(caller, start + 2s, 5s);
          std::cout << "deadline 2 s: " << (patient ? "acquired" : "gave up") << " after "
                    << std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() -
                                                                             start)
                           .count()
                    << " ms, woken by "
                    << (caller.last_wake() == rlock::wake_reason::notification ? "the unlock"
                                                                               : "expiry")
                    << "; lease left " << (co_await caller.remaining_ttl()).count() << " ms\n";
          if (patient) co_await caller.unlock();
          status = !quick && patient ? 0 : 1;
          co_await redis.close();
        },
        [](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
        });
    io.run_for(30s);
    return status;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
}
