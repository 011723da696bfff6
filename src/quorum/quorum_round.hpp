#pragma once

// One round of a quorum acquisition (Redlock's "try every node at once"): every node is asked in
// the same turn, the round is won when a majority granted while the grants still have validity
// left, and lost as soon as no majority is possible, when its time bound passes, or when the
// majority came too late to be worth anything. A lost round gives back every grant it knows of
// before the caller is told (an attempt it cancelled whose grant lands anyway is given back
// when that answer comes). Sans I/O: the shell starts what the returned step says and feeds the
// answers in; times are given.
#include "quorum/node_set.hpp"
#include "quorum/quorum_tally.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rlock::detail {

/// What the shell does next for a round.
struct quorum_step {
  enum class kind : std::uint8_t {
    attempt,   ///< start one attempt on each node of `nodes`, all in this turn
    release,   ///< release the grant of each node of `nodes` (the round is lost)
    complete,  ///< tell the caller `won` (and, when won, `valid_until`)
    wait,      ///< nothing to start: wait for answers, releases or the bound
  };
  kind what = kind::wait;
  node_set nodes = 0;
  /// Attempts to cancel now, whatever `what` says (their answers no longer decide anything; a
  /// grant that lands anyway is still reported, and released or kept as the round decided).
  node_set cancel = 0;
  bool won = false;
  std::chrono::steady_clock::time_point valid_until{};
};

/// One round over N nodes. Use: start(), then on_answer() per node, on_bound() when the round's
/// time bound passes, on_released() per release the round asked for.
class quorum_round {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using vote = quorum_tally::vote;

  /// A round over `leases.size()` nodes (1 to 32), node i leased for `leases[i]`; its attempts
  /// are sent at `sent` (before any is written) and it ends by `bound` at the latest.
  quorum_round(std::vector<std::chrono::milliseconds> leases, drift_policy drift, time_point sent,
               time_point bound);

  /// Every node's attempt, at once.
  quorum_step start();
  /// Node i answered (granted, refused or failed) at `now`. After the round is over a late grant
  /// still counts: a won round keeps it, a lost one releases it.
  quorum_step on_answer(std::size_t i, vote v, time_point now);
  /// The round's bound passed: what is still pending counts as failed (the shell cancels it; a
  /// grant that lands later is given back by the node's own acquisition).
  quorum_step on_bound(time_point now);
  /// A release the round asked for ended (given back, or given up: either way, not ours).
  quorum_step on_released(std::size_t i);

  /// Whether the round is over (told the caller).
  bool over() const noexcept { return over_; }
  /// The grants the round holds: after a win, the hold's nodes.
  node_set granted() const noexcept { return granted_; }
  /// Until when the grants exclude everyone else (time_point::min() without a majority).
  time_point valid_until() const;
  const quorum_tally& tally() const noexcept { return tally_; }

 private:
  quorum_step decide(time_point now);
  quorum_step lose();
  node_set pending() const;

  std::vector<std::chrono::milliseconds> leases_;
  drift_policy drift_;
  time_point sent_;
  time_point bound_;
  quorum_tally tally_;
  node_set granted_ = 0;
  node_set releasing_ = 0;  // releases asked for and not ended
  bool started_ = false;
  bool losing_ = false;
  bool won_ = false;
  bool over_ = false;
};

}  // namespace rlock::detail
