#pragma once

// What an acquire script answered, decoded by the lock kind without I/O (lock_kind::decode).
#include <chrono>
#include <cstdint>

namespace rlock::detail {

/// The longest wait an answer may ask for: about 24.8 days. Longer is "no end in sight" (such as
/// the score Redisson gives a permit taken without a lease, about 9.2 x 10^14 ms), and the engine
/// bounds every sleep by the caller's wait and the lease anyway. Kept far below what a
/// steady_clock time point can add (2^63 ns is 292 years; 9.2 x 10^14 ms as nanoseconds
/// overflows it, which once turned such an answer into a sleep that had already ended).
inline constexpr std::chrono::milliseconds longest_server_wait{0x7fff'ffff};

/// A wait in milliseconds that the server answered (a holder's PTTL, a semaphore's earliest
/// hold end), as the engine may use it: negative is -1 ("no TTL to go by": the engine's default
/// nap), and anything above longest_server_wait is longest_server_wait. Every decoder of a
/// server-supplied duration goes through it.
constexpr std::chrono::milliseconds server_wait(std::int64_t ms) noexcept {
  if (ms < 0) return std::chrono::milliseconds(-1);
  return ms > longest_server_wait.count() ? longest_server_wait : std::chrono::milliseconds(ms);
}

struct acquire_reply {
  enum class outcome : std::uint8_t {
    acquired,  // taken or re-entered
    busy,      // held by another owner
    malformed  // not a reply this kind's script gives
  };
  outcome what = outcome::malformed;
  /// busy: the holder's PTTL (-1: the key has no TTL), through server_wait.
  std::chrono::milliseconds ttl{-1};
  /// acquired, for kinds with tokens: this acquisition's token (> 0); 0 otherwise.
  std::int64_t token = 0;
};

}  // namespace rlock::detail
