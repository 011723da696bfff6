#pragma once

// A candidate's leads as its metrics count them (election::metrics(),
// quorum_election::metrics()).
#include "rlock/election.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

namespace rlock::detail {

/// A candidate's leads as its metrics count them. Atomics: metrics() reads them from any thread;
/// they change on the client's executor.
struct election_tally {
  std::atomic<bool> leading{false};
  std::atomic<std::uint64_t> campaigns{0};
  std::atomic<std::uint64_t> terms_won{0};
  std::atomic<std::uint64_t> resignations{0};
  std::atomic<std::uint64_t> failovers{0};
  std::atomic<std::int64_t> since_ns{0};  // steady clock, of the current lead
  std::atomic<std::int64_t> led_ns{0};    // the ended leads

  static std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  /// A lead begins (a campaign won).
  void won() noexcept {
    if (leading.exchange(true)) return;
    since_ns = now_ns();
    ++terms_won;
  }
  /// The lead ended: given up, or found lost. Once per lead.
  void ended(bool lost) noexcept {
    if (!leading.exchange(false)) return;
    led_ns += now_ns() - since_ns.load();
    ++(lost ? failovers : resignations);
  }
  /// What the candidate `name` has done, its latest win's term being `term`. Any thread.
  election_metrics metrics(std::string name, std::int64_t term) const {
    election_metrics m;
    m.name = std::move(name);
    m.leading = leading.load();
    m.term = term;
    m.campaigns = campaigns.load();
    m.terms_won = terms_won.load();
    m.resignations = resignations.load();
    m.failovers = failovers.load();
    auto led = led_ns.load();
    if (m.leading) led += now_ns() - since_ns.load();
    m.time_leading =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds(led));
    return m;
  }
};

}  // namespace rlock::detail
