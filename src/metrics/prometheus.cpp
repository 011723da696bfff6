// Prometheus' text exposition format, version 0.0.4:
// https://prometheus.io/docs/instrumenting/exposition_formats/
#include "rlock/error.hpp"
#include "rlock/metrics.hpp"
#include "rlock/quorum_lock.hpp"

#include <fmt/format.h>

#include <string>

namespace rlock {

namespace {

bool valid_metric_name(std::string_view s) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool valid_label_name(std::string_view s) {
  // Names starting with "__" are reserved for Prometheus' own use.
  return valid_metric_name(s) && s.find(':') == std::string_view::npos && !s.starts_with("__");
}

/// A label value with \, " and newline escaped.
std::string escaped(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (const char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

class writer {
 public:
  writer(std::string_view prefix, const metric_labels& labels) : prefix_(prefix) {
    for (const auto& [name, value] : labels) {
      if (!valid_label_name(name) || name == "le" || name == "wake") {
        throw_error(errc::invalid_argument,
                    fmt::format("'{}' is not a label name this exposition can use", name));
      }
      common_ += fmt::format("{}{}=\"{}\"", common_.empty() ? "" : ",", name, escaped(value));
    }
  }

  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ +=
        fmt::format("# HELP {}_{} {}\n# TYPE {}_{} {}\n", prefix_, name, help, prefix_, name, type);
  }
  /// One sample; `extra` is a label list without braces ("" for none).
  template <typename T>
  void sample(std::string_view name, const std::string& extra, T value) {
    std::string labels = common_;
    if (!extra.empty()) labels += (labels.empty() ? "" : ",") + extra;
    out_ += fmt::format("{}_{}{}{}{} {}\n", prefix_, name, labels.empty() ? "" : "{", labels,
                        labels.empty() ? "" : "}", value);
  }
  void counter(std::string_view name, std::string_view help, std::uint64_t v) {
    const std::string full = fmt::format("{}_total", name);
    family(full, "counter", help);
    sample(full, "", v);
  }
  void gauge(std::string_view name, std::string_view help, std::uint64_t v) {
    family(name, "gauge", help);
    sample(name, "", v);
  }
  void histogram_family(std::string_view name, std::string_view help, const histogram& h) {
    family(name, "histogram", help);
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < h.upper_bounds.size(); ++i) {
      cumulative += i < h.counts.size() ? h.counts[i] : 0;
      sample(fmt::format("{}_bucket", name), fmt::format("le=\"{}\"", h.upper_bounds[i]),
             cumulative);
    }
    sample(fmt::format("{}_bucket", name), "le=\"+Inf\"", h.count);
    sample(fmt::format("{}_sum", name), "", h.sum);
    sample(fmt::format("{}_count", name), "", h.count);
  }

  std::string take() { return std::move(out_); }

 private:
  std::string_view prefix_;
  std::string common_;
  std::string out_;
};

}  // namespace

std::string to_prometheus(const client_metrics& m, std::string_view prefix,
                          const metric_labels& labels) {
  if (!valid_metric_name(prefix)) {
    throw_error(errc::invalid_argument,
                fmt::format("'{}' is not a metric name prefix Prometheus accepts", prefix));
  }
  writer w(prefix, labels);
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

std::string to_prometheus(const quorum_lock_metrics& m, std::string_view prefix,
                          const metric_labels& labels) {
  if (!valid_metric_name(prefix)) {
    throw_error(errc::invalid_argument,
                fmt::format("'{}' is not a metric name prefix Prometheus accepts", prefix));
  }
  for (const auto& [name, value] : labels) {
    if (name == "lock" || name == "node" || name == "vote") {
      throw_error(errc::invalid_argument,
                  fmt::format("'{}' is a label the quorum lock's exposition sets itself", name));
    }
  }
  metric_labels with_lock = labels;
  with_lock.emplace_back("lock", m.name);
  writer w(prefix, with_lock);
  w.counter("quorum_rounds", "Quorum rounds started (one attempt on every node each).", m.rounds);
  w.counter("quorum_rounds_won", "Quorum rounds that began a hold.", m.rounds_won);
  w.counter("quorum_holds_lost", "Quorum holds told lost().", m.holds_lost);
  w.counter("quorum_retakes", "Nodes taken again while a majority held.", m.retakes);
  w.counter("quorum_token_raises", "Fencing token raises tried (one round trip each).",
            m.token_raises);
  w.gauge("quorum_held", "1 while this owner believes it holds the quorum lock.", m.held ? 1u : 0u);
  w.family("quorum_node_votes_total", "counter", "Each node's votes in the lock's rounds.");
  for (const auto& n : m.nodes) {
    const std::string node = fmt::format("node=\"{}\"", escaped(n.address));
    w.sample("quorum_node_votes_total", node + ",vote=\"granted\"", n.granted);
    w.sample("quorum_node_votes_total", node + ",vote=\"refused\"", n.refused);
    w.sample("quorum_node_votes_total", node + ",vote=\"failed\"", n.failed);
  }
  w.family("quorum_node_held", "gauge", "1 for each node the current hold has.");
  for (const auto& n : m.nodes) {
    w.sample("quorum_node_held", fmt::format("node=\"{}\"", escaped(n.address)), n.holds ? 1u : 0u);
  }
  return w.take();
}

}  // namespace rlock
