// Cancelling a wait, the Asio way. A holder keeps the lock; a second owner races lock()
// against a 100 ms timer with the awaitable operator ||: the timer wins, the lock() is cancelled
// and leaves nothing behind (no hold, no waiter, no subscription). Then the same with an
// explicit cancellation_signal on the callback form.
// Usage: rlock_cancellation [redis-url]
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <iostream>
#include <rlock/rlock.hpp>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;

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
          auto holder = redis.get_lock("rlock-example:printer");
          co_await holder.lock();

          auto waiter = redis.get_lock("rlock-example:printer");
          asio::steady_timer patience(io, 100ms);
          auto waiting = waiter.lock();
          auto timing = patience.async_wait(asio::use_awaitable);
          auto race = std::move(waiting) || std::move(timing);  // named: g++ 12 and co_await
          const auto winner = co_await std::move(race);
          const auto after = redis.activity();
          std::cout << (winner.index() == 0 ? "got the lock" : "gave up after 100 ms")
                    << "; waiters left: " << after.waiters
                    << ", holds: " << co_await waiter.hold_count() << '\n';

          // The callback form with an explicit signal, emitted 50 ms later.
          asio::cancellation_signal stop;
          asio::steady_timer stop_at(io, 50ms);
          stop_at.async_wait(
              [&](boost::system::error_code) { stop.emit(asio::cancellation_type::terminal); });
          asio::steady_timer done(io, asio::steady_timer::time_point::max());
          boost::system::error_code result;
          waiter.async_lock(
              asio::bind_cancellation_slot(stop.slot(), [&](boost::system::error_code ec) {
                result = ec;
                done.cancel();
              }));
          boost::system::error_code ignored;
          co_await done.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
          std::cout << "callback form: " << result.message() << '\n';

          co_await holder.unlock();
          status =
              winner.index() == 1 && after.waiters == 0 && result == asio::error::operation_aborted
                  ? 0
                  : 1;
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
