// The slot map without a server: CLUSTER SHARDS decoding, MOVED updates, owners.
#include "session/cluster/slot_map.hpp"

#include "resp3/parser.hpp"
#include "support/resp3_values.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>

namespace {

using rlock::detail::slot_map;
namespace resp3 = rlock::detail::resp3;
using rlock::test::array;
using rlock::test::map;
using rlock::test::number;
using rlock::test::text;

resp3::value node(const std::string& id, std::int64_t port, const std::string& role,
                  const std::string& health = "online") {
  return map({{"id", text(id)},
              {"port", number(port)},
              {"tls-port", number(port + 1000)},
              {"ip", text("127.0.0.1")},
              {"endpoint", text("127.0.0.1")},
              {"role", text(role)},
              {"replication-offset", number(100)},
              {"health", text(health)}});
}

/// Three shards as Redis 7.0 answers CLUSTER SHARDS (slot ranges as start, end pairs).
resp3::value three_shards() {
  return array({
      map({{"slots", array({number(0), number(5460)})},
           {"nodes", array({node("a", 7001, "master"), node("d", 7004, "replica")})}}),
      map({{"slots", array({number(5461), number(10922)})},
           {"nodes", array({node("e", 7005, "replica"), node("b", 7002, "master")})}}),
      map({{"slots", array({number(10923), number(12000), number(12001), number(16383)})},
           {"nodes", array({node("c", 7003, "master"), node("f", 7006, "replica")})}}),
  });
}

TEST(slot_map, decodes_cluster_shards) {
  std::string why;
  auto m = slot_map::from_shards(three_shards(), false, why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ(m->covered(), 16384u);
  EXPECT_EQ(m->owner(0)->port, 7001);
  EXPECT_EQ(m->owner(5460)->port, 7001);
  EXPECT_EQ(m->owner(5461)->port, 7002);
  EXPECT_EQ(m->owner(16383)->port, 7003);
  EXPECT_EQ(m->owner(12000)->id, "c");
  EXPECT_EQ(m->masters(), "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003");
  EXPECT_TRUE(m->serves("127.0.0.1:7002"));
  EXPECT_FALSE(m->serves("127.0.0.1:7004"));  // a replica serves nothing
}

TEST(slot_map, tls_uses_the_tls_port) {
  std::string why;
  auto m = slot_map::from_shards(three_shards(), true, why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ(m->owner(0)->port, 8001);
}

TEST(slot_map, uncovered_slots_have_no_owner) {
  auto reply = three_shards();
  reply.elements.pop_back();  // the third shard is gone
  std::string why;
  auto m = slot_map::from_shards(reply, false, why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ(m->covered(), 10923u);
  EXPECT_EQ(m->owner(16000), nullptr);
}

TEST(slot_map, a_failed_master_loses_to_an_online_one) {
  auto reply = array({map(
      {{"slots", array({number(0), number(16383)})},
       {"nodes", array({node("old", 7001, "master", "fail"), node("new", 7004, "master")})}})});
  std::string why;
  auto m = slot_map::from_shards(reply, false, why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ(m->owner(42)->id, "new");
}

TEST(slot_map, moved_updates_one_slot_and_adds_the_node) {
  std::string why;
  auto m = slot_map::from_shards(three_shards(), false, why);
  ASSERT_TRUE(m);
  const slot_map before = *m;
  EXPECT_TRUE(m->move(100, "127.0.0.1", 7009));
  EXPECT_FALSE(m->move(100, "127.0.0.1", 7009));  // already there
  EXPECT_EQ(m->owner(100)->port, 7009);
  EXPECT_EQ(m->owner(101)->port, 7001);
  EXPECT_FALSE(m->same_owners(before));
  EXPECT_TRUE(m->move(100, "127.0.0.1", 7001));
  EXPECT_TRUE(m->same_owners(before));
}

TEST(slot_map, errors_and_bad_shapes_are_refused_with_words) {
  std::string why;
  resp3::value err;
  err.type = resp3::type::simple_error;
  err.str = "ERR This instance has cluster support disabled";
  EXPECT_FALSE(slot_map::from_shards(err, false, why));
  EXPECT_NE(why.find("cluster support disabled"), std::string::npos) << why;
  EXPECT_FALSE(slot_map::from_shards(text("hello"), false, why));
  auto bad = array({map(
      {{"slots", array({number(10), number(5)})}, {"nodes", array({node("a", 7001, "master")})}})});
  EXPECT_FALSE(slot_map::from_shards(bad, false, why));
  EXPECT_NE(why.find("bad slot range"), std::string::npos) << why;
  auto out_of_range = array({map({{"slots", array({number(0), number(16384)})},
                                  {"nodes", array({node("a", 7001, "master")})}})});
  EXPECT_FALSE(slot_map::from_shards(out_of_range, false, why));
}

// --- replies captured from real servers (fixtures/cluster/README.md) ---------------------

/// The command's answer in a captured file: the last of its values (HELLO's comes first).
resp3::value captured(const std::string& file) {
  std::ifstream in(std::string(RLOCK_TEST_FIXTURES) + "/cluster/" + file, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_FALSE(bytes.empty()) << file;
  rlock::detail::resp3::parser parser;
  parser.feed(bytes);
  resp3::value last;
  std::error_code ec;
  int values = 0;
  while (auto v = parser.next(ec)) {
    last = std::move(*v);
    ++values;
  }
  EXPECT_FALSE(ec) << file << ": " << ec.message();
  EXPECT_EQ(values, 2) << file;
  return last;
}

TEST(slot_map, redis_7_4_shards_cover_every_slot_before_a_failover) {
  std::string why;
  auto m = slot_map::from_shards(captured("redis-7.4.1-shards.resp3"), false, why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ(m->covered(), 16384u);
  EXPECT_EQ(m->owner(0)->port, 31000);
}

TEST(slot_map, redis_7_4_after_a_failover_needs_cluster_slots_for_the_promoted_master) {
  // The failed master (31000) and its promoted replica (31005) in one shard, whose slots 7.4
  // reads from the failed one: none. CLUSTER SLOTS names 31005 for 0-5460.
  std::string why;
  auto m = slot_map::from_shards(captured("redis-7.4.1-failover-shards.resp3"), false, why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ(m->covered(), 16384u - 5461u);
  EXPECT_EQ(m->owner(0), nullptr);
  EXPECT_EQ(m->owner(5461)->port, 31001);  // the other shards stand
  auto by_slots = slot_map::from_slots(captured("redis-7.4.1-failover-slots.resp3"), why);
  ASSERT_TRUE(by_slots) << why;
  EXPECT_EQ(by_slots->covered(), 16384u);
  m->fill_unserved(*by_slots);
  EXPECT_EQ(m->covered(), 16384u);
  EXPECT_EQ(m->owner(0)->port, 31005);
  EXPECT_EQ(m->owner(5460)->port, 31005);
  EXPECT_FALSE(m->serves("127.0.0.1:31000"));
  EXPECT_EQ(m->masters(), "127.0.0.1:31001,127.0.0.1:31002,127.0.0.1:31005");
}

TEST(slot_map, redis_7_0_after_a_failover_names_the_promoted_master_itself) {
  // 7.0: the failed master is a shard of its own with no slots; the promoted replica a master
  // with them. CLUSTER SLOTS agrees.
  std::string why;
  auto m = slot_map::from_shards(captured("redis-7.0.15-failover-shards.resp3"), false, why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ(m->covered(), 16384u);
  EXPECT_EQ(m->owner(0)->port, 31103);
  EXPECT_FALSE(m->serves("127.0.0.1:31100"));
  auto by_slots = slot_map::from_slots(captured("redis-7.0.15-failover-slots.resp3"), why);
  ASSERT_TRUE(by_slots) << why;
  EXPECT_TRUE(m->same_owners(*by_slots));
}

TEST(slot_map, valkey_8_0_after_a_failover_lists_both_in_one_shard_with_its_slots) {
  // Valkey reads the shard's slots from a node that has them: the online master serves them.
  std::string why;
  auto m = slot_map::from_shards(captured("valkey-8.0.1-failover-shards.resp3"), false, why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ(m->covered(), 16384u);
  EXPECT_EQ(m->owner(0)->port, 31204);
  EXPECT_FALSE(m->serves("127.0.0.1:31200"));
  auto by_slots = slot_map::from_slots(captured("valkey-8.0.1-failover-slots.resp3"), why);
  ASSERT_TRUE(by_slots) << why;
  EXPECT_TRUE(m->same_owners(*by_slots));
}

TEST(slot_map, cluster_slots_bad_shapes_are_refused_and_unknown_endpoints_left_unserved) {
  std::string why;
  EXPECT_FALSE(slot_map::from_slots(resp3::error_reply("ERR unknown command"), why));
  EXPECT_NE(why.find("unknown command"), std::string::npos) << why;
  EXPECT_FALSE(slot_map::from_slots(number(3), why));
  EXPECT_FALSE(slot_map::from_slots(array({array({number(0), number(10)})}), why));
  EXPECT_FALSE(slot_map::from_slots(
      array({array({number(10), number(0), array({text("127.0.0.1"), number(7001)})})}), why));
  auto m = slot_map::from_slots(
      array({array({number(0), number(10), array({text("?"), number(7001), text("a")})}),
             array({number(11), number(20), array({text("127.0.0.1"), number(7002)})})}),
      why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ(m->owner(0), nullptr);
  EXPECT_EQ(m->owner(11)->port, 7002);
}

}  // namespace
