#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

namespace rlock::detail {

/// A seed for a backoff's jitter (or any other), from the OS: clients started together must not
/// draw the same delays.
inline std::uint64_t random_seed() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}

/// Exponential backoff with full jitter (the AWS Architecture Blog's "full jitter"): the n-th
/// delay is uniform in [0, min(cap, initial * 2^n)], so clients that lost the same server do not
/// reconnect in lockstep. Sans-I/O: it only computes delays.
class backoff {
 public:
  using duration = std::chrono::milliseconds;

  backoff(duration initial, duration cap, std::uint64_t seed)
      : initial_(std::max(initial, duration(1))), cap_(std::max(cap, initial_)), rng_(seed) {}

  /// The delay before the next attempt; each call doubles the ceiling up to the cap.
  duration next() {
    const auto ceiling = ceiling_for(attempt_);
    if (attempt_ < 62) ++attempt_;
    std::uniform_int_distribution<std::int64_t> pick(0, ceiling.count());
    return duration(pick(rng_));
  }

  /// A connection succeeded: the next loss starts from `initial` again.
  void reset() noexcept { attempt_ = 0; }

  std::uint32_t attempt() const noexcept { return attempt_; }
  /// The ceiling of the n-th delay (0-based).
  duration ceiling_for(std::uint32_t n) const noexcept {
    // Doubling stops at the cap, long before it could overflow.
    duration c = initial_;
    for (std::uint32_t i = 0; i < n && c < cap_; ++i) c *= 2;
    return std::min(c, cap_);
  }

 private:
  duration initial_;
  duration cap_;
  std::uint32_t attempt_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace rlock::detail
