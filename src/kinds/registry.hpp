#pragma once

// Every lock kind's descriptor, declared once and listed once: what the kinds' public forms,
// the tests and the client's settings check (registered_kinds) name. The engine names none of
// them; a new kind declares its descriptor here and adds it to registry.cpp's list.
#include "engine/lock_kind.hpp"

#include <span>
#include <string_view>

namespace rlock::detail {

/// Redisson's RLock: nil when acquired, the holder's PTTL when busy.
extern const lock_kind reentrant_kind;
/// Redisson's RFencedLock: {-1, token} when acquired, {pttl, -1} when busy; every acquisition
/// increments the token counter `redisson_lock_token:{<key>}`.
extern const lock_kind fenced_kind;
/// Redisson's RNonReentrantLock: RLock, except that a re-acquire by the holder is refused
/// (errc::reentry_refused) instead of counted.
extern const lock_kind non_reentrant_kind;
/// Redisson's RFairLock: FIFO across processes through a queue on the server, a channel per
/// waiter, and rlock's handoff by push (scripts.hpp, RLOCK_FAIR_LUA).
extern const lock_kind fair_kind;
/// Redisson's RNonReentrantFairLock: the fair lock refusing a re-acquire by its holder.
extern const lock_kind non_reentrant_fair_kind;
/// Redisson's RSpinLock: RLock's hash and acquire; releases publish nothing, waiters poll.
extern const lock_kind spin_kind;
/// Redisson's RReadWriteLock, its read half: shared by every reader while no other owner
/// writes; a hold timeout key per read hold (scripts.hpp, acquire_read).
extern const lock_kind read_kind;
/// Its write half: exclusive, field `<owner field>:write`; refuses an owner that reads
/// (errc::upgrade_refused).
extern const lock_kind write_kind;
/// The same halves under rw_priority::writers (rlock's default): a waiting writer marks the
/// lock (`{<key>}:rlock_writers`) and readers that do not read already wait behind it.
extern const lock_kind read_kind_writers_first;
extern const lock_kind write_kind_writers_first;
/// A hold of a semaphore's permits (Redisson's RSemaphore counter and channel, kept as a hold in
/// RPermitExpirableSemaphore's `{<key>}:timeout` zset): an owner per acquisition, with a lease
/// the watchdog renews; scripts.hpp, RLOCK_SEMAPHORE_LUA.
extern const lock_kind semaphore_kind;
/// Redisson's RCountDownLatch: an acquisition that takes no hold, waiting for the count to reach
/// zero (scripts.hpp, latch_*).
extern const lock_kind count_down_latch_kind;
/// rlock's leader election: the fenced lock, whose campaign also writes the leader record
/// `rlock_election:{<key>}` and publishes `elected`, and whose final release `resigned`
/// (scripts.hpp, election_*).
extern const lock_kind election_kind;
/// A semaphore's operation owned by nobody (scripts.hpp, semaphore_admin): `what` is
/// available, set, add, drain or release; `n` its count in decimal; `latch` names the request
/// (release); the state is any of the semaphore's (its key is the counter).
void semaphore_admin_call(const lock_identity& s, std::string_view what, std::string_view n,
                          std::string_view publish, std::string_view latch,
                          std::string_view latch_ttl, release_script_call& call);

/// Every descriptor above, each once: the client asks each for settings_error when it is made;
/// kind_rules_test checks each keeps the rules.
std::span<const lock_kind* const> registered_kinds() noexcept;

}  // namespace rlock::detail
