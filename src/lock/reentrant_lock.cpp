#include "rlock/reentrant_lock.hpp"

#include "client_impl.hpp"
#include "lock/lock_forms.hpp"
#include "lock/lock_ops.hpp"
#include "lock/lock_state.hpp"
#include "resp3/request.hpp"
#include "rlock/error.hpp"
#include "rlock/hold.hpp"

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <array>
#include <charconv>

namespace rlock {

namespace asio = boost::asio;
using std::chrono::milliseconds;

reentrant_lock::reentrant_lock(std::shared_ptr<detail::lock_state> state)
    : state_(std::move(state)) {}

std::string_view reentrant_lock::name() const noexcept { return state_->name(); }
const std::string& reentrant_lock::key() const noexcept { return state_->key; }
std::uint64_t reentrant_lock::owner_id() const noexcept { return state_->owner; }
reentrant_lock::executor_type reentrant_lock::get_executor() const noexcept {
  return state_->client->executor;
}
wake_reason reentrant_lock::last_wake() const noexcept {
  return state_->last_wake.load(std::memory_order_relaxed);
}
const std::string& reentrant_lock::owner_field() const noexcept { return state_->field; }
std::string reentrant_lock::last_error() const { return state_->last_error(); }

namespace {

using detail::as_integer;
using detail::awaitable_of;
using detail::query;
using detail::round_trip;
using detail::run_query;

asio::awaitable<bool> exists_op(std::shared_ptr<detail::lock_state> s) {
  co_await asio::this_coro::throw_if_cancelled(false);
  co_return as_integer(co_await query(s, "EXISTS", false)) == 1;
}
asio::awaitable<bool> held_op(std::shared_ptr<detail::lock_state> s) {
  co_await asio::this_coro::throw_if_cancelled(false);
  co_return as_integer(co_await query(s, "HEXISTS", true)) == 1;
}
asio::awaitable<std::int64_t> hold_count_op(std::shared_ptr<detail::lock_state> s) {
  co_await asio::this_coro::throw_if_cancelled(false);
  co_return as_integer(co_await query(s, "HGET", true));
}
asio::awaitable<milliseconds> ttl_op(std::shared_ptr<detail::lock_state> s) {
  co_await asio::this_coro::throw_if_cancelled(false);
  co_return milliseconds(as_integer(co_await query(s, "PTTL", false)));
}
asio::awaitable<bool> force_unlock_op(std::shared_ptr<detail::lock_state> s) {
  co_await asio::this_coro::throw_if_cancelled(false);
  const std::string unlock_to = s->channel();
  const std::array<std::string_view, 2> keys{s->key, unlock_to};
  const std::array<std::string_view, 2> args{"0", s->client->session.publish_command()};
  if (s->local_holds > 0) s->reset(false);
  auto [ec, reply] = co_await asio::async_initiate<const asio::use_awaitable_t<>&,
                                                   void(std::error_code, detail::resp3::value)>(
      [&](auto handler) {
        s->client->scripts.async_run(detail::script::force_unlock, keys, args, round_trip(*s),
                                     std::move(handler));
      },
      asio::use_awaitable);
  if (ec) std::rethrow_exception(detail::failure_of(*s->client, ec, reply, "force_unlock"));
  s->server_holds = 0;  // deleted, or was not there
  co_return as_integer(reply) == 1;
}

}  // namespace

void reentrant_lock::start_lock(std::optional<milliseconds> lease, detail::handler<> h) const {
  detail::async_lock(state_, lease, std::move(h));
}
void reentrant_lock::start_try_lock(milliseconds wait, std::optional<milliseconds> lease,
                                    detail::handler<bool> h) const {
  detail::async_acquire(state_, wait, lease, std::move(h));
}
void reentrant_lock::start_unlock(detail::handler<> h) const {
  detail::async_release(state_, std::move(h));
}
void reentrant_lock::start_force_unlock(detail::handler<bool> h) const {
  run_query(state_, &force_unlock_op, std::move(h));
}
void reentrant_lock::start_is_locked(detail::handler<bool> h) const {
  run_query(state_, &exists_op, std::move(h));
}
void reentrant_lock::start_is_held(detail::handler<bool> h) const {
  run_query(state_, &held_op, std::move(h));
}
void reentrant_lock::start_hold_count(detail::handler<std::int64_t> h) const {
  run_query(state_, &hold_count_op, std::move(h));
}
void reentrant_lock::start_remaining_ttl(detail::handler<milliseconds> h) const {
  run_query(state_, &ttl_op, std::move(h));
}
void reentrant_lock::start_lost(detail::handler<> h) const {
  detail::async_lost(state_, std::move(h));
}
void reentrant_lock::start_scoped(std::optional<milliseconds> wait,
                                  std::optional<milliseconds> lease,
                                  detail::handler<hold> h) const {
  // The acquisition's own completion, with the caller's cancellation slot and executor, makes
  // the hold: between the grant and the caller there is no moment when nobody owns it.
  auto slot = asio::get_associated_cancellation_slot(h);
  auto ex = asio::get_associated_executor(h, get_executor());
  auto bind = [&](auto f) {
    return asio::bind_cancellation_slot(slot, asio::bind_executor(ex, std::move(f)));
  };
  if (!wait) {
    start_lock(lease, bind([l = *this, h = std::move(h)](std::exception_ptr e) mutable {
                 std::move(h)(e, e ? hold() : hold(std::move(l)));
               }));
    return;
  }
  start_try_lock(*wait, lease,
                 bind([l = *this, h = std::move(h)](std::exception_ptr e, bool acquired) mutable {
                   std::move(h)(e, acquired && !e ? hold(std::move(l)) : hold());
                 }));
}

asio::awaitable<void> reentrant_lock::lock() {
  return awaitable_of<>(*this, [](const reentrant_lock& l, detail::handler<> h) {
    l.start_lock(std::nullopt, std::move(h));
  });
}
asio::awaitable<void> reentrant_lock::lock(milliseconds lease) {
  return awaitable_of<>(*this, [lease](const reentrant_lock& l, detail::handler<> h) {
    l.start_lock(lease, std::move(h));
  });
}
asio::awaitable<bool> reentrant_lock::try_lock() { return try_lock(milliseconds::zero()); }
asio::awaitable<bool> reentrant_lock::try_lock(milliseconds wait) {
  return awaitable_of<bool>(*this, [wait](const reentrant_lock& l, detail::handler<bool> h) {
    l.start_try_lock(wait, std::nullopt, std::move(h));
  });
}
asio::awaitable<bool> reentrant_lock::try_lock(milliseconds wait, milliseconds lease) {
  return awaitable_of<bool>(*this, [wait, lease](const reentrant_lock& l, detail::handler<bool> h) {
    l.start_try_lock(wait, lease, std::move(h));
  });
}
asio::awaitable<void> reentrant_lock::unlock() {
  return awaitable_of<>(
      *this, [](const reentrant_lock& l, detail::handler<> h) { l.start_unlock(std::move(h)); });
}
asio::awaitable<bool> reentrant_lock::force_unlock() {
  return awaitable_of<bool>(*this, [](const reentrant_lock& l, detail::handler<bool> h) {
    l.start_force_unlock(std::move(h));
  });
}
asio::awaitable<bool> reentrant_lock::is_locked() {
  return awaitable_of<bool>(*this, [](const reentrant_lock& l, detail::handler<bool> h) {
    l.start_is_locked(std::move(h));
  });
}
asio::awaitable<bool> reentrant_lock::is_held() {
  return awaitable_of<bool>(*this, [](const reentrant_lock& l, detail::handler<bool> h) {
    l.start_is_held(std::move(h));
  });
}
asio::awaitable<std::int64_t> reentrant_lock::hold_count() {
  return awaitable_of<std::int64_t>(*this,
                                    [](const reentrant_lock& l, detail::handler<std::int64_t> h) {
                                      l.start_hold_count(std::move(h));
                                    });
}
asio::awaitable<milliseconds> reentrant_lock::remaining_ttl() {
  return awaitable_of<milliseconds>(*this,
                                    [](const reentrant_lock& l, detail::handler<milliseconds> h) {
                                      l.start_remaining_ttl(std::move(h));
                                    });
}
asio::awaitable<hold> reentrant_lock::scoped() { return try_scoped_awaitable({}, {}); }
asio::awaitable<hold> reentrant_lock::scoped(milliseconds lease) {
  return try_scoped_awaitable({}, lease);
}
asio::awaitable<hold> reentrant_lock::try_scoped(milliseconds wait) {
  return try_scoped_awaitable(wait, {});
}
asio::awaitable<hold> reentrant_lock::try_scoped(milliseconds wait, milliseconds lease) {
  return try_scoped_awaitable(wait, lease);
}
asio::awaitable<hold> reentrant_lock::try_scoped_awaitable(std::optional<milliseconds> wait,
                                                           std::optional<milliseconds> lease) {
  return awaitable_of<hold>(*this, [wait, lease](const reentrant_lock& l, detail::handler<hold> h) {
    l.start_scoped(wait, lease, std::move(h));
  });
}

asio::awaitable<void> reentrant_lock::lost() {
  return awaitable_of<>(
      *this, [](const reentrant_lock& l, detail::handler<> h) { l.start_lost(std::move(h)); });
}

}  // namespace rlock
