#pragma once

// When a waiter for a quorum lock is worth another round: after a lost round, each node is
// held (kept by this waiter), ready (free when last asked, or it published an unlock since, or
// its subscription was confirmed again after a reconnect, so its state is unknown and worth a
// try), busy until its holder's TTL runs out (an expiry publishes nothing), or unreachable. A
// round is worth starting when held + ready + expired ≥ the majority: "enough nodes have
// published an unlock that a quorum may now be had, or a holder's validity has run out" is that
// one test. Sans I/O: the shell feeds the pushes and reads when to wake.
#include "quorum/quorum_tally.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rlock::detail {

class quorum_readiness {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  /// A node's state as this waiter knows it.
  enum class node_state : std::uint8_t { held, ready, busy, unreachable };

  /// N nodes, every one unreachable until a round says otherwise.
  explicit quorum_readiness(std::size_t nodes) : nodes_(nodes) {}

  /// What node i answered in the round that was just lost: a grant given back (it was free:
  /// ready) or kept (`kept`: held), a refusal (busy until `busy_until`: now + the holder's TTL),
  /// or nothing usable (unreachable).
  void after_round(std::size_t i, quorum_tally::vote v, time_point busy_until, bool kept = false) {
    auto& n = nodes_.at(i);
    switch (v) {
      case quorum_tally::vote::granted:
        n = {kept ? node_state::held : node_state::ready, {}};
        break;
      case quorum_tally::vote::refused:
        n = {node_state::busy, busy_until};
        break;
      case quorum_tally::vote::pending:
      case quorum_tally::vote::failed:
        n = {node_state::unreachable, {}};
        break;
    }
  }
  /// Node i published an unlock on the lock's channel: a busy node is free now.
  void on_unlock_message(std::size_t i) {
    auto& n = nodes_.at(i);
    if (n.state == node_state::busy) n = {node_state::ready, {}};
  }
  /// Node i's subscription was confirmed (again): after a reconnect what it holds is unknown,
  /// and an unlock published meanwhile was not heard, so it is worth asking.
  void on_subscribed(std::size_t i) {
    auto& n = nodes_.at(i);
    if (n.state != node_state::held) n = {node_state::ready, {}};
  }
  /// Node i's connection was lost: nothing it says counts until it is subscribed again.
  void on_connection_lost(std::size_t i) {
    auto& n = nodes_.at(i);
    if (n.state != node_state::held) n = {node_state::unreachable, {}};
  }

  node_state state(std::size_t i) const { return nodes_.at(i).state; }

  /// Whether a round could win now.
  bool worth_a_round(time_point now) const {
    std::size_t usable = 0;
    for (const auto& n : nodes_) {
      if (n.state == node_state::held || n.state == node_state::ready ||
          (n.state == node_state::busy && n.busy_until <= now)) {
        ++usable;
      }
    }
    return usable >= quorum_of(nodes_.size());
  }

  /// When enough busy nodes' holders will have run out for a round to be worth starting, if no
  /// push comes first: the expiry that completes a majority. time_point::max() when even every
  /// expiry would not (too many nodes unreachable: only a reconnect helps).
  time_point next_expiry(time_point now) const {
    std::size_t usable = 0;
    std::vector<time_point> expiries;
    for (const auto& n : nodes_) {
      if (n.state == node_state::held || n.state == node_state::ready) {
        ++usable;
      } else if (n.state == node_state::busy) {
        if (n.busy_until <= now) {
          ++usable;
        } else {
          expiries.push_back(n.busy_until);
        }
      }
    }
    const std::size_t quorum = quorum_of(nodes_.size());
    if (usable >= quorum) return now;
    const std::size_t missing = quorum - usable;
    if (missing > expiries.size()) return time_point::max();
    std::nth_element(expiries.begin(), expiries.begin() + static_cast<std::ptrdiff_t>(missing - 1),
                     expiries.end());
    return expiries[missing - 1];
  }

 private:
  struct node {
    node_state state = node_state::unreachable;
    time_point busy_until{};
  };
  std::vector<node> nodes_;
};

}  // namespace rlock::detail
