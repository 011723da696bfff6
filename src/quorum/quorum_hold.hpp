#pragma once

// What a holder of a quorum lock believes, and until when: each held node's grant is believed
// from the send of the request that set its lease (the acquisition, then each renewal the
// watchdog confirmed) for its lease less the drift, and the hold as long as a majority of them
// is. A node that lost the key (a renewal answered 0, a restart without data) is taken again
// while a majority still holds; once fewer than a majority hold, the hold is lost at once.
// Otherwise the holder stops believing at its deadline, an allowance before the validity ends,
// unless renewals moved it. Sans I/O: the shell feeds confirmations and losses, and arms a timer
// at deadline().
#include "quorum/node_set.hpp"
#include "quorum/quorum_tally.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace rlock::detail {

class quorum_hold {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  /// What the shell does after a node's loss.
  enum class step : std::uint8_t {
    none,    ///< nothing
    retake,  ///< take the node again (a majority still holds, so nobody else can have it)
    lost,    ///< the hold is lost: tell lost()'s waiters, release what is left
  };

  /// A hold on the nodes of `held`, node i leased for `leases[i]` by a request sent at `sent`;
  /// the holder stops believing `allowance` before the validity ends (the timer's share).
  quorum_hold(std::vector<std::chrono::milliseconds> leases, drift_policy drift, node_set held,
              time_point sent, std::chrono::milliseconds allowance = std::chrono::milliseconds(5))
      : leases_(std::move(leases)),
        drift_(drift),
        allowance_(allowance),
        sent_(leases_.size(), time_point::min()),
        held_(held) {
    for (std::size_t i = 0; i < leases_.size(); ++i) {
      if (holds(i)) sent_[i] = sent;
    }
    lost_ = count() < quorum_of(leases_.size());
  }

  /// The watchdog confirmed a renewal of node i sent at `sent` (the lease runs from there).
  void on_confirmed(std::size_t i, time_point sent) {
    if (!lost_ && holds(i) && sent > sent_.at(i)) sent_[i] = sent;
  }

  /// Node i no longer holds the key.
  step on_node_lost(std::size_t i) {
    if (lost_ || !holds(i)) return step::none;
    held_ &= ~node_bit(i);
    if (count() < quorum_of(leases_.size())) {
      lost_ = true;
      return step::lost;
    }
    return step::retake;
  }

  /// A retake of node i ended: granted by a request sent at `sent`, or not (it stays out).
  void on_retaken(std::size_t i, bool granted, time_point sent) {
    if (lost_ || !granted || i >= leases_.size()) return;
    held_ |= node_bit(i);
    sent_[i] = sent;
  }

  /// Until when a majority of the held nodes' grants is believed (time_point::min() when lost).
  time_point valid_until() const {
    if (lost_) return time_point::min();
    std::vector<node_grant> grants;
    for (std::size_t i = 0; i < leases_.size(); ++i) {
      if (holds(i)) grants.push_back({sent_[i], leases_[i]});
    }
    return detail::valid_until(grants, quorum_of(leases_.size()), drift_);
  }
  /// When the holder stops believing unless renewals move it: the validity less the allowance.
  time_point deadline() const {
    const auto until = valid_until();
    return until == time_point::min() ? until : until - allowance_;
  }
  /// The shell's timer at deadline() fired at `now` (after feeding the latest confirmations):
  /// whether the hold is lost now.
  bool check(time_point now) {
    if (!lost_ && now >= deadline()) lost_ = true;
    return lost_;
  }

  bool lost() const noexcept { return lost_; }
  node_set held() const noexcept { return held_; }

 private:
  bool holds(std::size_t i) const noexcept {
    return i < leases_.size() && (held_ & node_bit(i)) != 0;
  }
  std::size_t count() const noexcept { return size_of(held_ & all_nodes(leases_.size())); }

  std::vector<std::chrono::milliseconds> leases_;
  drift_policy drift_;
  std::chrono::milliseconds allowance_;
  std::vector<time_point> sent_;  // per node: the send of the request its lease runs from
  node_set held_;
  bool lost_ = false;
};

}  // namespace rlock::detail
