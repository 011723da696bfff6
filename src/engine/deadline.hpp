#pragma once

// A deadline a caller's wait sets: `now + wait` where it fits in a steady_clock time point, and
// time_point::max() ("no bound") where it does not (a wait of centuries, such as
// milliseconds::max(), overflows nanoseconds).
#include <chrono>

namespace rlock::detail {

/// `at + d`, or time_point::max() where that would not fit.
constexpr std::chrono::steady_clock::time_point saturating_add(
    std::chrono::steady_clock::time_point at, std::chrono::milliseconds d) noexcept {
  using clock = std::chrono::steady_clock;
  const auto room =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock::time_point::max() - at);
  return d >= room ? clock::time_point::max() : at + d;
}

}  // namespace rlock::detail
