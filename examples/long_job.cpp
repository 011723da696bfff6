// A long job kept alive by the watchdog and aborted when the lock is lost. With a 1 s watchdog
// lease, a 2.5 s job outlives two leases: the watchdog renews it every third of a lease. Then a
// second job has its lock taken away by an operator (force_unlock, as `rlockctl unlock --force`
// does): with_lock cancels the job at its next wait and reports lock_lost.
// Usage: rlock_long_job [redis-url]
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <iostream>
#include <rlock/rlock.hpp>

namespace asio = boost::asio;
using namespace std::chrono_literals;

/// The job: `steps` steps of 100 ms, each a point where a cancellation stops it.
asio::awaitable<int> job(int steps) {
  asio::steady_timer step(co_await asio::this_coro::executor);
  for (int i = 0; i < steps; ++i) {
    step.expires_after(100ms);
    co_await step.async_wait(asio::use_awaitable);
  }
  co_return steps;
}

int main(int argc, char** argv) {
  try {
    asio::io_context io;
    auto cfg = rlock::config::from_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379");
    cfg.watchdog_timeout = 1s;
    rlock::client redis(io.get_executor(), cfg);
    int status = 1;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await redis.connect();
          auto lock = redis.get_lock("rlock-example:nightly-report");
          const auto renewals_before = redis.stats().renewal_calls;
          const int steps = co_await rlock::with_lock(lock, [] { return job(25); });
          std::cout << "job 1 finished " << steps << " steps (2.5 s, 2.5 leases); renewals: "
                    << redis.stats().renewal_calls - renewals_before << '\n';

          // Job 2: an operator force-unlocks the lock half a second in.
          auto operator_handle = redis.get_lock("rlock-example:nightly-report");
          asio::steady_timer later(io, 500ms);
          later.async_wait([&](boost::system::error_code) {
            asio::co_spawn(io, operator_handle.force_unlock(), asio::detached);
          });
          try {
            co_await rlock::with_lock(lock, [] { return job(50); });
            std::cout << "job 2 finished: the loss went unnoticed\n";
          } catch (const boost::system::system_error& e) {
            if (e.code() == rlock::errc::lock_lost) {
              std::cout << "job 2 aborted: " << e.what() << '\n';
              status = 0;
            }
          }
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
