// CRC16 and hash tags without a server (the server's own CLUSTER KEYSLOT is checked against
// many keys in cluster_test).
#include "session/cluster/key_slot.hpp"

#include <gtest/gtest.h>

namespace {

using rlock::detail::crc16;
using rlock::detail::hash_tag;
using rlock::detail::key_slot;

TEST(key_slot, crc16_matches_the_cluster_spec_reference) {
  // The cluster spec's reference value: CRC16 of "123456789" is 0x31C3.
  EXPECT_EQ(crc16("123456789"), 0x31C3);
  EXPECT_EQ(crc16(""), 0);
}

TEST(key_slot, known_slots) {
  // Values from redis-cli CLUSTER KEYSLOT on Redis 7.0.
  EXPECT_EQ(key_slot("foo"), 12182);
  EXPECT_EQ(key_slot("bar"), 5061);
  EXPECT_EQ(key_slot("somekey"), 11058);
}

TEST(key_slot, hash_tags_follow_the_first_brace_pair) {
  EXPECT_EQ(hash_tag("{user1000}.following"), "user1000");
  EXPECT_EQ(hash_tag("foo{}{bar}"), "foo{}{bar}");  // empty first tag: the whole key
  EXPECT_EQ(hash_tag("foo{{bar}}zap"), "{bar");
  EXPECT_EQ(hash_tag("foo{bar}{zap}"), "bar");
  EXPECT_EQ(hash_tag("foo{bar"), "foo{bar");  // unclosed: the whole key
  EXPECT_EQ(hash_tag("nobraces"), "nobraces");
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("{user1000}.followers"));
}

TEST(key_slot, a_lock_and_its_channel_latch_and_token_share_a_slot) {
  // Redisson's names wrap the lock key in braces.
  const std::string key = "orders:42";
  EXPECT_EQ(key_slot("redisson_lock__channel:{" + key + "}"), key_slot(key));
  EXPECT_EQ(key_slot("redisson_unlock_latch:{" + key + "}:0123abcd"), key_slot(key));
  EXPECT_EQ(key_slot("redisson_lock_token:{" + key + "}"), key_slot(key));
}

TEST(key_slot, binary_keys_are_hashed_byte_for_byte) {
  const std::string key("a\0b\xff", 4);
  EXPECT_LT(key_slot(key), 16384);
  EXPECT_NE(key_slot(key), key_slot("a"));
}

}  // namespace
