#include "rlock/lock_handle.hpp"

#include "engine/engine_context.hpp"
#include "engine/lock_kind.hpp"
#include "engine/lock_state.hpp"
#include "engine/operations.hpp"
#include "engine/round_trip.hpp"
#include "names/names.hpp"
#include "resp3/request.hpp"
#include "rlock/error.hpp"

#include <array>
#include <optional>
#include <span>
#include <string_view>

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
                                    std::optional<milliseconds> lease, detail::handler<bool> h,
                                    bool batched) {
  detail::async_acquire(l.state_, wait, lease, std::move(h), batched);
}

namespace {

using detail::as_integer;
using detail::awaitable_of;
using detail::command;
using detail::command_kind;
using detail::lock_state;

/// A query of the lock key (`name key [field]`).
command query(const lock_state& s, std::string_view name, bool with_field) {
  const std::array<std::string_view, 1> key{s.key()};
  const std::array<std::string_view, 1> field{s.field()};
  return command(
      command_kind::query, name, key,
      with_field ? std::span<const std::string_view>(field) : std::span<const std::string_view>());
}

/// The owner's hold count: the kind's own question (a semaphore's holds), else `HGET`.
command count_question(const lock_state& s) {
  return s.kind.count_question != nullptr ? s.kind.count_question(s.identity())
                                          : query(s, "HGET", true);
}
std::optional<std::int64_t> count_of(const lock_state& s, const detail::resp3::value& reply) {
  if (s.kind.count_question != nullptr) return s.kind.count_of(reply);
  return as_integer(reply);
}

}  // namespace

void lock_handle::start_unlock(detail::handler<> h, bool batched) const {
  detail::async_release(state_, std::move(h), batched);
}
void lock_handle::start_force_unlock(detail::handler<bool> h) const {
  // The call keeps views into the channel's and the latch's names, which live in the closure
  // until it is answered (a retry sends the same request id: latched, it deletes once).
  auto make = [unlock_to = std::string(), latch = std::string()](
                  lock_state& s, detail::release_script_call& call) mutable {
    s.kind.channel(s.key(), unlock_to);
    s.kind.force_call(s.identity(), detail::latched_release_inputs(s, unlock_to, latch), call);
    call.latch = latch;
    if (s.local_holds > 0) s.reset(false);
    return detail::failure();
  };
  detail::run_script(state_, make, "force_unlock", std::move(h),
                     [](lock_state& s, const detail::resp3::value& reply) -> std::optional<bool> {
                       s.server_holds = 0;  // deleted, or was not there
                       if (auto n = as_integer(reply)) return *n == 1;
                       return std::nullopt;
                     });
}
void lock_handle::start_is_locked(detail::handler<bool> h) const {
  detail::run_command(state_, query(*state_, "EXISTS", false), "EXISTS", std::move(h),
                      [](lock_state&, const detail::resp3::value& reply) -> std::optional<bool> {
                        if (auto n = as_integer(reply)) return *n == 1;
                        return std::nullopt;
                      });
}
void lock_handle::start_is_held(detail::handler<bool> h) const {
  if (state_->kind.count_question != nullptr) {
    detail::run_command(
        state_, count_question(*state_), "hold count", std::move(h),
        [](lock_state& s, const detail::resp3::value& reply) -> std::optional<bool> {
          if (auto n = count_of(s, reply)) return *n > 0;
          return std::nullopt;
        });
    return;
  }
  detail::run_command(state_, query(*state_, "HEXISTS", true), "HEXISTS", std::move(h),
                      [](lock_state&, const detail::resp3::value& reply) -> std::optional<bool> {
                        if (auto n = as_integer(reply)) return *n == 1;
                        return std::nullopt;
                      });
}
void lock_handle::start_hold_count(detail::handler<std::int64_t> h) const {
  detail::run_command(
      state_, count_question(*state_), "hold count", std::move(h),
      [](lock_state& s, const detail::resp3::value& reply) { return count_of(s, reply); });
}
void lock_handle::start_remaining_ttl(detail::handler<milliseconds> h) const {
  detail::run_command(
      state_, query(*state_, "PTTL", false), "PTTL", std::move(h),
      [](lock_state&, const detail::resp3::value& reply) -> std::optional<milliseconds> {
        if (auto n = as_integer(reply)) return milliseconds(*n);
        return std::nullopt;
      });
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
