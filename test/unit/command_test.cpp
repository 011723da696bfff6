// Commands as values: one encoding, a route inside it, and a retry policy fixed by the kind.
#include "session/command.hpp"

#include "resp3/request.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <string_view>

namespace {

using rlock::detail::command;
using rlock::detail::command_kind;
using rlock::detail::if_unknown;
namespace resp3 = rlock::detail::resp3;

std::string encoded(std::initializer_list<std::string_view> args) {
  std::string out;
  resp3::append_command(out, args);
  return out;
}

TEST(command, encodes_name_keys_and_arguments_and_is_routed_by_the_first_key) {
  const command c(command_kind::query, "HGET", {"orders:{42}"}, {"owner:7"});
  EXPECT_EQ(c.payload(), encoded({"HGET", "orders:{42}", "owner:7"}));
  EXPECT_EQ(c.route(), "orders:{42}");
  EXPECT_EQ(c.answers(), 1);

  const std::array<std::string_view, 3> keys{"a", "b", "c"};
  const command del(command_kind::cleanup, "DEL", keys);
  EXPECT_EQ(del.payload(), encoded({"DEL", "a", "b", "c"}));
  EXPECT_EQ(del.route(), "a");
}

TEST(command, keys_are_binary_safe_in_the_route) {
  const std::string key("lock\r\n\0x", 8);
  const command c(command_kind::query, "GET", {key});
  EXPECT_EQ(c.route(), key);
  EXPECT_EQ(c.payload(), encoded({"GET", key}));
}

TEST(command, a_script_call_is_evalsha_with_its_key_count) {
  const std::array<std::string_view, 2> keys{"k1", "k2"};
  const std::array<std::string_view, 1> args{"30000"};
  const auto c = command::script(command_kind::acquire, "abc123", keys, args);
  EXPECT_EQ(c.payload(), encoded({"EVALSHA", "abc123", "2", "k1", "k2", "30000"}));
  EXPECT_EQ(c.route(), "k1");
}

TEST(command, a_command_that_follows_adds_an_answer_and_keeps_the_route) {
  const std::array<std::string_view, 1> keys{"lock"};
  auto c = command::script(command_kind::renew, "sha", keys, {});
  const std::string wait = encoded({"WAIT", "1", "200"});
  c.then(wait);
  EXPECT_EQ(c.answers(), 2);
  EXPECT_EQ(c.route(), "lock");
  EXPECT_EQ(c.payload(), encoded({"EVALSHA", "sha", "1", "lock"}) + wait);
  EXPECT_EQ(c.options({}).answers, 2);
}

TEST(command, a_keyless_command_goes_to_the_node_of_its_route) {
  const auto c = command::about(command_kind::load, "orders:1", "SCRIPT", {"LOAD", "return 1"});
  EXPECT_EQ(c.payload(), encoded({"SCRIPT", "LOAD", "return 1"}));
  EXPECT_EQ(c.route(), "orders:1");
  const auto raw = command::encoded(command_kind::query, "k", encoded({"PING"}));
  EXPECT_EQ(raw.route(), "k");
  EXPECT_EQ(raw.payload(), encoded({"PING"}));
}

TEST(command, only_an_acquire_is_never_written_twice) {
  // The fault model (docs/design/fault-model.md): an acquire whose answer was lost may have taken
  // the lock; the lock reconciles it. Every other kind is idempotent (or latched) and is written
  // again on the next connection.
  EXPECT_EQ(command(command_kind::acquire, "EVALSHA", {"k"}).options({}).unknown, if_unknown::fail);
  for (auto k : {command_kind::query, command_kind::renew, command_kind::release,
                 command_kind::force_release, command_kind::cleanup, command_kind::load}) {
    EXPECT_EQ(command(k, "X", {"k"}).options({}).unknown, if_unknown::retry) << static_cast<int>(k);
  }
}

}  // namespace
