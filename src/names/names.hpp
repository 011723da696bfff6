#pragma once

#include <string>
#include <string_view>

namespace rlock::detail {

/// Redisson's names around a lock key. Each puts the key in braces (a Cluster hash tag, so the
/// name lands in the key's slot) unless the key already contains '{' and carries its own tag.

/// The unlock channel: `redisson_lock__channel:{<key>}`.
std::string unlock_channel(std::string_view key);
/// Appends it to `out` (an unlock builds its channel and latch in one buffer).
void append_unlock_channel(std::string_view key, std::string& out);

/// The unlock latch (3.24.1+): `redisson_unlock_latch:{<key>}:<request id>`. It keeps a
/// release's first answer, so a retried release returns it. With an empty id: the prefix, with
/// room for a 32-digit id appended in place.
std::string unlock_latch(std::string_view key, std::string_view request_id);
/// Appends the latch's prefix, `redisson_unlock_latch:{<key>}:`, to `out`.
void append_unlock_latch(std::string_view key, std::string& out);

/// The fenced lock's token counter (RFencedLock): `redisson_lock_token:{<key>}`, an integer with
/// no TTL, incremented by every successful acquisition.
std::string token_counter(std::string_view key);

/// Appends `<prefix>{<key>}` to `out` (no braces if the key has its own tag): the fair lock's
/// queue (`redisson_lock_queue:`), timeouts (`redisson_lock_timeout:`) and rlock's handoff
/// registrations (`rlock_fair_handoff:`).
void append_tagged_name(std::string_view prefix, std::string_view key, std::string& out);
inline constexpr std::string_view fair_queue_prefix = "redisson_lock_queue:";
inline constexpr std::string_view fair_timeout_prefix = "redisson_lock_timeout:";
inline constexpr std::string_view fair_handoff_prefix = "rlock_fair_handoff:";
/// An election's leader record (a hash: owner, term, value, since, seq) and the channel its
/// changes are published on, `rlock_election:{<key>}` and `rlock_election_channel:{<key>}`.
inline constexpr std::string_view election_record_prefix = "rlock_election:";
inline constexpr std::string_view election_channel_prefix = "rlock_election_channel:";
/// The counter a fenced quorum lock raises on each node, `rlock_quorum_token:{<key>}` (a
/// quorum-backed election's terms).
inline constexpr std::string_view quorum_token_prefix = "rlock_quorum_token:";

/// The semaphore's holds, `{<key>}:timeout` (RPermitExpirableSemaphore's zset: member the permit
/// id, score its expiry), appended to `out`.
void append_semaphore_holds(std::string_view key, std::string& out);
/// The semaphore's channel, `redisson_sc:{<key>}` (its releases publish the new count).
void append_semaphore_channel(std::string_view key, std::string& out);
inline constexpr std::string_view semaphore_sizes_prefix = "rlock_semaphore_permits:";
inline constexpr std::string_view semaphore_total_prefix = "rlock_semaphore_total:";

/// The read-write lock's channel, `redisson_rwlock:{<key>}`, appended to `out` (both halves
/// publish on it: "0" after the last read hold, "1" after a write).
void append_rwlock_channel(std::string_view key, std::string& out);
/// The count-down latch's channel, `redisson_countdownlatch__channel__{<key>}` (braces always, as
/// Redisson names it: "0" when the count reaches zero, "1" on a new count), appended to `out`.
void append_latch_channel(std::string_view key, std::string& out);
/// The read-write lock's write field: `<owner field>:write` (the read field is the owner's).
inline constexpr std::string_view write_field_suffix = ":write";
/// Appends the prefix of an owner's read hold timeouts, `{<key>}:<field>:rwlock_timeout` (hold n
/// is `<prefix>:<n>`); with an empty field, the base `{<key>}` every owner's starts with.
void append_read_timeouts(std::string_view key, std::string_view field, std::string& out);
/// Appends the waiting writers' marks of a read-write lock, `{<key>}:rlock_writers` (rlock's,
/// in the lock's slot; rw_priority::writers).
void append_writer_marks(std::string_view key, std::string& out);
/// Appends the waiting writers' queue of a read-write lock, `{<key>}:rlock_writer_queue`
/// (rlock's, in the lock's slot; rw_priority::writers): the order writers take it in.
void append_writer_queue(std::string_view key, std::string& out);

}  // namespace rlock::detail
