#pragma once

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace rlock::test {

/// Thrown by `run` after it has recorded a timeout failure, to end the test body: what follows a
/// coroutine that never finished would only report confusing follow-up failures.
struct run_timeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Runs the awaitable produced by `make()` on `ioc` and fails the current test (ADD_FAILURE, then
/// stops `ioc` and throws `run_timeout`) if it does not finish within `limit`. Rethrows an
/// exception thrown by the coroutine.
///
/// `run` returns as soon as the coroutine finishes, even if `ioc` still has work (e.g. a client's
/// background reader): `ioc` is stopped and restarted, so pending work resumes on the next `run`
/// or is destroyed with `ioc`. `make` (e.g. a lambda coroutine and its captures) lives until
/// `run` returns. The awaitable may return a value; it is discarded.
template <class Make>
void run(boost::asio::io_context& ioc, Make&& make,
         std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  if (ioc.stopped()) ioc.restart();

  // Shared with the handlers: after a timeout they stay queued in `ioc` and may still run on a
  // later `run` (or be destroyed with `ioc`) after this function has returned.
  struct state {
    explicit state(boost::asio::io_context& ctx) : timer(ctx) {}
    bool done = false;
    bool timed_out = false;
    std::exception_ptr error;
    boost::asio::steady_timer timer;
  };
  auto st = std::make_shared<state>(ioc);
  st->timer.expires_after(limit);
  st->timer.async_wait([st, &ioc](boost::system::error_code ec) {
    if (ec || st->done) return;
    st->timed_out = true;
    ioc.stop();
  });
  boost::asio::co_spawn(ioc, std::forward<Make>(make)(),
                        [st, &ioc](std::exception_ptr e, auto&&...) {
                          st->done = true;
                          st->error = std::move(e);
                          st->timer.cancel();
                          ioc.stop();
                        });
  ioc.run();
  ioc.restart();

  if (!st->done) {
    // The timer may not have fired if something else stopped `ioc`; either way the coroutine is
    // still suspended and the test cannot go on.
    const std::string what = st->timed_out ? "the coroutine did not finish within " +
                                                 std::to_string(limit.count()) + " ms"
                                           : "the io_context stopped before the coroutine finished";
    ADD_FAILURE() << "rlock::test::run: " << what;
    throw run_timeout("rlock::test::run: " + what);
  }
  if (st->error) std::rethrow_exception(st->error);
}

}  // namespace rlock::test

/// ASSERT_TRUE for coroutine bodies: gtest's ASSERT_* expand to `return`, which a coroutine
/// cannot use. Records a fatal-looking failure and leaves the coroutine.
#define RLOCK_CO_ASSERT(condition)                          \
  if (!(condition)) {                                       \
    ADD_FAILURE() << "RLOCK_CO_ASSERT failed: " #condition; \
    co_return;                                              \
  } else                                                    \
    (void)0
