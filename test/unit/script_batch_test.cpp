// Batches (script_batch.hpp, script_registry::async_run_batched): the arguments and the answer's
// split without a server, then acquisitions and releases started together going out as one
// script call of an engine over a fake session, and each getting its own share of the answer,
// or reconciling on its own when the answer is lost.
#include "script/script_batch.hpp"

#include "rlock/error.hpp"
#include "support/engine_shell.hpp"
#include "support/resp3_values.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace rd = rlock::detail;
using rlock::test::array;
using rlock::test::completion;
using rlock::test::number;
using rlock::test::text;
using namespace std::chrono_literals;

rd::resp3::value nil() { return {}; }
rd::resp3::value error(std::string t) { return rd::resp3::error_reply(std::move(t)); }

TEST(script_batch, the_arguments_count_every_call_then_list_their_arguments) {
  rd::batch_arguments b;
  const std::array<std::string_view, 1> k1{"a"};
  const std::array<std::string_view, 2> a1{"30000", "f"};
  const std::array<std::string_view, 2> k2{"b", "c"};
  const std::array<std::string_view, 1> a2{"x"};
  b.add(k1, a1);
  b.add(k2, a2);
  EXPECT_EQ(b.calls(), 2u);
  EXPECT_EQ(b.keys(), (std::vector<std::string_view>{"a", "b", "c"}));
  EXPECT_EQ(b.args(), (std::vector<std::string_view>{"2", "1", "2", "2", "1", "30000", "f", "x"}));
  EXPECT_EQ(b.call_args(), (std::vector<std::string_view>{"30000", "f", "x"}));
}

TEST(script_batch, the_source_wraps_the_script_unchanged) {
  const auto src = rd::batch_source(rd::script::acquire);
  EXPECT_NE(src.find(rd::script_source(rd::script::acquire)), std::string::npos);
  EXPECT_TRUE(src.starts_with("local function run(KEYS, ARGV)"));
}

TEST(script_batch, each_call_gets_its_reply_its_error_or_nil) {
  auto replies = rd::split_batch_reply(
      array({nil(), number(250), error("ERR WRONGTYPE no hash"), array({number(-1), number(7)})}),
      4);
  ASSERT_EQ(replies.size(), 4u);
  EXPECT_FALSE(replies[0].ec);
  EXPECT_TRUE(replies[0].value.is_null());
  EXPECT_FALSE(replies[1].ec);
  EXPECT_EQ(replies[1].value.integer, 250);
  EXPECT_EQ(replies[2].ec, rlock::errc::server_error);
  EXPECT_EQ(replies[2].value.str, "ERR WRONGTYPE no hash");
  EXPECT_FALSE(replies[3].ec);  // a kind's array reply (the fenced lock's) as it is
  EXPECT_EQ(replies[3].value.elements.size(), 2u);
}

TEST(script_batch, a_malformed_answer_is_a_protocol_error_for_the_calls_it_concerns) {
  for (auto& r : rd::split_batch_reply(array({array({})}), 2)) {
    EXPECT_EQ(r.ec, rlock::errc::protocol_error);
  }
  for (auto& r : rd::split_batch_reply(number(1), 1)) EXPECT_EQ(r.ec, rlock::errc::protocol_error);
}

/// Two owners of two locks, on one engine.
struct two_locks : rlock::test::engine_shell {
  std::shared_ptr<rd::lock_state> a = owner("A"), b = owner("B");
  completion out_a, out_b;

  /// One attempt each, started in one turn: batched together.
  void attempt_both() {
    acquire(a, 0ms, out_a, nullptr, true);
    acquire(b, 0ms, out_b, nullptr, true);
  }

  /// Both were told: A taken, B not (busy, without an error).
  void expect_only_a_taken() {
    ASSERT_TRUE(run_until([&] { return out_a.done && out_b.done; }));
    EXPECT_TRUE(out_a.acquired);
    EXPECT_FALSE(out_b.acquired);
    EXPECT_FALSE(out_b.error);
    EXPECT_EQ(a->local_holds, 1u);
    EXPECT_EQ(b->local_holds, 0u);
  }

  /// Runs until the batch script is loaded (answered with a made-up SHA) and its call is
  /// pending; that call's index.
  std::size_t batch_call() {
    const auto load = next_request();
    EXPECT_EQ(server().requests.at(load).words().at(0), "SCRIPT");
    server().answer(load, text("batch-sha"));
    const auto call = next_request();
    EXPECT_EQ(server().requests.at(call).words().at(1), "batch-sha");
    return call;
  }
};

TEST(script_batch, attempts_started_together_are_one_script_call_and_each_gets_its_answer) {
  two_locks t;
  t.attempt_both();
  const auto call = t.batch_call();
  const auto words = t.server().requests.at(call).words();
  // EVALSHA sha 2 A B 2 1 2 1 2 <lease> <field> <lease> <field>
  ASSERT_GE(words.size(), 7u);
  EXPECT_EQ(words[2], "2");
  EXPECT_EQ(words[3], "A");
  EXPECT_EQ(words[4], "B");
  EXPECT_EQ(words[5], "2");
  EXPECT_TRUE(t.server().pending().size() == 1u) << "one request for both";
  t.server().answer(call, array({nil(), number(30'000)}));  // A free, B busy
  t.expect_only_a_taken();
}

TEST(script_batch, releases_started_together_are_one_script_call) {
  two_locks t;
  t.attempt_both();
  t.server().answer(t.batch_call(), array({nil(), nil()}));
  ASSERT_TRUE(t.run_until([&] { return t.out_a.done && t.out_b.done; }));
  ASSERT_TRUE(t.out_a.acquired && t.out_b.acquired);
  completion released_a, released_b;
  t.release(t.a, released_a, true);
  t.release(t.b, released_b, true);
  const auto load = t.next_request();  // the release script's batch: loaded on first use
  EXPECT_EQ(t.server().requests.at(load).words().at(0), "SCRIPT");
  t.server().answer(load, text("release-batch-sha"));
  const auto call = t.next_request();
  EXPECT_EQ(t.server().requests.at(call).words().at(1), "release-batch-sha");
  EXPECT_EQ(t.server().requests.at(call).kind, rd::command_kind::release) << "written again";
  EXPECT_EQ(t.server().pending().size(), 1u);
  t.server().answer(call, array({number(1), number(1)}));
  ASSERT_TRUE(t.run_until([&] { return released_a.done && released_b.done; }));
  EXPECT_FALSE(released_a.error);
  EXPECT_FALSE(released_b.error);
  EXPECT_EQ(t.a->local_holds, 0u);
  EXPECT_EQ(t.b->local_holds, 0u);
}

TEST(script_batch, a_lost_answer_is_reconciled_by_each_call_on_its_own) {
  two_locks t;
  t.attempt_both();
  const auto call = t.batch_call();
  // Written, and the connection died: each attempt asks whether it ran.
  t.server().fail(call, make_error_code(rlock::errc::connection_lost));
  ASSERT_TRUE(t.run_until([&] { return t.server().pending().size() == 2u; }));
  for (const auto i : t.server().pending()) {
    const auto words = t.server().requests.at(i).words();
    ASSERT_EQ(words.at(0), "HGET");
    // A's ran (its owner holds it once), B's did not.
    t.server().answer(i, words.at(1) == "A" ? text("1") : nil());
  }
  // B's attempt did not run: it is tried again (alone now), and finds the lock busy.
  const auto again = t.next_request();
  ASSERT_TRUE(t.is_script(again));
  EXPECT_EQ(t.server().requests.at(again).words().at(3), "B");
  t.server().answer(again, number(30'000));
  t.expect_only_a_taken();
}

TEST(script_batch, an_error_for_one_call_fails_that_call_only) {
  two_locks t;
  t.attempt_both();
  t.server().answer(t.batch_call(),
                    array({error("WRONGTYPE Operation against a key holding the wrong kind of "
                                 "value"),
                           nil()}));
  ASSERT_TRUE(t.run_until([&] { return t.out_a.done && t.out_b.done; }));
  EXPECT_FALSE(t.out_a.acquired);
  EXPECT_EQ(t.out_a.error, rlock::errc::server_error);
  EXPECT_TRUE(t.out_b.acquired);
  EXPECT_FALSE(t.out_b.error);
}

TEST(script_batch, a_batch_answered_noscript_is_loaded_and_sent_again_once) {
  two_locks t;
  t.attempt_both();
  // The server lost its scripts (SCRIPT FLUSH), or is a cluster node the batch script has not
  // reached yet: nothing ran, so the batch is loaded there and sent again.
  t.server().answer(t.batch_call(), error("NOSCRIPT No matching script. Please use EVAL."));
  const auto load = t.next_request();
  EXPECT_EQ(t.server().requests.at(load).words().at(0), "SCRIPT");
  t.server().answer(load, text("batch-sha"));
  const auto again = t.next_request();
  EXPECT_EQ(t.server().requests.at(again).words().at(1), "batch-sha");
  t.server().answer(again, array({nil(), number(30'000)}));
  t.expect_only_a_taken();
}

TEST(script_batch, a_call_alone_in_its_batch_is_an_ordinary_call) {
  two_locks t;
  t.acquire(t.a, 0ms, t.out_a, nullptr, true);
  const auto call = t.next_request();
  EXPECT_TRUE(t.is_script(call)) << "the acquire script itself, not a batch";
  t.server().answer(call, nil());
  ASSERT_TRUE(t.run_until([&] { return t.out_a.done; }));
  EXPECT_TRUE(t.out_a.acquired);
}

}  // namespace
