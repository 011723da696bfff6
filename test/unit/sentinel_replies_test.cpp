// What sentinels and data nodes say about the master, decoded without a server.
#include "session/sentinel/sentinel_replies.hpp"

#include "support/resp3_values.hpp"

#include <gtest/gtest.h>

namespace {

namespace resp3 = rlock::detail::resp3;
using rlock::detail::master_address;
using rlock::detail::parse_switch_master;
using rlock::detail::says_master;
using rlock::test::array;
using rlock::test::text;

TEST(sentinel_replies, a_master_address_is_host_and_port) {
  std::string why;
  auto where = master_address(array({text("10.0.0.7"), text("6380")}), why);
  ASSERT_TRUE(where);
  EXPECT_EQ(where->host, "10.0.0.7");
  EXPECT_EQ(where->port, 6380);
}

TEST(sentinel_replies, anything_else_is_no_address_with_a_reason) {
  std::string why;
  EXPECT_FALSE(master_address(resp3::value{}, why));  // null: an unknown name
  EXPECT_NE(why.find("does not know"), std::string::npos);
  resp3::value error;
  error.type = resp3::type::simple_error;
  error.str = "NOAUTH Authentication required.";
  EXPECT_FALSE(master_address(error, why));
  EXPECT_EQ(why, error.str);
  for (const auto& bad :
       {array({text("h")}), array({text("h"), text("0")}), array({text("h"), text("65536")}),
        array({text("h"), text("63x")}), array({text(""), text("6379")}), text("h:6379")}) {
    why.clear();
    EXPECT_FALSE(master_address(bad, why));
    EXPECT_FALSE(why.empty());
  }
}

TEST(sentinel_replies, role_must_say_master) {
  std::string why;
  resp3::value offset;
  offset.type = resp3::type::number;
  EXPECT_TRUE(says_master(array({text("master"), offset, array({})}), why));
  EXPECT_FALSE(says_master(array({text("slave"), text("127.0.0.1"), offset}), why));
  EXPECT_NE(why.find("slave"), std::string::npos);
  EXPECT_FALSE(says_master(array({}), why));
  EXPECT_FALSE(says_master(text("master"), why));
}

TEST(sentinel_replies, switch_master_events_name_the_master_and_its_new_address) {
  auto e = parse_switch_master("mymaster 127.0.0.1 6379 127.0.0.1 6380");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->name, "mymaster");
  EXPECT_EQ(e->to.host, "127.0.0.1");
  EXPECT_EQ(e->to.port, 6380);
  EXPECT_FALSE(parse_switch_master(""));
  EXPECT_FALSE(parse_switch_master("mymaster 127.0.0.1 6379 127.0.0.1"));
  EXPECT_FALSE(parse_switch_master("mymaster 127.0.0.1 6379 127.0.0.1 port"));
  EXPECT_FALSE(parse_switch_master("a b c d e f"));
}

}  // namespace
