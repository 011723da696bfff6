#pragma once

// What an acquire script answered, decoded by the lock kind without I/O (lock_kind::decode).
#include <chrono>
#include <cstdint>

namespace rlock::detail {

struct acquire_reply {
  enum class outcome : std::uint8_t {
    acquired,  // taken or re-entered
    busy,      // held by another owner
    malformed  // not a reply this kind's script gives
  };
  outcome what = outcome::malformed;
  /// busy: the holder's PTTL (-1: the key has no TTL).
  std::chrono::milliseconds ttl{-1};
  /// acquired, for kinds with tokens: this acquisition's token (> 0); 0 otherwise.
  std::int64_t token = 0;
};

}  // namespace rlock::detail
