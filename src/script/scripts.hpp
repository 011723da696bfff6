#pragma once

// All Lua rlock sends, in one place. The lock scripts are Redisson's own, byte for byte in
// meaning, so that a Java service using Redisson and a C++ service using rlock share one lock.

#include "session/command.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rlock::detail {

enum class script : std::uint8_t {
  acquire,
  release,
  renew,
  force_unlock,
  acquire_fenced,
  transfer,
};
inline constexpr std::size_t script_count = 6;

/// What running a script means, for the registry's policies (it knows no lock semantics): the
/// command kind (what a lost answer becomes, command.hpp) and whether it changes a lock (then
/// followed by `WAIT` under config::sync_replicas).
struct script_effect {
  command_kind kind;
  bool changes_lock;
};

/// The effect of each script, indexed by `script`.
inline constexpr std::array<script_effect, script_count> script_effects{{
    {command_kind::acquire, true},         // acquire
    {command_kind::release, true},         // release
    {command_kind::renew, true},           // renew
    {command_kind::force_release, false},  // force_unlock: nobody's lease to protect
    {command_kind::acquire, true},         // acquire_fenced
    {command_kind::release, true},         // transfer: latched like a release
}};

/// The source of each script, indexed by `script`.
inline constexpr std::array<std::string_view, script_count> script_sources{
    // acquire — KEYS[1] = lock key; ARGV[1] = lease ms, ARGV[2] = owner field.
    // nil: acquired or re-entered; otherwise the holder's PTTL.
    "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) "
    "then "
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; "
    "end; "
    "return redis.call('pttl', KEYS[1]);",

    // release (with Redisson's unlock latch, 3.24.1+) — KEYS[1] = lock key, KEYS[2] = unlock
    // channel, KEYS[3] = latch key redisson_unlock_latch:{<key>}:<request id>;
    // ARGV[1] = message "0", ARGV[2] = lease ms, ARGV[3] = owner field, ARGV[4] = publish
    // command, ARGV[5] = latch TTL ms.
    // nil: not the owner; 0: still held (reentrant); 1: released and published. A retry with the
    // same request id returns the first attempt's answer, so a retried unlock is idempotent.
    "local val = redis.call('get', KEYS[3]); "
    "if val ~= false then return tonumber(val); end; "
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
    "if (counter > 0) then "
    "redis.call('pexpire', KEYS[1], ARGV[2]); "
    "redis.call('set', KEYS[3], 0, 'px', ARGV[5]); "
    "return 0; "
    "else "
    "redis.call('del', KEYS[1]); "
    "redis.call(ARGV[4], KEYS[2], ARGV[1]); "
    "redis.call('set', KEYS[3], 1, 'px', ARGV[5]); "
    "return 1; "
    "end;",

    // renew — KEYS = lock keys; ARGV[1] = lease ms, ARGV[i + 1] = owner field of KEYS[i].
    // One 1 (renewed) or 0 (no longer ours) per key. Redisson's batch renewal, except that each
    // key is checked with redis.pcall: a key of the wrong type (WRONGTYPE) answers 0 for itself
    // instead of failing the renewal of the whole batch.
    "local result = {} "
    "for i = 1, #KEYS, 1 do "
    "if (redis.pcall('hexists', KEYS[i], ARGV[i + 1]) == 1) then "
    "redis.call('pexpire', KEYS[i], ARGV[1]); table.insert(result, 1); "
    "else table.insert(result, 0); end; "
    "end; "
    "return result;",

    // force_unlock — KEYS[1] = lock key, KEYS[2] = unlock channel; ARGV[1] = message "0",
    // ARGV[2] = publish command (`publish`, or `spublish` with sharded channels).
    // 1: deleted and published; 0: was not locked.
    "if (redis.call('del', KEYS[1]) == 1) then "
    "redis.call(ARGV[2], KEYS[2], ARGV[1]); return 1 else return 0 end",

    // acquire_fenced (Redisson's RFencedLock, 3.19.0+) — KEYS[1] = lock key, KEYS[2] = token
    // counter redisson_lock_token:{<key>}; ARGV[1] = lease ms, ARGV[2] = owner field.
    // {-1, token}: acquired or re-entered, the counter incremented to `token` (every acquisition,
    // re-entry included, gets a new one); {pttl, -1}: busy.
    "if (redis.call('exists', KEYS[1]) == 0 "
    "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then "
    "local token = redis.call('incr', KEYS[2]);"
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return {-1, token}; "
    "end; "
    "return {redis.call('pttl', KEYS[1]), -1};",

    // transfer (rlock's local handoff: not Redisson's, but it leaves only states Redisson's own
    // scripts produce) — the release above, except that the final release hands the lock to
    // another owner instead of deleting it and publishing. KEYS and ARGV[1..5] as release;
    // ARGV[6] = the new owner's field, ARGV[7] = its lease ms.
    // nil: not the owner; 0: still held (reentrant); 2: the hash now holds only ARGV[6] with
    // one hold and the new lease (a Redisson lock held by it); the latch keeps the answer.
    "local val = redis.call('get', KEYS[3]); "
    "if val ~= false then return tonumber(val); end; "
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
    "if (counter > 0) then "
    "redis.call('pexpire', KEYS[1], ARGV[2]); "
    "redis.call('set', KEYS[3], 0, 'px', ARGV[5]); "
    "return 0; "
    "end; "
    "redis.call('del', KEYS[1]); "
    "redis.call('hset', KEYS[1], ARGV[6], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[7]); "
    "redis.call('set', KEYS[3], 2, 'px', ARGV[5]); "
    "return 2;",
};

}  // namespace rlock::detail
