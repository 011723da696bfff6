#include "rlock/reentrant_lock.hpp"

#include "lock/lock_forms.hpp"
#include "lock/lock_ops.hpp"
#include "lock/lock_state.hpp"

namespace rlock {

using detail::awaitable_of;
using std::chrono::milliseconds;

void reentrant_lock::start_lock(const lock_handle& l, std::optional<milliseconds> lease,
                                detail::handler<> h) {
  detail::async_lock(state_of(l), lease, std::move(h));
}
void reentrant_lock::start_try_lock(const lock_handle& l, milliseconds wait,
                                    std::optional<milliseconds> lease, detail::handler<bool> h) {
  detail::async_acquire(state_of(l), wait, lease, std::move(h));
}

boost::asio::awaitable<void> reentrant_lock::lock() {
  return awaitable_of<>(*this, [](const lock_handle& l, detail::handler<> h) {
    start_lock(l, std::nullopt, std::move(h));
  });
}
boost::asio::awaitable<void> reentrant_lock::lock(milliseconds lease) {
  return awaitable_of<>(*this, [lease](const lock_handle& l, detail::handler<> h) {
    start_lock(l, lease, std::move(h));
  });
}
boost::asio::awaitable<bool> reentrant_lock::try_lock() { return try_lock(milliseconds::zero()); }
boost::asio::awaitable<bool> reentrant_lock::try_lock(milliseconds wait) {
  return awaitable_of<bool>(*this, [wait](const lock_handle& l, detail::handler<bool> h) {
    start_try_lock(l, wait, std::nullopt, std::move(h));
  });
}
boost::asio::awaitable<bool> reentrant_lock::try_lock(milliseconds wait, milliseconds lease) {
  return awaitable_of<bool>(*this, [wait, lease](const lock_handle& l, detail::handler<bool> h) {
    start_try_lock(l, wait, lease, std::move(h));
  });
}
boost::asio::awaitable<hold> reentrant_lock::scoped() { return scoped_awaitable({}, {}); }
boost::asio::awaitable<hold> reentrant_lock::scoped(milliseconds lease) {
  return scoped_awaitable({}, lease);
}
boost::asio::awaitable<hold> reentrant_lock::try_scoped(milliseconds wait) {
  return scoped_awaitable(wait, {});
}
boost::asio::awaitable<hold> reentrant_lock::try_scoped(milliseconds wait, milliseconds lease) {
  return scoped_awaitable(wait, lease);
}
boost::asio::awaitable<hold> reentrant_lock::scoped_awaitable(std::optional<milliseconds> wait,
                                                              std::optional<milliseconds> lease) {
  return awaitable_of<hold>(*this, [wait, lease](const lock_handle& l, detail::handler<hold> h) {
    hold::start_scoped(reentrant_lock(state_of(l)), wait, lease, std::move(h));
  });
}

}  // namespace rlock
