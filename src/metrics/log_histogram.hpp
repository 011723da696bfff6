#pragma once

#include "rlock/metrics.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace rlock::detail {

/// A duration histogram with fixed log-spaced buckets (1, 2.5, 5 per decade, 100 µs to 10 s).
/// Observed on the client's executor, read from any thread: relaxed atomics, and the snapshot's
/// count is the sum of its buckets, so it is consistent with itself.
class log_histogram {
 public:
  static constexpr std::array<double, 16> bounds{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                 0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                                 1,      2.5,     5,      10};

  void observe(std::chrono::nanoseconds d) noexcept {
    const double seconds = std::chrono::duration<double>(d).count();
    std::size_t i = 0;
    while (i < bounds.size() && seconds > bounds[i]) ++i;
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    sum_ns_.fetch_add(static_cast<std::uint64_t>(d.count() > 0 ? d.count() : 0),
                      std::memory_order_relaxed);
  }

  histogram snapshot() const {
    histogram h;
    h.upper_bounds.assign(bounds.begin(), bounds.end());
    h.counts.reserve(counts_.size());
    for (const auto& c : counts_) {
      h.counts.push_back(c.load(std::memory_order_relaxed));
      h.count += h.counts.back();
    }
    h.sum = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
    return h;
  }

 private:
  std::array<std::atomic<std::uint64_t>, bounds.size() + 1> counts_{};
  std::atomic<std::uint64_t> sum_ns_{0};
};

}  // namespace rlock::detail
