// The slot map without a server: CLUSTER SHARDS decoding, MOVED updates, owners.
#include "session/slot_map.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

namespace {

using rlock::detail::slot_map;
namespace resp3 = rlock::detail::resp3;

resp3::value str(std::string s) {
  resp3::value v;
  v.type = resp3::type::blob_string;
  v.str = std::move(s);
  return v;
}
resp3::value num(std::int64_t n) {
  resp3::value v;
  v.type = resp3::type::number;
  v.integer = n;
  return v;
}
resp3::value map(std::initializer_list<std::pair<std::string, resp3::value>> kv) {
  resp3::value v;
  v.type = resp3::type::map;
  for (const auto& [k, val] : kv) {
    v.elements.push_back(str(k));
    v.elements.push_back(val);
  }
  return v;
}
resp3::value array(std::initializer_list<resp3::value> items) {
  resp3::value v;
  v.type = resp3::type::array;
  v.elements = items;
  return v;
}
resp3::value node(const std::string& id, std::int64_t port, const std::string& role,
                  const std::string& health = "online") {
  return map({{"id", str(id)},
              {"port", num(port)},
              {"tls-port", num(port + 1000)},
              {"ip", str("127.0.0.1")},
              {"endpoint", str("127.0.0.1")},
              {"role", str(role)},
              {"replication-offset", num(100)},
              {"health", str(health)}});
}

/// Three shards as Redis 7.0 answers CLUSTER SHARDS (slot ranges as start, end pairs).
resp3::value three_shards() {
  return array({
      map({{"slots", array({num(0), num(5460)})},
           {"nodes", array({node("a", 7001, "master"), node("d", 7004, "replica")})}}),
      map({{"slots", array({num(5461), num(10922)})},
           {"nodes", array({node("e", 7005, "replica"), node("b", 7002, "master")})}}),
      map({{"slots", array({num(10923), num(12000), num(12001), num(16383)})},
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
      {{"slots", array({num(0), num(16383)})},
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
  EXPECT_FALSE(slot_map::from_shards(str("hello"), false, why));
  auto bad = array(
      {map({{"slots", array({num(10), num(5)})}, {"nodes", array({node("a", 7001, "master")})}})});
  EXPECT_FALSE(slot_map::from_shards(bad, false, why));
  EXPECT_NE(why.find("bad slot range"), std::string::npos) << why;
  auto out_of_range = array({map(
      {{"slots", array({num(0), num(16384)})}, {"nodes", array({node("a", 7001, "master")})}})});
  EXPECT_FALSE(slot_map::from_shards(out_of_range, false, why));
}

}  // namespace
