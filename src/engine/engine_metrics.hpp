#pragma once

// What the engine counts and times, told where it happens by a verb (an acquisition, a wake-up,
// a hold's end); read by client::stats() and client::metrics() from any thread.
#include "metrics/log_histogram.hpp"
#include "rlock/wake_reason.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace rlock::detail {

/// Counters behind client::stats() and client::metrics(); atomics because those may be read
/// from any thread.
struct engine_counters {
  std::atomic<std::uint64_t> acquire_attempts{0};
  std::atomic<std::uint64_t> notified_wakeups{0};
  std::atomic<std::uint64_t> expiry_wakeups{0};
  std::atomic<std::uint64_t> lost_locks{0};
  std::atomic<std::uint64_t> reconciled_acquires{0};
  std::atomic<std::uint64_t> given_back{0};
  std::atomic<std::uint64_t> acquired_immediate{0};
  std::atomic<std::uint64_t> acquired_notification{0};
  std::atomic<std::uint64_t> acquired_expiry{0};
  std::atomic<std::uint64_t> acquired_handoff{0};
  std::atomic<std::uint64_t> local_handoffs{0};
  std::atomic<std::uint64_t> handoffs_given_back{0};
};

class engine_metrics {
 public:
  using duration = std::chrono::steady_clock::duration;

  /// An acquire attempt was sent.
  void attempt_sent() noexcept { ++counters.acquire_attempts; }
  /// An attempt's answer was lost, and the server is asked whether it ran.
  void attempt_reconciled() noexcept { ++counters.reconciled_acquires; }
  /// A waiter tries again because an unlock was heard or its timer (the holder's TTL) ran out.
  void woke(wake_reason why) noexcept {
    if (why == wake_reason::expiry) ++counters.expiry_wakeups;
    if (why == wake_reason::notification) ++counters.notified_wakeups;
  }
  /// An acquisition its caller gets, `waited` after it asked.
  void acquired(wake_reason why, duration waited) noexcept {
    wait_times.observe(waited);
    auto& by_reason = why == wake_reason::immediate      ? counters.acquired_immediate
                      : why == wake_reason::notification ? counters.acquired_notification
                      : why == wake_reason::handoff      ? counters.acquired_handoff
                                                         : counters.acquired_expiry;
    by_reason.fetch_add(1, std::memory_order_relaxed);
  }
  /// A hold was granted with `lease` (executor only).
  void hold_granted(std::chrono::milliseconds lease) noexcept {
    longest_lease_ = std::max(longest_lease_, lease);
  }
  /// A hold ended (released, or lost) after `held`.
  void hold_ended(duration held) noexcept { hold_times.observe(held); }
  void lock_lost() noexcept { ++counters.lost_locks; }
  /// A hold no caller got went back (`handoff`: a local handoff reached a waiter that had left).
  void given_back(bool handoff = false) noexcept {
    ++counters.given_back;
    if (handoff) ++counters.handoffs_given_back;
  }
  /// A release handed the lock to a waiter of this client in the same script.
  void handed_over() noexcept { ++counters.local_handoffs; }

  /// The longest lease any acquisition was given (executor only): how long holds from before a
  /// failover may still count (engine_context::counts_uncertain_until).
  std::chrono::milliseconds longest_lease() const noexcept { return longest_lease_; }

  engine_counters counters;
  log_histogram wait_times;
  log_histogram hold_times;

 private:
  std::chrono::milliseconds longest_lease_{0};
};

}  // namespace rlock::detail
