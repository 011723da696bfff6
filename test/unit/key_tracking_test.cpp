// Server-assisted key tracking, sans I/O (src/session/node/key_tracking.hpp,
// src/script/loaded_source.hpp): which servers are asked for it, what an invalidation push
// says, and the read that keeps a held key tracked after the script's own writes.
#include "session/node/key_tracking.hpp"

#include "resp3/value.hpp"
#include "script/loaded_source.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace {

using rlock::detail::read_invalidation;
using rlock::detail::tracking_supported;
namespace resp3 = rlock::detail::resp3;

TEST(key_tracking, needs_a_server_that_keeps_noloop_inside_scripts) {
  EXPECT_FALSE(tracking_supported("6.2.14"));
  EXPECT_FALSE(tracking_supported("7.0.0"));
  EXPECT_FALSE(tracking_supported("7.0.4"));
  EXPECT_TRUE(tracking_supported("7.0.5"));
  EXPECT_TRUE(tracking_supported("7.0.15"));
  EXPECT_TRUE(tracking_supported("7.2.4"));
  EXPECT_TRUE(tracking_supported("7.4.1"));
  EXPECT_TRUE(tracking_supported("8.0.1"));  // Valkey answers its own version
  for (const char* bad : {"", "7", "7.0", "seven", "7.x.5", "-1.0.0", "7..5"}) {
    EXPECT_FALSE(tracking_supported(bad)) << bad;
  }
}

resp3::value blob(std::string s) {
  resp3::value v;
  v.type = resp3::type::blob_string;
  v.str = std::move(s);
  return v;
}

TEST(key_tracking, reads_an_invalidation_of_keys_or_of_everything) {
  resp3::value push;
  push.type = resp3::type::push;
  push.elements.push_back(blob("invalidate"));
  resp3::value keys;
  keys.type = resp3::type::array;
  keys.elements.push_back(blob("a"));
  keys.elements.push_back(blob("{b}c"));
  push.elements.push_back(keys);
  auto inv = read_invalidation(push);
  EXPECT_TRUE(inv.is_one);
  EXPECT_FALSE(inv.all);
  ASSERT_EQ(inv.keys.size(), 2u);
  EXPECT_EQ(inv.keys[1], "{b}c");
  // nil: a FLUSHALL (everything this connection read).
  push.elements[1] = resp3::value{};
  push.elements[1].type = resp3::type::null;
  inv = read_invalidation(push);
  EXPECT_TRUE(inv.is_one && inv.all && inv.keys.empty());
  // Another push (a message) is not one.
  push.elements[0] = blob("message");
  EXPECT_FALSE(read_invalidation(push).is_one);
}

TEST(key_tracking, acquires_and_renewals_read_their_keys_after_their_writes) {
  using rlock::detail::script;
  const auto acquire = rlock::detail::loaded_source(script::acquire);
  EXPECT_NE(acquire.find(rlock::detail::script_source(script::acquire)), std::string_view::npos);
  EXPECT_TRUE(acquire.ends_with("redis.call('exists', KEYS[1])\nreturn answer\n")) << acquire;
  const auto renew = rlock::detail::loaded_source(script::renew);
  EXPECT_NE(renew.find("for i = 1, #KEYS do redis.call('exists', KEYS[i]) end"),
            std::string_view::npos);
  // A release writes last: nothing to keep tracked.
  EXPECT_EQ(rlock::detail::loaded_source(script::release),
            rlock::detail::script_source(script::release));
}

}  // namespace
