// An election candidate's metrics in Prometheus' text exposition format
// (metrics/prometheus_writer.hpp).
#include "metrics/prometheus_writer.hpp"
#include "rlock/election.hpp"

#include <fmt/format.h>

#include <chrono>
#include <string>

namespace rlock {

std::string to_prometheus(const election_metrics& m, std::string_view prefix,
                          const metric_labels& labels) {
  detail::check_metric_prefix(prefix);
  for (const auto& [name, value] : labels) {
    if (name == "election") {
      throw_error(errc::invalid_argument,
                  "'election' is a label the election's exposition sets itself");
    }
  }
  metric_labels with_name = labels;
  with_name.emplace_back("election", m.name);
  detail::prometheus_writer w(prefix, with_name);
  w.gauge("election_leading", "1 while this candidate believes it leads.", m.leading ? 1u : 0u);
  w.gauge("election_term", "The term of this candidate's latest win (0: none).",
          static_cast<std::uint64_t>(m.term < 0 ? 0 : m.term));
  w.counter("election_campaigns", "Campaigns this candidate started.", m.campaigns);
  w.counter("election_terms_won", "Leads this candidate won.", m.terms_won);
  w.counter("election_resignations", "Leads this candidate gave up.", m.resignations);
  w.counter("election_failovers",
            "Leads of this candidate that ended without a resignation (found lost).", m.failovers);
  w.family("election_leading_seconds_total", "counter", "Time this candidate has led, in all.");
  w.sample("election_leading_seconds_total", "",
           std::chrono::duration<double>(m.time_leading).count());
  return w.take();
}

}  // namespace rlock
