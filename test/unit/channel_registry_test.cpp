// The channel registry without a server: placement on the slot owner, moves after a map change.
#include "session/cluster/channel_registry.hpp"

#include <gtest/gtest.h>

namespace {

using rlock::detail::channel_registry;
using rlock::detail::key_slot;
using rlock::detail::slot_map;

TEST(channel_registry, places_each_channel_on_its_slots_owner_and_moves_it) {
  slot_map m;
  const std::string a = "redisson_lock__channel:{a}";
  const std::string b = "redisson_lock__channel:{b}";
  m.move(key_slot(a), "127.0.0.1", 7001);
  m.move(key_slot(b), "127.0.0.1", 7002);
  channel_registry r;
  r.want(a);
  r.want(b);
  auto moves = r.reconcile(m);
  ASSERT_EQ(moves.size(), 2u);
  EXPECT_EQ(r.placement(a), "127.0.0.1:7001");
  EXPECT_EQ(r.placement(b), "127.0.0.1:7002");
  EXPECT_TRUE(r.reconcile(m).empty());  // nothing changed

  m.move(key_slot(a), "127.0.0.1", 7003);  // resharded
  moves = r.reconcile(m);
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(moves[0].channel, a);
  EXPECT_EQ(moves[0].from, "127.0.0.1:7001");
  EXPECT_EQ(moves[0].to, "127.0.0.1:7003");
  EXPECT_EQ(r.placed_on("127.0.0.1:7003"), 1u);
  EXPECT_EQ(r.channels_on("127.0.0.1:7003"), std::vector<std::string>{a});
  EXPECT_TRUE(r.channels_on("127.0.0.1:7001").empty());
}

TEST(channel_registry, a_dropped_channel_is_placed_again_and_unwant_says_where_it_was) {
  slot_map m;
  const std::string a = "redisson_lock__channel:{a}";
  m.move(key_slot(a), "127.0.0.1", 7001);
  channel_registry r;
  r.want(a);
  r.reconcile(m);
  r.unplace(a);  // the node sent sunsubscribe
  EXPECT_EQ(r.placement(a), "");
  auto moves = r.reconcile(m);
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(moves[0].from, "");
  EXPECT_EQ(moves[0].to, "127.0.0.1:7001");
  EXPECT_EQ(r.unwant(a), "127.0.0.1:7001");
  EXPECT_FALSE(r.wanted(a));
  EXPECT_EQ(r.size(), 0u);
}

TEST(channel_registry, an_unserved_slot_leaves_its_channel_unplaced) {
  slot_map m;  // nothing covered
  channel_registry r;
  r.want("c");
  EXPECT_TRUE(r.reconcile(m).empty());
  EXPECT_EQ(r.placement("c"), "");
}

}  // namespace
