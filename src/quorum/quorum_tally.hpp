#pragma once

// The arithmetic of a lock held by a majority of N independent nodes (Redlock, as the Redis
// documentation publishes it): how many grants make a quorum, how much less than its lease a
// grant is believed (the clocks of client and servers drift apart), and until when a set of
// grants still excludes everyone else. Sans I/O: every time is given, none is read.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace rlock::detail {

/// The least number of nodes that are a majority of `nodes`: any two such sets share a node,
/// which is what excludes a second holder and carries a fencing token from one to the next.
constexpr std::size_t quorum_of(std::size_t nodes) noexcept { return nodes / 2 + 1; }

/// How much less than its lease a grant is believed: a share of the lease (parts per million;
/// Redlock's 1 %) plus a floor (Redlock's 2 ms), rounded up to the millisecond.
struct drift_policy {
  std::uint32_t parts_per_million = 10'000;
  std::chrono::milliseconds floor{2};

  /// The drift allowed for `lease` (a negative lease allows the floor alone).
  constexpr std::chrono::milliseconds of(std::chrono::milliseconds lease) const noexcept {
    const std::int64_t ms = std::max<std::int64_t>(lease.count(), 0);
    constexpr std::int64_t million = 1'000'000;
    // Split so that neither product overflows for any lease a clock can express.
    const std::int64_t share = (ms / million) * parts_per_million +
                               ((ms % million) * parts_per_million + million - 1) / million;
    return std::chrono::milliseconds(share) + floor;
  }
};

/// One node's grant: when the attempt that took it was sent (the server's lease starts no
/// earlier, whatever the network did after) and the lease the server set.
struct node_grant {
  std::chrono::steady_clock::time_point sent;
  std::chrono::milliseconds lease;
};

/// Until when one grant is believed: its send time plus its lease, less the drift.
constexpr std::chrono::steady_clock::time_point believed_until(const node_grant& grant,
                                                               const drift_policy& drift) noexcept {
  return grant.sent + grant.lease - drift.of(grant.lease);
}

/// Until when `grants` exclude everyone else: the `quorum`-th latest of their belief ends (until
/// then at least `quorum` of them are believed). time_point::min() when there are fewer than
/// `quorum` grants: they exclude nobody. The validity left at `now` is this less `now`.
inline std::chrono::steady_clock::time_point valid_until(std::span<const node_grant> grants,
                                                         std::size_t quorum,
                                                         const drift_policy& drift) {
  if (quorum == 0 || grants.size() < quorum) return std::chrono::steady_clock::time_point::min();
  std::vector<std::chrono::steady_clock::time_point> ends;
  ends.reserve(grants.size());
  for (const auto& g : grants) ends.push_back(believed_until(g, drift));
  std::nth_element(ends.begin(), ends.begin() + static_cast<std::ptrdiff_t>(quorum - 1), ends.end(),
                   std::greater<>());
  return ends[quorum - 1];
}

/// The votes of one round of attempts, one per node: whether a quorum is reached, or can no
/// longer be (so the round ends early instead of waiting for its stragglers).
class quorum_tally {
 public:
  /// A node's answer to the round's attempt.
  enum class vote : std::uint8_t {
    pending,  ///< not answered yet
    granted,  ///< taken (or re-entered) for this owner
    refused,  ///< held by another owner
    failed,   ///< no answer the lock can count: an error, a lost connection, the round's bound
  };

  /// A round over `nodes` nodes, every vote pending.
  explicit quorum_tally(std::size_t nodes) : votes_(nodes, vote::pending) {}

  /// Records (or replaces) node `i`'s vote.
  void record(std::size_t i, vote v) { votes_.at(i) = v; }
  /// Node `i`'s vote.
  vote at(std::size_t i) const { return votes_.at(i); }

  std::size_t nodes() const noexcept { return votes_.size(); }
  std::size_t quorum() const noexcept { return quorum_of(votes_.size()); }
  /// How many nodes voted `v`.
  std::size_t count(vote v) const noexcept {
    return static_cast<std::size_t>(std::count(votes_.begin(), votes_.end(), v));
  }
  /// A majority granted.
  bool reached() const noexcept { return count(vote::granted) >= quorum(); }
  /// Not even the pending votes could make a majority now.
  bool hopeless() const noexcept { return count(vote::granted) + count(vote::pending) < quorum(); }

 private:
  std::vector<vote> votes_;
};

}  // namespace rlock::detail
