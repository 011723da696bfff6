#pragma once

#include "rlock/basic_owned_lock.hpp"
#include "rlock/export.hpp"

#include <cstdint>
#include <memory>
#include <string_view>

namespace rlock {

/// A Redisson-compatible reentrant distributed lock (Redisson's RLock) seen by one owner.
///
/// **Ownership.** A handle is one owner: the Redis hash field `<client-uuid>:<owner-id>`.
/// Locking through the same handle again re-enters (the hold count goes up); unlocking works from
/// any coroutine or thread that has the handle. Two handles from `client::get_lock(name)` are two
/// owners and exclude each other, also inside one process. Redisson keys ownership by thread id
/// instead; a coroutine moves between threads and one thread runs many coroutines, so the handle
/// (a value a task holds and passes along) is the owner that fits coroutine code. Copies of a
/// handle are the same owner.
///
/// **Leases.** With an explicit lease the key expires after it unless unlocked; nothing renews
/// it. Without one the lease is `config::watchdog_timeout` and the client's watchdog renews it
/// every third of that until the final unlock; if a renewal finds the lock gone, `lost()`
/// completes.
///
/// **Forms and execution** are lock_handle's: an awaitable and an `async_*` form of every
/// operation, run on the client's executor. The release, force_unlock, the queries and lost()
/// are lock_handle's too; the acquisitions (lock, try_lock, scoped, try_scoped) are
/// basic_owned_lock's, shared with the other exclusive kinds.
class RLOCK_EXPORT reentrant_lock : public basic_owned_lock<reentrant_lock> {
 public:
  /// A new owner of `name` on `c`: client::get<reentrant_lock>(name).
  reentrant_lock(client& c, std::string_view name);
  /// The owner `owner_id` of `name` on `c` (handles of one owner share its holds):
  /// client::get<reentrant_lock>(name, owner_id).
  reentrant_lock(client& c, std::string_view name, std::uint64_t owner_id);

 private:
  friend class client;
  friend class basic_owned_lock<reentrant_lock>;
  friend class basic_hold<reentrant_lock>;
  explicit reentrant_lock(std::shared_ptr<detail::lock_state> state) noexcept
      : basic_owned_lock(std::move(state)) {}
};

}  // namespace rlock
