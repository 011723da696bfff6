#pragma once

// What a lock's keys on the server say, as data: its kind, holders, queue and permits. Filled
// by rlock::inspect (<rlock/inspect.hpp>) and, per kind, by that kind's reading of its own keys.
#include "rlock/export.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlock {

/// What a key holds, as far as the server can tell. Some kinds look alike on the server: a fair
/// lock without waiters has a reentrant lock's hash, and a count-down latch without waiters has
/// a semaphore's counter; those read as the plainer kind.
enum class key_kind {
  absent,            ///< no key: a free lock of any kind (a zero latch, which Redisson deletes)
  reentrant,         ///< a lock's hash (RLock; also rlock's spin and non-reentrant locks)
  fair,              ///< a lock's hash with a waiter queue (RFairLock)
  fenced,            ///< a lock's hash with a token counter (RFencedLock)
  read_write,        ///< a hash with a `mode` field (RReadWriteLock)
  semaphore,         ///< an integer counter (RSemaphore, RPermitExpirableSemaphore)
  count_down_latch,  ///< an integer counter with waiters on the latch channel (RCountDownLatch)
  other,             ///< anything else: not a lock
};

/// "absent", "reentrant", "fair", "fenced", "read-write", "semaphore", "count-down-latch",
/// "other".
RLOCK_EXPORT std::string_view to_string(key_kind k) noexcept;

/// Which half of a lock an owner holds.
enum class hold_role {
  exclusive,  ///< every kind but the read-write lock
  read,       ///< a read-write lock's read half
  write,      ///< a read-write lock's write half
};

/// One owner as the lock's hash records it.
struct lock_holder {
  /// `<client uuid>:<owner id>`, the same field in Redisson as in rlock.
  std::string owner;
  /// Its hold count (reentrant holds).
  std::int64_t count = 0;
  /// Which half it holds.
  hold_role role = hold_role::exclusive;
  /// Field by field.
  friend bool operator==(const lock_holder&, const lock_holder&) = default;
};

/// A fair lock's waiter, as its queue and deadlines record it.
struct queued_waiter {
  /// Its owner field, `<client uuid>:<owner id>`.
  std::string owner;
  /// Until the server drops it unless it comes back (server clock; negative: overdue); none
  /// when the deadline or the server's clock reads as no time (beyond 2^53 ms, inf).
  std::optional<std::chrono::milliseconds> deadline_in;
  /// An rlock waiter registered for the handoff by push.
  bool by_push = false;
  /// Field by field.
  friend bool operator==(const queued_waiter&, const queued_waiter&) = default;
};

/// A semaphore hold (`{<key>}:timeout`, rlock's and RPermitExpirableSemaphore's).
struct permit_hold {
  /// The permit id as Redisson shows it (32 lowercase hex digits), or the member as stored.
  std::string id;
  /// How many permits it holds.
  std::int64_t permits = 1;
  /// Until it expires (server clock; negative: overdue); none when unknown, never, or no time
  /// (beyond 2^53 ms, -inf).
  std::optional<std::chrono::milliseconds> expires_in;
  /// A Redisson permit taken without a lease.
  bool never_expires = false;
  /// Field by field.
  friend bool operator==(const permit_hold&, const permit_hold&) = default;
};

/// A lock's state as its keys on the server record it, at one instant (all of its keys share
/// its Cluster slot and are read in one pipeline).
struct lock_info {
  /// The name asked for.
  std::string name;
  /// Its key (with config::key_prefix).
  std::string key;
  /// What the key holds.
  key_kind kind = key_kind::absent;
  /// kind == other: what the key is (Redis's TYPE, or "hash" for a hash that is no lock's).
  std::string key_type;

  /// The owners (a lock's hash). A read-write lock lists each owner's halves apart.
  std::vector<lock_holder> holders;
  /// A read-write lock's mode: read or write.
  std::optional<hold_role> mode;
  /// While held: what the key has left. None when free, or when the key never expires (a lock
  /// taken by something else than rlock or Redisson).
  std::optional<std::chrono::milliseconds> ttl;
  /// A fenced lock's last token handed out (`redisson_lock_token:{<key>}`).
  std::optional<std::int64_t> token;
  /// A fair lock's queue, head first.
  std::vector<queued_waiter> queue;
  /// A read-write lock's waiting rlock writers (rw_priority::writers), in the order a free lock
  /// goes to them (`{<key>}:rlock_writer_queue`; then marks without a place, of an older rlock):
  /// each owner, and in `deadline_in` when its mark lapses unless it comes back (negative: lapsed,
  /// passed over at the next writer's attempt). While any mark lives, rlock's readers that do
  /// not already read wait.
  std::vector<queued_waiter> writers;

  /// A semaphore's permits available now.
  std::optional<std::int64_t> available;
  /// A semaphore's total, when rlock set it.
  std::optional<std::int64_t> total;
  /// A semaphore's holds.
  std::vector<permit_hold> permits;
  /// A count-down latch's count.
  std::optional<std::int64_t> count;

  /// Connections subscribed to the kind's channel: waiters of rlock or Redisson, and watchers.
  std::optional<std::int64_t> subscribers;
  /// The channel the kind's waiters listen on (a hash lock's unlock channel when absent).
  std::string channel;
  /// The fair queue's key (`redisson_lock_queue:{<key>}`) of a hash lock of any kind, held or
  /// free: a lock becomes fair when a fair waiter queues. Empty for other keys (a counter, text).
  std::string queue_key;

  /// Somebody holds it: an owner in the hash, or a permit out.
  bool held() const noexcept { return !holders.empty() || !permits.empty(); }
};

}  // namespace rlock
