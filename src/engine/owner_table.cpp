#include "engine/owner_table.hpp"

#include "engine/lock_state.hpp"
#include "rlock/error.hpp"

#include <fmt/format.h>

namespace rlock::detail {

namespace {

/// Any non-empty byte string names a lock; an empty one is a programming error.
void validate_name(std::string_view name) {
  if (name.empty()) throw_error(errc::invalid_argument, "lock name must not be empty");
}

std::string state_key(std::string_view name, std::uint64_t owner, const lock_kind& kind) {
  // A fenced and a reentrant handle of one owner and name are two states: their acquisitions
  // differ (tokens), their holds on the server are one hash field.
  return fmt::format("{}:{}:{}", kind.name, owner, name);
}

}  // namespace

std::uint64_t next_owner_id() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

std::shared_ptr<lock_state> owner_table::state_for(const std::shared_ptr<engine_context>& ctx,
                                                   std::string_view name, std::uint64_t owner,
                                                   const lock_kind& kind) {
  validate_name(name);
  const std::string k = state_key(name, owner, kind);
  std::lock_guard guard(mutex_);
  auto& slot = states_[k];
  if (auto existing = slot.lock()) return existing;
  auto state = std::make_shared<lock_state>(ctx, name, owner, kind, true);
  slot = state;
  return state;
}

std::shared_ptr<lock_state> owner_table::new_owner(const std::shared_ptr<engine_context>& ctx,
                                                   std::string_view name, const lock_kind& kind,
                                                   std::optional<std::uint64_t> id) {
  validate_name(name);
  // A fresh id nobody else can name: no entry in the table, which saves memory per lock.
  return std::make_shared<lock_state>(ctx, name, id ? *id : next_owner_id(), kind, false);
}

void owner_table::forget(const lock_state& s) {
  std::lock_guard guard(mutex_);
  auto it = states_.find(state_key(s.name(), s.owner, s.kind));
  // A new state for the same owner may already have replaced this one.
  if (it != states_.end() && it->second.expired()) states_.erase(it);
}

void owner_table::set_last_error(const lock_state* owner, std::string text) {
  // Every owner forgets its entry when it goes; without any failure that costs no lock.
  if (text.empty() && !any_last_error_.load(std::memory_order_acquire)) return;
  std::lock_guard guard(mutex_);
  if (text.empty()) {
    last_errors_.erase(owner);
  } else {
    last_errors_[owner] = std::move(text);
    any_last_error_.store(true, std::memory_order_release);
  }
}

std::string owner_table::last_error(const lock_state* owner) {
  std::lock_guard guard(mutex_);
  auto it = last_errors_.find(owner);
  return it == last_errors_.end() ? std::string{} : it->second;
}

}  // namespace rlock::detail
