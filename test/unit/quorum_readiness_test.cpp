// When a quorum waiter retries (src/quorum/quorum_readiness.hpp): pushed unlocks, holders whose
// time ran out, reconnects; never on a timer that nothing set.
#include "quorum/quorum_readiness.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace quorum_readiness_test {

using namespace std::chrono_literals;
using rlock::detail::quorum_readiness;
using clock_type = std::chrono::steady_clock;
using vote = rlock::detail::quorum_tally::vote;
using state = quorum_readiness::node_state;

const clock_type::time_point t0 = clock_type::time_point(100s);

TEST(quorum_readiness, retries_once_enough_nodes_published_an_unlock) {
  quorum_readiness r(3);
  r.after_round(0, vote::refused, t0 + 10s);
  r.after_round(1, vote::refused, t0 + 10s);
  r.after_round(2, vote::granted, {});  // free, given back
  EXPECT_FALSE(r.worth_a_round(t0));
  EXPECT_EQ(r.next_expiry(t0), t0 + 10s);
  r.on_unlock_message(2);  // a node already ready: nothing changes
  EXPECT_FALSE(r.worth_a_round(t0));
  r.on_unlock_message(1);
  EXPECT_EQ(r.state(1), state::ready);
  EXPECT_TRUE(r.worth_a_round(t0));
  EXPECT_EQ(r.next_expiry(t0), t0);
}

TEST(quorum_readiness, retries_when_enough_holders_ran_out_without_a_word) {
  quorum_readiness r(5);                      // a majority is 3
  r.after_round(0, vote::granted, {}, true);  // kept by this waiter
  r.after_round(1, vote::refused, t0 + 30ms);
  r.after_round(2, vote::refused, t0 + 10ms);
  r.after_round(3, vote::refused, t0 + 20ms);
  r.after_round(4, vote::failed, {});
  EXPECT_EQ(r.state(0), state::held);
  // Held 1; two more needed: the second earliest expiry.
  EXPECT_EQ(r.next_expiry(t0), t0 + 20ms);
  EXPECT_FALSE(r.worth_a_round(t0 + 19ms));
  EXPECT_TRUE(r.worth_a_round(t0 + 20ms));
}

TEST(quorum_readiness, unreachable_nodes_count_only_after_their_subscription_is_confirmed_again) {
  quorum_readiness r(3);
  r.after_round(0, vote::failed, {});
  r.after_round(1, vote::failed, {});
  r.after_round(2, vote::refused, t0 + 5ms);
  EXPECT_EQ(r.next_expiry(t0), clock_type::time_point::max());  // only a reconnect helps
  r.on_unlock_message(0);  // an unreachable node's word does not count
  EXPECT_EQ(r.state(0), state::unreachable);
  r.on_subscribed(0);
  EXPECT_EQ(r.state(0), state::ready);
  EXPECT_EQ(r.next_expiry(t0), t0 + 5ms);
  r.on_connection_lost(0);
  EXPECT_EQ(r.state(0), state::unreachable);
  EXPECT_FALSE(r.worth_a_round(t0 + 1s));
}

TEST(quorum_readiness, a_held_node_stays_held_through_its_connections_events) {
  quorum_readiness r(3);
  r.after_round(0, vote::granted, {}, true);
  r.on_connection_lost(0);
  r.on_subscribed(0);
  EXPECT_EQ(r.state(0), state::held);
}

}  // namespace quorum_readiness_test
