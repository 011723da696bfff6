#include "rlock/lock_handle.hpp"

#include "engine/engine_context.hpp"
#include "lock/lock_forms.hpp"
#include "lock/lock_kind.hpp"
#include "lock/lock_ops.hpp"
#include "lock/lock_state.hpp"
#include "resp3/request.hpp"
#include "rlock/error.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <array>

namespace rlock {

namespace asio = boost::asio;
using std::chrono::milliseconds;

lock_handle::lock_handle(std::shared_ptr<detail::lock_state> state) noexcept
    : state_(std::move(state)) {}

std::string_view lock_handle::name() const noexcept { return state_->name(); }
std::string_view lock_handle::key() const noexcept { return state_->key(); }
std::uint64_t lock_handle::owner_id() const noexcept { return state_->owner; }
lock_handle::executor_type lock_handle::get_executor() const noexcept {
  return state_->ctx->executor;
}
wake_reason lock_handle::last_wake() const noexcept {
  return static_cast<wake_reason>(state_->last_wake.load(std::memory_order_relaxed));
}
std::string_view lock_handle::owner_field() const noexcept { return state_->field(); }
std::string lock_handle::last_error() const { return state_->last_error(); }

void lock_handle::start_acquire(const lock_handle& l, std::optional<milliseconds> lease,
                                detail::handler<> h) {
  detail::async_lock(l.state_, lease, std::move(h));
}
void lock_handle::start_try_acquire(const lock_handle& l, milliseconds wait,
                                    std::optional<milliseconds> lease, detail::handler<bool> h) {
  detail::async_acquire(l.state_, wait, lease, std::move(h));
}

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
asio::awaitable<std::int64_t> hold_count_op(std::shared_ptr<detail::lock_state> s) {
  co_await asio::this_coro::throw_if_cancelled(false);
  if (s->kind.count_question != nullptr) {
    auto question = s->kind.count_question(s->identity());
    co_return s->kind.count_of(co_await detail::run(s, std::move(question), "hold count"));
  }
  co_return as_integer(co_await query(s, "HGET", true));
}
asio::awaitable<bool> held_op(std::shared_ptr<detail::lock_state> s) {
  co_await asio::this_coro::throw_if_cancelled(false);
  if (s->kind.count_question != nullptr) co_return co_await hold_count_op(std::move(s)) > 0;
  co_return as_integer(co_await query(s, "HEXISTS", true)) == 1;
}
asio::awaitable<milliseconds> ttl_op(std::shared_ptr<detail::lock_state> s) {
  co_await asio::this_coro::throw_if_cancelled(false);
  co_return milliseconds(as_integer(co_await query(s, "PTTL", false)));
}
asio::awaitable<bool> force_unlock_op(std::shared_ptr<detail::lock_state> s) {
  co_await asio::this_coro::throw_if_cancelled(false);
  std::string unlock_to;
  s->kind.channel(s->key(), unlock_to);
  detail::release_script_call call;
  s->kind.force_call(s->identity(), unlock_to, s->ctx->session.publish_command(), call);
  if (s->local_holds > 0) s->reset(false);
  const auto reply = co_await detail::run_script(s, call, "force_unlock");
  s->server_holds = 0;  // deleted, or was not there
  co_return as_integer(reply) == 1;
}

}  // namespace

void lock_handle::start_unlock(detail::handler<> h) const {
  detail::async_release(state_, std::move(h));
}
void lock_handle::start_force_unlock(detail::handler<bool> h) const {
  run_query(state_, &force_unlock_op, std::move(h));
}
void lock_handle::start_is_locked(detail::handler<bool> h) const {
  run_query(state_, &exists_op, std::move(h));
}
void lock_handle::start_is_held(detail::handler<bool> h) const {
  run_query(state_, &held_op, std::move(h));
}
void lock_handle::start_hold_count(detail::handler<std::int64_t> h) const {
  run_query(state_, &hold_count_op, std::move(h));
}
void lock_handle::start_remaining_ttl(detail::handler<milliseconds> h) const {
  run_query(state_, &ttl_op, std::move(h));
}
void lock_handle::start_lost(detail::handler<> h) const {
  detail::async_lost(state_, std::move(h));
}

asio::awaitable<void> lock_handle::unlock() {
  return awaitable_of<>(
      *this, [](const lock_handle& l, detail::handler<> h) { l.start_unlock(std::move(h)); });
}
asio::awaitable<bool> lock_handle::force_unlock() {
  return awaitable_of<bool>(*this, [](const lock_handle& l, detail::handler<bool> h) {
    l.start_force_unlock(std::move(h));
  });
}
asio::awaitable<bool> lock_handle::is_locked() {
  return awaitable_of<bool>(*this, [](const lock_handle& l, detail::handler<bool> h) {
    l.start_is_locked(std::move(h));
  });
}
asio::awaitable<bool> lock_handle::is_held() {
  return awaitable_of<bool>(
      *this, [](const lock_handle& l, detail::handler<bool> h) { l.start_is_held(std::move(h)); });
}
asio::awaitable<std::int64_t> lock_handle::hold_count() {
  return awaitable_of<std::int64_t>(*this,
                                    [](const lock_handle& l, detail::handler<std::int64_t> h) {
                                      l.start_hold_count(std::move(h));
                                    });
}
asio::awaitable<milliseconds> lock_handle::remaining_ttl() {
  return awaitable_of<milliseconds>(*this,
                                    [](const lock_handle& l, detail::handler<milliseconds> h) {
                                      l.start_remaining_ttl(std::move(h));
                                    });
}
asio::awaitable<void> lock_handle::lost() {
  return awaitable_of<>(
      *this, [](const lock_handle& l, detail::handler<> h) { l.start_lost(std::move(h)); });
}

}  // namespace rlock
