#pragma once

#include "rlock/basic_owned_lock.hpp"
#include "rlock/export.hpp"

#include <cstdint>
#include <memory>
#include <string_view>

namespace rlock {

/// A Redisson-compatible non-reentrant lock (Redisson's RNonReentrantLock, 4.4.0): the hash,
/// lease, watchdog, unlock and channel of reentrant_lock, but an acquisition by the owner that
/// already holds it fails at once with errc::reentry_refused (Redisson's
/// `NON_REENTRANT_REACQUIRE`, whose text comes with it) instead of counting a second hold. Use it
/// where a second acquisition by the same owner is a bug to report, not a nesting to allow: it
/// would otherwise pass silently, and with a wait it would wait for itself.
///
/// Everything else is basic_owned_lock's and lock_handle's (forms, bounds, cancellation, holds,
/// with_lock, the blocking facade). Get one from client::get_non_reentrant_lock().
class RLOCK_EXPORT non_reentrant_lock : public basic_owned_lock<non_reentrant_lock> {
 public:
  /// A new owner of `name` on `c`: client::get<non_reentrant_lock>(name).
  non_reentrant_lock(client& c, std::string_view name);
  /// The owner `owner_id` of `name` on `c` (handles of one owner share its holds):
  /// client::get<non_reentrant_lock>(name, owner_id).
  non_reentrant_lock(client& c, std::string_view name, std::uint64_t owner_id);

 private:
  friend class client;
  friend class basic_owned_lock<non_reentrant_lock>;
  friend class basic_hold<non_reentrant_lock>;
  explicit non_reentrant_lock(std::shared_ptr<detail::lock_state> state) noexcept
      : basic_owned_lock(std::move(state)) {}
};

}  // namespace rlock
