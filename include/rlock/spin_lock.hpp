#pragma once

#include "rlock/basic_owned_lock.hpp"
#include "rlock/export.hpp"

#include <cstdint>
#include <memory>
#include <string_view>

namespace rlock {

/// A Redisson-compatible spin lock (Redisson's RSpinLock), for deployments where pub/sub is not
/// available (a proxy that does not pass it, an ACL without channels): RLock's hash, acquire,
/// lease, watchdog and unlock latch, but **no channel**. A waiter polls with Redisson's
/// exponential backoff (config::spin_lock: from 1 ms, doubling plus a little jitter, at most
/// 128 ms), and a release publishes nothing: it wakes nobody, exactly as in Redisson. A
/// reentrant_lock waiter on the same name is therefore not woken by a spin release either; it
/// retries at the holder's TTL.
///
/// The cost is the polling: a waiter makes about log2(cap / initial) attempts in its first
/// `cap` and then one per `cap`, and gets the lock up to `cap` after it was released. Everything
/// else is basic_owned_lock's and lock_handle's. Get one from client::get_spin_lock().
class RLOCK_EXPORT spin_lock : public basic_owned_lock<spin_lock> {
 public:
  /// A new owner of `name` on `c`: client::get<spin_lock>(name).
  spin_lock(client& c, std::string_view name);
  /// The owner `owner_id` of `name` on `c` (handles of one owner share its holds):
  /// client::get<spin_lock>(name, owner_id).
  spin_lock(client& c, std::string_view name, std::uint64_t owner_id);

 private:
  friend class client;
  friend class basic_owned_lock<spin_lock>;
  friend class basic_hold<spin_lock>;
  explicit spin_lock(std::shared_ptr<detail::lock_state> state) noexcept
      : basic_owned_lock(std::move(state)) {}
};

}  // namespace rlock
