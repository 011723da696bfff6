// The subscription set without a server: what to send, when a channel is active, what to replay.
#include "session/node/subscription_set.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

using rlock::detail::subscription_set;
using action = subscription_set::action;

TEST(subscription_set, first_want_subscribes_and_the_confirmation_activates) {
  subscription_set s;
  EXPECT_EQ(s.want("a", true), action::subscribe);
  EXPECT_EQ(s.want("a", true), action::none);  // already asked for
  EXPECT_FALSE(s.active("a"));
  EXPECT_TRUE(s.on_subscribed("a"));
  EXPECT_TRUE(s.active("a"));
}

TEST(subscription_set, unwant_unsubscribes_and_the_confirmation_forgets) {
  subscription_set s;
  s.want("a", true);
  s.on_subscribed("a");
  EXPECT_EQ(s.unwant("a", true), action::unsubscribe);
  EXPECT_FALSE(s.active("a"));
  EXPECT_EQ(s.size(), 1u);  // the UNSUBSCRIBE is still outstanding
  s.on_unsubscribed("a");
  EXPECT_EQ(s.size(), 0u);
}

TEST(subscription_set, only_the_last_confirmation_of_a_quick_sequence_activates) {
  subscription_set s;
  EXPECT_EQ(s.want("a", true), action::subscribe);
  EXPECT_EQ(s.unwant("a", true), action::unsubscribe);
  EXPECT_EQ(s.want("a", true), action::subscribe);
  EXPECT_FALSE(s.on_subscribed("a"));  // the first SUBSCRIBE's: two commands still out
  s.on_unsubscribed("a");
  EXPECT_FALSE(s.active("a"));
  EXPECT_TRUE(s.on_subscribed("a"));
  EXPECT_TRUE(s.active("a"));
}

TEST(subscription_set, a_refusal_is_reported_and_leaving_needs_no_unsubscribe) {
  subscription_set s;
  s.want("a", true);
  EXPECT_TRUE(s.on_refused("a"));
  EXPECT_FALSE(s.active("a"));
  EXPECT_EQ(s.unwant("a", true), action::none);  // the server never subscribed
  EXPECT_EQ(s.size(), 0u);
}

TEST(subscription_set, a_disconnect_keeps_wanted_channels_for_the_replay) {
  subscription_set s;
  s.want("kept", true);
  s.on_subscribed("kept");
  s.want("leaving", true);
  s.on_subscribed("leaving");
  s.unwant("leaving", true);  // UNSUBSCRIBE in flight when the connection dies
  s.want("pending", true);    // SUBSCRIBE in flight
  s.on_disconnect();
  EXPECT_FALSE(s.active("kept"));
  EXPECT_EQ(s.want("offline", false), action::none);  // nothing is sent while down
  auto replay = s.replay();
  std::sort(replay.begin(), replay.end());
  EXPECT_EQ(replay, (std::vector<std::string>{"kept", "offline", "pending"}));
  EXPECT_TRUE(s.replay().empty());  // marked sent
  EXPECT_TRUE(s.on_subscribed("kept"));
  EXPECT_TRUE(s.active("kept"));
  EXPECT_FALSE(s.wanted("leaving"));
}

TEST(subscription_set, confirmations_for_unknown_channels_are_ignored) {
  subscription_set s;
  EXPECT_FALSE(s.on_subscribed("nobody"));
  s.on_unsubscribed("nobody");
  EXPECT_FALSE(s.on_refused("nobody"));
  EXPECT_EQ(s.size(), 0u);
}

}  // namespace

namespace {

TEST(subscription_set, a_channel_the_server_dropped_is_subscribed_again_by_the_next_want) {
  subscription_set s;
  s.want("a", true);
  s.on_subscribed("a");
  EXPECT_TRUE(s.on_dropped("a"));  // still wanted
  EXPECT_FALSE(s.active("a"));
  // Here again (standalone), or elsewhere after an unwant (Cluster: the slot's new owner).
  EXPECT_EQ(s.want("a", true), action::subscribe);
  s.on_subscribed("a");
  EXPECT_TRUE(s.active("a"));
  EXPECT_TRUE(s.on_dropped("a"));
  EXPECT_EQ(s.unwant("a", true), action::none);  // not subscribed on the server: nothing to send
  EXPECT_EQ(s.size(), 0u);
  EXPECT_FALSE(s.on_dropped("never-wanted"));
}

}  // namespace
