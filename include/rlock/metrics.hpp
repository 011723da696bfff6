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
  /// The number of observations.
  std::uint64_t count = 0;
  /// Their sum, in seconds.
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
  /// handed over: by an unlock of this client (config::local_handoff), or a fair lock's
  /// release that made this waiter the holder (handoff by push)
  std::uint64_t acquisitions_handoff = 0;
  /// Acquire scripts sent (first tries and retries).
  std::uint64_t acquire_attempts = 0;
  /// From the call to the grant, for acquisitions.
  histogram acquire_wait;
  /// From the grant to the final unlock (or the loss) of a hold.
  histogram hold;
  /// Watchdog renewal calls (each renews up to 100 locks).
  std::uint64_t renewal_calls = 0;
  /// Of renewal_calls, those that failed (renewed nothing).
  std::uint64_t renewal_failures = 0;
  /// Watchdog locks reported lost (client_stats::lost_locks).
  std::uint64_t lost_locks = 0;
  /// Connections made again after a loss.
  std::uint64_t reconnects = 0;
  /// Acquire attempts whose answer was lost, settled by asking the server for the hold count.
  std::uint64_t reconciled_acquires = 0;
  /// Acquisitions given back because they completed after their caller was told otherwise
  /// (cancelled, or out of time).
  std::uint64_t given_back = 0;
  /// Gauge: requests queued or awaiting an answer.
  std::size_t requests_in_flight = 0;
  /// Gauge: channels subscribed.
  std::size_t subscriptions = 0;
  /// Gauge: locks the watchdog renews.
  std::size_t renewed_locks = 0;
  /// Gauge: lock() / try_lock() calls waiting.
  std::size_t waiters = 0;
  /// Gauge: whether connected now.
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
