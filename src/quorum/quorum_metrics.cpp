// A quorum lock's metrics in Prometheus' text exposition format (metrics/prometheus_writer.hpp).
#include "metrics/prometheus_writer.hpp"
#include "rlock/quorum_lock.hpp"

#include <fmt/format.h>

#include <string>

namespace rlock {

std::string to_prometheus(const quorum_lock_metrics& m, std::string_view prefix,
                          const metric_labels& labels) {
  detail::check_metric_prefix(prefix);
  for (const auto& [name, value] : labels) {
    if (name == "lock" || name == "node" || name == "vote") {
      throw_error(errc::invalid_argument,
                  fmt::format("'{}' is a label the quorum lock's exposition sets itself", name));
    }
  }
  metric_labels with_lock = labels;
  with_lock.emplace_back("lock", m.name);
  detail::prometheus_writer w(prefix, with_lock);
  w.counter("quorum_rounds", "Quorum rounds started (one attempt on every node each).", m.rounds);
  w.counter("quorum_rounds_won", "Quorum rounds that began a hold.", m.rounds_won);
  w.counter("quorum_holds_lost", "Quorum holds told lost().", m.holds_lost);
  w.counter("quorum_retakes", "Nodes taken again while a majority held.", m.retakes);
  w.counter("quorum_token_raises", "Fencing token raises tried (one round trip each).",
            m.token_raises);
  w.gauge("quorum_held", "1 while this owner believes it holds the quorum lock.", m.held ? 1u : 0u);
  w.family("quorum_node_votes_total", "counter", "Each node's votes in the lock's rounds.");
  for (const auto& n : m.nodes) {
    const std::string node = fmt::format("node=\"{}\"", detail::escaped(n.address));
    w.sample("quorum_node_votes_total", node + ",vote=\"granted\"", n.granted);
    w.sample("quorum_node_votes_total", node + ",vote=\"refused\"", n.refused);
    w.sample("quorum_node_votes_total", node + ",vote=\"failed\"", n.failed);
  }
  w.family("quorum_node_held", "gauge", "1 for each node the current hold has.");
  for (const auto& n : m.nodes) {
    w.sample("quorum_node_held", fmt::format("node=\"{}\"", detail::escaped(n.address)),
             n.holds ? 1u : 0u);
  }
  return w.take();
}

}  // namespace rlock
