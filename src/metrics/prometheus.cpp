// The client's metrics in Prometheus' text exposition format (metrics/prometheus_writer.hpp).
#include "metrics/prometheus_writer.hpp"

#include <string>

namespace rlock {

std::string to_prometheus(const client_metrics& m, std::string_view prefix,
                          const metric_labels& labels) {
  detail::check_metric_prefix(prefix);
  detail::prometheus_writer w(prefix, labels);
  w.family("acquisitions_total", "counter",
           "Locks acquired, by how: at once, woken by an unlock, after the holder's lease, or "
           "handed over.");
  w.sample("acquisitions_total", "wake=\"immediate\"", m.acquisitions_immediate);
  w.sample("acquisitions_total", "wake=\"notification\"", m.acquisitions_notification);
  w.sample("acquisitions_total", "wake=\"expiry\"", m.acquisitions_expiry);
  w.sample("acquisitions_total", "wake=\"handoff\"", m.acquisitions_handoff);
  w.counter("acquire_attempts", "Acquire scripts sent, first tries and retries.",
            m.acquire_attempts);
  w.histogram_family("acquire_wait_seconds", "Time from a lock call to its grant.", m.acquire_wait);
  w.histogram_family("hold_seconds", "Time from a grant to the final unlock or the loss.", m.hold);
  w.counter("renewal_calls", "Watchdog renewal calls (up to 100 locks each).", m.renewal_calls);
  w.counter("renewal_failures", "Watchdog renewal calls that failed.", m.renewal_failures);
  w.counter("lost_locks", "Watchdog locks found lost.", m.lost_locks);
  w.counter("reconnects", "Connections made again after a loss.", m.reconnects);
  w.counter("reconciled_acquires", "Acquires whose answer was lost, settled by asking the server.",
            m.reconciled_acquires);
  w.counter("given_back", "Acquisitions released because their caller was told otherwise.",
            m.given_back);
  w.gauge("requests_in_flight", "Requests queued or awaiting an answer.", m.requests_in_flight);
  w.gauge("subscriptions", "Unlock channels subscribed.", m.subscriptions);
  w.gauge("renewed_locks", "Locks the watchdog keeps.", m.renewed_locks);
  w.gauge("waiters", "lock() and try_lock() calls waiting.", m.waiters);
  w.gauge("connected", "1 while connected to Redis.", m.connected ? 1u : 0u);
  return w.take();
}

}  // namespace rlock
