#pragma once

// How the library's own coroutines (a multi-lock's, a quorum lock's) read their caller's
// cancellation: as a value they decide on, never as an exception thrown at their next co_await.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/this_coro.hpp>

namespace rlock::detail {

/// Whether the caller cancelled: checked before each step, whose own operation would not see a
/// cancellation emitted before it began.
inline boost::asio::awaitable<bool> caller_cancelled() {
  const auto state = co_await boost::asio::this_coro::cancellation_state;
  co_return state.cancelled() != boost::asio::cancellation_type::none;
}

/// Every kind of cancellation the caller's slot carries reaches the coroutine (co_spawn lets
/// terminal only through), and none is thrown: the coroutine decides what one means. One
/// already requested is kept.
inline boost::asio::awaitable<void> let_every_cancellation_in() {
  namespace asio = boost::asio;
  // Named, not a co_await inside a condition (g++ 12, UBSan: an illegal instruction there).
  const bool already = co_await caller_cancelled();
  if (!already) {
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  }
  co_await asio::this_coro::throw_if_cancelled(false);
  co_return;
}

}  // namespace rlock::detail
