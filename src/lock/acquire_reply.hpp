#pragma once

// What an acquire script answered, decoded without I/O: the one place that knows the reply
// shapes of the lock kinds, so the acquire engine (lock_ops.cpp) is the same for all of them.
#include "resp3/value.hpp"
#include "script/scripts.hpp"

#include <chrono>
#include <cstdint>

namespace rlock::detail {

/// The lock kinds sharing the acquire engine, the release, the channel and the watchdog; they
/// differ in their acquire script and its reply.
enum class lock_kind : std::uint8_t {
  /// Redisson's RLock: nil when acquired, the holder's PTTL when busy.
  reentrant,
  /// Redisson's RFencedLock: {-1, token} when acquired, {pttl, -1} when busy; the script also
  /// takes the token counter as KEYS[2].
  fenced,
};

/// The acquire script of a kind.
constexpr script acquire_script(lock_kind kind) noexcept {
  return kind == lock_kind::fenced ? script::acquire_fenced : script::acquire;
}

struct acquire_reply {
  enum class outcome : std::uint8_t {
    acquired,  // taken or re-entered
    busy,      // held by another owner
    malformed  // not a reply this kind's script gives
  };
  outcome what = outcome::malformed;
  /// busy: the holder's PTTL (-1: the key has no TTL).
  std::chrono::milliseconds ttl{-1};
  /// acquired, fenced: this acquisition's token (> 0); 0 for a reentrant lock.
  std::int64_t token = 0;
};

/// Decodes the reply of acquire_script(kind); an error reply is the caller's to handle first.
acquire_reply decode_acquire_reply(lock_kind kind, const resp3::value& reply) noexcept;

}  // namespace rlock::detail
