#include "rlock/fenced_lock.hpp"

#include "lock/lock_ops.hpp"
#include "lock/names.hpp"
#include "lock/round_trip.hpp"

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>

namespace rlock {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using token_result = std::optional<std::int64_t>;

std::int64_t fenced_lock::token() const noexcept {
  return state_of(*this)->token.load(std::memory_order_relaxed);
}

std::string fenced_lock::token_key() const { return detail::token_counter(state_of(*this)->key()); }

void fenced_lock::start_try_lock_token(const lock_handle& l, milliseconds wait,
                                       std::optional<milliseconds> lease,
                                       detail::handler<token_result> h) {
  detail::async_acquire_token(state_of(l), wait, lease, std::move(h));
}

void fenced_lock::start_lock_token(const lock_handle& l, std::optional<milliseconds> lease,
                                   detail::handler<std::int64_t> h) {
  // lock() is an acquisition without a bound: the token operation with no wait limit, its
  // optional always set on success. The caller's slot and executor go with the adapter.
  auto slot = asio::get_associated_cancellation_slot(h);
  auto ex = asio::get_associated_executor(h, l.get_executor());
  detail::async_acquire_token(
      state_of(l), std::nullopt, lease,
      asio::bind_cancellation_slot(
          slot, asio::bind_executor(
                    ex, [h = std::move(h)](detail::failure e, token_result token) mutable {
                      std::move(h)(std::move(e), token.value_or(0));
                    })));
}

void fenced_lock::start_current_token(const lock_handle& l, detail::handler<std::int64_t> h) {
  const auto& s = state_of(l);
  const std::string counter = detail::token_counter(s->key());
  const std::array<std::string_view, 1> key{counter};
  detail::run_command(s, detail::command(detail::command_kind::query, "GET", key), "GET token",
                      std::move(h), [](detail::lock_state&, const detail::resp3::value& reply) {
                        return detail::as_integer(reply);
                      });
}

asio::awaitable<std::int64_t> fenced_lock::lock() {
  return detail::awaitable_of<std::int64_t>(
      *this, [](const lock_handle& l, detail::handler<std::int64_t> h) {
        start_lock_token(l, std::nullopt, std::move(h));
      });
}
asio::awaitable<std::int64_t> fenced_lock::lock(milliseconds lease) {
  return detail::awaitable_of<std::int64_t>(
      *this, [lease](const lock_handle& l, detail::handler<std::int64_t> h) {
        start_lock_token(l, lease, std::move(h));
      });
}
asio::awaitable<token_result> fenced_lock::try_lock() { return try_lock(milliseconds::zero()); }
asio::awaitable<token_result> fenced_lock::try_lock(milliseconds wait) {
  return detail::awaitable_of<token_result>(
      *this, [wait](const lock_handle& l, detail::handler<token_result> h) {
        start_try_lock_token(l, wait, std::nullopt, std::move(h));
      });
}
asio::awaitable<token_result> fenced_lock::try_lock(milliseconds wait, milliseconds lease) {
  return detail::awaitable_of<token_result>(
      *this, [wait, lease](const lock_handle& l, detail::handler<token_result> h) {
        start_try_lock_token(l, wait, lease, std::move(h));
      });
}
asio::awaitable<std::int64_t> fenced_lock::current_token() {
  return detail::awaitable_of<std::int64_t>(
      *this, [](const lock_handle& l, detail::handler<std::int64_t> h) {
        start_current_token(l, std::move(h));
      });
}

asio::awaitable<fenced_lock::hold_type> fenced_lock::scoped() { return scoped_awaitable({}, {}); }
asio::awaitable<fenced_lock::hold_type> fenced_lock::scoped(milliseconds lease) {
  return scoped_awaitable({}, lease);
}
asio::awaitable<fenced_lock::hold_type> fenced_lock::try_scoped(milliseconds wait) {
  return scoped_awaitable(wait, {});
}
asio::awaitable<fenced_lock::hold_type> fenced_lock::try_scoped(milliseconds wait,
                                                                milliseconds lease) {
  return scoped_awaitable(wait, lease);
}
asio::awaitable<fenced_lock::hold_type> fenced_lock::scoped_awaitable(
    std::optional<milliseconds> wait, std::optional<milliseconds> lease) {
  return detail::awaitable_of<hold_type>(
      *this, [wait, lease](const lock_handle& l, detail::handler<hold_type> h) {
        hold_type::start_scoped(fenced_lock(state_of(l)), wait, lease, std::move(h));
      });
}

}  // namespace rlock
