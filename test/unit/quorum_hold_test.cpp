// What a quorum lock's holder believes (src/quorum/quorum_hold.hpp): renewals confirmed on a
// majority keep it; fewer, and it stops believing before the validity it last had ends; a node
// that lost the key is taken again while a majority holds, and the hold is lost at once when not.
#include "quorum/quorum_hold.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace quorum_hold_test {

using namespace std::chrono_literals;
using rlock::detail::drift_policy;
using rlock::detail::quorum_hold;
using clock_type = std::chrono::steady_clock;
using step = quorum_hold::step;

const clock_type::time_point t0 = clock_type::time_point(100s);

quorum_hold hold_of(std::size_t nodes, rlock::detail::node_set held) {
  return quorum_hold(std::vector<std::chrono::milliseconds>(nodes, 30s), drift_policy{}, held, t0);
}

TEST(quorum_hold, renewals_confirmed_on_a_majority_move_the_deadline) {
  auto h = hold_of(3, 0b111);
  EXPECT_EQ(h.valid_until(), t0 + 30s - 302ms);
  EXPECT_EQ(h.deadline(), t0 + 30s - 307ms);
  h.on_confirmed(0, t0 + 10s);
  EXPECT_EQ(h.deadline(), t0 + 30s - 307ms);  // one node renewed: a majority still ends there
  h.on_confirmed(2, t0 + 10s);
  EXPECT_EQ(h.deadline(), t0 + 40s - 307ms);
  h.on_confirmed(2, t0 + 5s);  // an older confirmation changes nothing
  EXPECT_EQ(h.deadline(), t0 + 40s - 307ms);
  EXPECT_FALSE(h.check(t0 + 39s));
}

TEST(quorum_hold, without_a_majority_of_renewals_it_stops_believing_before_the_validity_ends) {
  auto h = hold_of(5, 0b11111);
  h.on_confirmed(0, t0 + 10s);
  h.on_confirmed(1, t0 + 10s);  // two of five renewed: not a majority
  const auto until = h.valid_until();
  EXPECT_EQ(until, t0 + 30s - 302ms);
  EXPECT_FALSE(h.check(h.deadline() - 1ms));
  EXPECT_TRUE(h.check(h.deadline()));
  EXPECT_LT(h.deadline(), until);
  EXPECT_TRUE(h.lost());
  EXPECT_EQ(h.valid_until(), clock_type::time_point::min());
}

TEST(quorum_hold, a_node_that_lost_the_key_is_taken_again_while_a_majority_holds) {
  auto h = hold_of(3, 0b111);
  EXPECT_EQ(h.on_node_lost(1), step::retake);
  EXPECT_EQ(h.held(), 0b101u);
  EXPECT_FALSE(h.lost());
  h.on_retaken(1, true, t0 + 12s);
  EXPECT_EQ(h.held(), 0b111u);
  h.on_confirmed(0, t0 + 12s);
  EXPECT_EQ(h.deadline(), t0 + 42s - 307ms);  // nodes 0 and 1 run from 12 s now
  EXPECT_EQ(h.on_node_lost(1), step::retake);
  h.on_retaken(1, false, t0 + 13s);  // busy or unreachable: it stays out
  EXPECT_EQ(h.held(), 0b101u);
  EXPECT_EQ(h.on_node_lost(1), step::none);  // not held: nothing
}

TEST(quorum_hold, is_lost_at_once_when_fewer_than_a_majority_hold) {
  auto h = hold_of(3, 0b011);  // won with two of three
  EXPECT_EQ(h.on_node_lost(0), step::lost);
  EXPECT_TRUE(h.lost());
  EXPECT_EQ(h.on_node_lost(1), step::none);
  h.on_retaken(0, true, t0 + 1s);  // too late: a lost hold stays lost
  EXPECT_TRUE(h.lost());
  EXPECT_TRUE(hold_of(3, 0b001).lost());  // never a majority
}

}  // namespace quorum_hold_test
