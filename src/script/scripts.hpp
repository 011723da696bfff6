#pragma once

// All Lua rlock sends, in one place. The lock scripts are Redisson's own, byte for byte in
// meaning, so that a Java service using Redisson and a C++ service using rlock share one lock.

#include <array>
#include <cstddef>
#include <string_view>

namespace rlock::detail {

enum class script : std::size_t {
  acquire,
  release,
  renew,
  force_unlock,
};
inline constexpr std::size_t script_count = 4;

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

    // release — KEYS[1] = lock key, KEYS[2] = unlock channel;
    // ARGV[1] = message "0", ARGV[2] = lease ms, ARGV[3] = owner field.
    // nil: not the owner; 0: still held (reentrant); 1: released and published.
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
    "if (counter > 0) then "
    "redis.call('pexpire', KEYS[1], ARGV[2]); "
    "return 0; "
    "else "
    "redis.call('del', KEYS[1]); "
    "redis.call('publish', KEYS[2], ARGV[1]); "
    "return 1; "
    "end;",

    // renew — KEYS = lock keys; ARGV[1] = lease ms, ARGV[i + 1] = owner field of KEYS[i].
    // One 1 (renewed) or 0 (no longer ours) per key.
    "local result = {} "
    "for i = 1, #KEYS, 1 do "
    "if (redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1) then "
    "redis.call('pexpire', KEYS[i], ARGV[1]); table.insert(result, 1); "
    "else table.insert(result, 0); end; "
    "end; "
    "return result;",

    // force_unlock — KEYS[1] = lock key, KEYS[2] = unlock channel; ARGV[1] = message "0".
    // 1: deleted and published; 0: was not locked.
    "if (redis.call('del', KEYS[1]) == 1) then "
    "redis.call('publish', KEYS[2], ARGV[1]); return 1 else return 0 end",
};

}  // namespace rlock::detail
