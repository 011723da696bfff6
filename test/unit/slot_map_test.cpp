// The slot map without a server: CLUSTER SHARDS decoding, MOVED updates, owners.
#include "session/slot_map.hpp"

#include "support/resp3_values.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
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

}  // namespace
