#pragma once

#include "rlock/basic_owned_lock.hpp"
#include "rlock/export.hpp"

#include <cstdint>
#include <memory>
#include <string_view>

namespace rlock {

/// A Redisson-compatible fair lock (Redisson's RFairLock): waiters get the lock in the order
/// they asked for it, across processes and languages. The hash, lease, watchdog and unlock
/// latch are reentrant_lock's; beside them the server keeps the queue
/// `redisson_lock_queue:{<key>}` (owner fields, FIFO) and the deadlines
/// `redisson_lock_timeout:{<key>}`, and each waiter listens on its own channel
/// `redisson_lock__channel:{<key>}:<owner field>`: a release tells only the next waiter.
///
/// **Handoff by push** (config::fair_lock::handoff_by_push, on by default; rlock's, not
/// Redisson's). An rlock waiter registers in `rlock_fair_handoff:{<key>}`; a release that finds it
/// at the head of the queue makes it the holder inside the release script and tells it on its
/// channel, so the waiter holds the lock when the message arrives: one push, no acquire round
/// trip. The lock is then exactly what the waiter's own acquire would have made, so Redisson
/// clients on the same lock see a valid fair lock throughout; a Redisson waiter at the head gets
/// Redisson's message and acquires by itself. The waiter counts its lease from a point the server
/// had certainly passed before the release ran (docs/guide/kinds/fair.md).
///
/// **Leaving the queue.** A waiter that gives up (its wait ends, it is cancelled, it fails)
/// leaves the queue in the background, giving back a handoff made to it meanwhile; one that
/// dies is dropped once its deadline passes (config::fair_lock::wait_timeout after its expected
/// turn). A waiter that is alive moves its deadline on whenever it retries, so it is never
/// dropped.
///
/// try_lock() without a wait is one attempt that never joins the queue. Everything else is
/// basic_owned_lock's and lock_handle's. Get one from client::get_fair_lock().
class RLOCK_EXPORT fair_lock : public basic_owned_lock<fair_lock> {
 public:
  /// A new owner of `name` on `c`: client::get<fair_lock>(name).
  fair_lock(client& c, std::string_view name);
  /// The owner `owner_id` of `name` on `c` (handles of one owner share its holds):
  /// client::get<fair_lock>(name, owner_id).
  fair_lock(client& c, std::string_view name, std::uint64_t owner_id);

 private:
  friend class client;
  friend class basic_owned_lock<fair_lock>;
  friend class basic_hold<fair_lock>;
  explicit fair_lock(std::shared_ptr<detail::lock_state> state) noexcept
      : basic_owned_lock(std::move(state)) {}
};

/// Redisson's RNonReentrantFairLock (4.4.0): the fair lock, except that an acquisition by the
/// owner that already holds it fails at once with errc::reentry_refused. Get one from
/// client::get_non_reentrant_fair_lock().
class RLOCK_EXPORT non_reentrant_fair_lock : public basic_owned_lock<non_reentrant_fair_lock> {
 public:
  /// A new owner of `name` on `c`: client::get<non_reentrant_fair_lock>(name).
  non_reentrant_fair_lock(client& c, std::string_view name);
  /// The owner `owner_id` of `name` on `c` (handles of one owner share its holds):
  /// client::get<non_reentrant_fair_lock>(name, owner_id).
  non_reentrant_fair_lock(client& c, std::string_view name, std::uint64_t owner_id);

 private:
  friend class client;
  friend class basic_owned_lock<non_reentrant_fair_lock>;
  friend class basic_hold<non_reentrant_fair_lock>;
  explicit non_reentrant_fair_lock(std::shared_ptr<detail::lock_state> state) noexcept
      : basic_owned_lock(std::move(state)) {}
};

}  // namespace rlock
