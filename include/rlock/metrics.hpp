#pragma once

#include "rlock/export.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlock {

/// A histogram of durations in seconds with fixed, log-spaced buckets (100 µs to 10 s).
struct histogram {
  /// Upper bounds of the buckets, ascending; a last bucket above them is implied (+Inf).
  std::vector<double> upper_bounds;
  /// Observations per bucket (not cumulative): upper_bounds.size() + 1 entries.
  std::vector<std::uint64_t> counts;
  /// All observations, and their sum in seconds.
  std::uint64_t count = 0;
  double sum = 0;
};

/// What a client has done and is doing, for monitoring: counters since it was made, two
/// histograms, and gauges of the moment. client::metrics() / async_metrics() take it;
/// to_prometheus() renders it.
struct client_metrics {
  /// Acquisitions (lock, try_lock that returned true), by how they came about.
  std::uint64_t acquisitions_immediate = 0;     ///< without sleeping
  std::uint64_t acquisitions_notification = 0;  ///< woken by an unlock notification
  std::uint64_t acquisitions_expiry = 0;        ///< after the holder's lease ran out
  std::uint64_t acquisitions_handoff = 0;       ///< handed over by an unlock of this client
  /// Acquire scripts sent (first tries and retries).
  std::uint64_t acquire_attempts = 0;
  /// From the call to the grant, for acquisitions.
  histogram acquire_wait;
  /// From the grant to the final unlock (or the loss) of a hold.
  histogram hold;
  /// Watchdog renewal calls (each renews up to 100 locks), and those that failed.
  std::uint64_t renewal_calls = 0;
  std::uint64_t renewal_failures = 0;
  std::uint64_t lost_locks = 0;
  std::uint64_t reconnects = 0;
  std::uint64_t reconciled_acquires = 0;
  std::uint64_t given_back = 0;
  /// Gauges: requests queued or awaiting an answer, channels subscribed, locks the watchdog
  /// renews, lock() / try_lock() calls waiting, whether connected now.
  std::size_t requests_in_flight = 0;
  std::size_t subscriptions = 0;
  std::size_t renewed_locks = 0;
  std::size_t waiters = 0;
  bool connected = false;
};

/// Labels added to every sample, e.g. {{"service", "orders"}}.
using metric_labels = std::vector<std::pair<std::string, std::string>>;

/// `m` in Prometheus' text exposition format (version 0.0.4): a `# HELP` and `# TYPE` line per
/// family, counters named `<prefix>_..._total`, histograms as cumulative `_bucket{le=...}` with
/// `le="+Inf"`, `_sum` and `_count`, label values escaped. A service can serve it as is
/// (Content-Type `text/plain; version=0.0.4`). Throws boost::system::system_error
/// (errc::invalid_argument) for a prefix or label name Prometheus does not accept.
RLOCK_EXPORT std::string to_prometheus(const client_metrics& m, std::string_view prefix = "rlock",
                                       const metric_labels& labels = {});

}  // namespace rlock
