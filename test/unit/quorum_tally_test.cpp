// The quorum arithmetic (src/quorum/quorum_tally.hpp): majorities, Redlock's drift, the validity
// of a set of grants, and a round's votes.
#include "quorum/quorum_tally.hpp"

#include <gtest/gtest.h>

#include <array>
#include <chrono>

namespace quorum_tally_test {

using namespace std::chrono_literals;
using rlock::detail::drift_policy;
using rlock::detail::node_grant;
using rlock::detail::quorum_of;
using rlock::detail::quorum_tally;
using clock_type = std::chrono::steady_clock;
using vote = quorum_tally::vote;

const clock_type::time_point t0 = clock_type::time_point(100s);

TEST(quorum_tally, a_majority_is_more_than_half_and_two_majorities_share_a_node) {
  const std::array<std::size_t, 7> expected{1, 2, 2, 3, 3, 4, 4};
  for (std::size_t n = 1; n <= expected.size(); ++n) {
    EXPECT_EQ(quorum_of(n), expected[n - 1]) << n;
    EXPECT_GT(2 * quorum_of(n), n) << n;  // two majorities overlap
  }
}

TEST(quorum_tally, the_drift_is_one_percent_of_the_lease_plus_two_milliseconds_rounded_up) {
  const drift_policy redlock;
  EXPECT_EQ(redlock.of(10s), 102ms);
  EXPECT_EQ(redlock.of(30s), 302ms);
  EXPECT_EQ(redlock.of(150ms), 4ms);  // 1.5 ms rounds up to 2
  EXPECT_EQ(redlock.of(1ms), 3ms);
  EXPECT_EQ(redlock.of(0ms), 2ms);
  EXPECT_EQ(redlock.of(-5ms), 2ms);
  const drift_policy tighter{.parts_per_million = 1'000, .floor = 0ms};
  EXPECT_EQ(tighter.of(10s), 10ms);
  // No overflow for the longest lease a clock can express.
  EXPECT_GT(redlock.of(std::chrono::milliseconds::max() / 2), 0ms);
}

TEST(quorum_tally, a_grant_is_believed_from_its_send_for_its_lease_less_the_drift) {
  const drift_policy redlock;
  EXPECT_EQ(believed_until(node_grant{t0, 10s}, redlock), t0 + 10s - 102ms);
}

TEST(quorum_tally, grants_exclude_others_until_the_quorumth_latest_belief_ends) {
  const drift_policy none{.parts_per_million = 0, .floor = 0ms};
  // Three nodes granted at different times with different leases: two of three are believed
  // until the second latest end.
  const std::array<node_grant, 3> grants{node_grant{t0, 10s}, node_grant{t0 + 1s, 10s},
                                         node_grant{t0 + 2s, 5s}};
  EXPECT_EQ(valid_until(grants, quorum_of(3), none), t0 + 10s);
  // Of five nodes, three granted: the validity is the earliest of them (all three are needed).
  EXPECT_EQ(valid_until(grants, quorum_of(5), none), t0 + 7s);
  // Fewer grants than a quorum exclude nobody.
  EXPECT_EQ(valid_until(std::span(grants).first(2), quorum_of(5), none),
            clock_type::time_point::min());
  // With Redlock's drift, as published: lease - elapsed - drift.
  const std::array<node_grant, 2> same{node_grant{t0, 10s}, node_grant{t0, 10s}};
  EXPECT_EQ(valid_until(same, quorum_of(3), drift_policy{}) - (t0 + 40ms), 10s - 40ms - 102ms);
}

TEST(quorum_tally, a_round_is_won_by_a_majority_and_lost_as_soon_as_none_is_possible) {
  quorum_tally round(5);
  EXPECT_EQ(round.quorum(), 3u);
  EXPECT_FALSE(round.reached());
  EXPECT_FALSE(round.hopeless());
  round.record(0, vote::granted);
  round.record(1, vote::refused);
  round.record(2, vote::failed);
  EXPECT_FALSE(round.hopeless());  // nodes 3 and 4 could still grant
  round.record(3, vote::refused);
  EXPECT_TRUE(round.hopeless());   // 1 granted + 1 pending < 3
  round.record(3, vote::granted);  // a vote replaced (a reconciled answer)
  round.record(4, vote::granted);
  EXPECT_TRUE(round.reached());
  EXPECT_FALSE(round.hopeless());
  EXPECT_EQ(round.count(vote::granted), 3u);
  EXPECT_EQ(round.count(vote::pending), 0u);
  EXPECT_EQ(round.at(2), vote::failed);
  EXPECT_THROW(round.record(5, vote::granted), std::out_of_range);
}

}  // namespace quorum_tally_test
