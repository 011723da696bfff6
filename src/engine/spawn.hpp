#pragma once

// The library's own coroutines (connect, close, a multi-lock's rounds, a semaphore's holds)
// return their failure as a value, never throw it; spawn() runs one and completes an internal
// handler with what it returned.
#include "rlock/detail/completion.hpp"
#include "rlock/detail/failure.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>

#include <exception>
#include <tuple>
#include <utility>

namespace rlock::detail {

/// What co_spawn completes: `h`, converted by `f`, with `h`'s executor (default `ex`) and
/// cancellation slot, so that it completes there and connects the coroutine's cancellation to
/// that slot, as it would for `h` itself.
template <typename Handler, typename Function>
auto bound_as(Handler h, const boost::asio::any_io_executor& ex, Function f) {
  namespace asio = boost::asio;
  auto slot = asio::get_associated_cancellation_slot(h);
  auto handler_ex = asio::get_associated_executor(h, ex);
  return asio::bind_cancellation_slot(
      slot,
      asio::bind_executor(handler_ex, [h = std::move(h), f = std::move(f)](auto&&... args) mutable {
        f(std::move(h), std::forward<decltype(args)>(args)...);
      }));
}

/// Runs `body` on `ex` and completes `h` with the failure it returns.
inline void spawn(const boost::asio::any_io_executor& ex, boost::asio::awaitable<failure> body,
                  handler<> h) {
  auto completion = bound_as(std::move(h), ex, [](handler<> done, std::exception_ptr e, failure f) {
    std::move(done)(e ? failure_of_exception(e) : std::move(f));
  });
  boost::asio::co_spawn(ex, std::move(body), std::move(completion));
}

/// Runs `body` on `ex` and completes `h` with the failure and the result it returns.
template <typename Result>
void spawn(const boost::asio::any_io_executor& ex,
           boost::asio::awaitable<std::pair<failure, Result>> body, handler<Result> h) {
  auto completion =
      bound_as(std::move(h), ex,
               [](handler<Result> done, std::exception_ptr e, std::pair<failure, Result> outcome) {
                 if (e) outcome.first = failure_of_exception(e);
                 std::move(done)(std::move(outcome.first), std::move(outcome.second));
               });
  boost::asio::co_spawn(ex, std::move(body), std::move(completion));
}

}  // namespace rlock::detail
