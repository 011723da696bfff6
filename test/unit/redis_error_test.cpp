// Which rlock error a Redis error reply stands for (no server).
#include "session/redis_error.hpp"

#include <gtest/gtest.h>

namespace {

using rlock::errc;
using rlock::detail::errc_of_reply;

TEST(redis_error, acl_refusals_say_what_was_refused) {
  // Redis 7.0's words, for a command sent and from inside a script.
  EXPECT_EQ(errc_of_reply("NOPERM this user has no permissions to run the 'evalsha' command"),
            errc::command_not_permitted);
  EXPECT_EQ(errc_of_reply("NOPERM this user has no permissions to run the 'script|load' command"),
            errc::command_not_permitted);
  EXPECT_EQ(errc_of_reply("NOPERM this user has no permissions to access one of the keys used as "
                          "arguments"),
            errc::key_not_permitted);
  EXPECT_EQ(errc_of_reply("NOPERM this user has no permissions to access one of the channels "
                          "used as arguments"),
            errc::permission_denied);
  EXPECT_EQ(errc_of_reply("ERR The user executing the script can't publish to the channel "
                          "mentioned in the command script: ..."),
            errc::permission_denied);
  EXPECT_EQ(errc_of_reply("ERR The user executing the script can't access at least one of the "
                          "keys mentioned in the command script: ..."),
            errc::key_not_permitted);
  EXPECT_EQ(errc_of_reply("NOPERM this user has no permissions"), errc::permission_denied);
}

TEST(redis_error, credentials_and_everything_else) {
  EXPECT_EQ(errc_of_reply("WRONGPASS invalid username-password pair or user is disabled."),
            errc::auth_failed);
  EXPECT_EQ(errc_of_reply("NOAUTH Authentication required."), errc::auth_failed);
  EXPECT_EQ(errc_of_reply("WRONGTYPE Operation against a key holding the wrong kind of value"),
            errc::server_error);
  EXPECT_EQ(errc_of_reply("ERR value is not an integer or out of range"), errc::server_error);
}

TEST(redis_error, a_lock_kinds_refusal_is_a_server_error_here) {
  // The session layer knows no lock words: the kind names its refusals (lock_kind_test).
  EXPECT_EQ(errc_of_reply("NON_REENTRANT_REACQUIRE"), errc::server_error);
  EXPECT_EQ(errc_of_reply("ERR WRITE_AFTER_READ ..."), errc::server_error);
}

}  // namespace
