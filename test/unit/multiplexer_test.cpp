// The multiplexer without a server: requests in, bytes out, answers and pushes in, completions out.
#include "session/node/multiplexer.hpp"

#include "resp3/parser.hpp"
#include "rlock/error.hpp"
#include "support/resp3_values.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using rlock::detail::answer_kind;
using rlock::detail::clock_type;
using rlock::detail::if_unknown;
using rlock::detail::multiplexer;
using rlock::detail::request_options;
namespace resp3 = rlock::detail::resp3;
using namespace std::chrono_literals;
using rlock::test::text;

/// What one request's handler saw.
struct outcome {
  int calls = 0;
  std::error_code ec;
  resp3::value reply;
};

rlock::detail::reply_handler record_into(outcome& o) {
  return [&o](std::error_code ec, resp3::value v) {
    ++o.calls;
    o.ec = ec;
    o.reply = std::move(v);
  };
}

resp3::value error(std::string s) {
  resp3::value v;
  v.type = resp3::type::simple_error;
  v.str = std::move(s);
  return v;
}

resp3::value push(std::string kind, std::string channel, std::string third = "1") {
  resp3::value v;
  v.type = resp3::type::push;
  v.elements = {text(std::move(kind)), text(std::move(channel)), text(std::move(third))};
  return v;
}

std::string written(multiplexer& m, bool ready = true) {
  std::string out;
  m.prepare_write(out, ready, clock_type::now());
  return out;
}

TEST(multiplexer, replies_complete_requests_in_order) {
  multiplexer m;
  outcome a, b;
  m.add("A", answer_kind::reply, {}, {}, record_into(a));
  m.add("B", answer_kind::reply, {}, {}, record_into(b));
  EXPECT_EQ(written(m), "AB");
  auto r1 = text("one");
  auto r2 = text("two");
  EXPECT_EQ(m.on_value(r1), multiplexer::verdict::ok);
  EXPECT_EQ(m.on_value(r2), multiplexer::verdict::ok);
  EXPECT_EQ(a.reply.str, "one");
  EXPECT_EQ(b.reply.str, "two");
  EXPECT_EQ(a.calls, 1);
  EXPECT_EQ(b.calls, 1);
  EXPECT_EQ(m.written(), 0u);
}

TEST(multiplexer, a_burst_then_idle_then_more_requests_each_get_their_own_answer) {
  // The slots of a burst are given back once nothing is in flight (and taken again after);
  // answers keep matching their requests across that, including one added by a handler.
  multiplexer m;
  std::vector<outcome> burst(500);
  for (auto& o : burst) m.add("x", answer_kind::reply, {}, {}, record_into(o));
  EXPECT_EQ(written(m).size(), 500u);
  outcome chained;
  bool added = false;
  for (std::size_t i = 0; i < burst.size(); ++i) {
    auto v = text(std::to_string(i));
    ASSERT_EQ(m.on_value(v), multiplexer::verdict::ok);
    if (i == 499 && !added) {
      added = true;
      m.add("y", answer_kind::reply, {}, {}, record_into(chained));
    }
  }
  for (std::size_t i = 0; i < burst.size(); ++i) {
    EXPECT_EQ(burst[i].calls, 1);
    EXPECT_EQ(burst[i].reply.str, std::to_string(i));
  }
  EXPECT_EQ(m.queued(), 1u);
  EXPECT_EQ(written(m), "y");
  auto last = text("last");
  EXPECT_EQ(m.on_value(last), multiplexer::verdict::ok);
  EXPECT_EQ(chained.reply.str, "last");
  EXPECT_EQ(m.written(), 0u);
}

TEST(multiplexer, a_refused_subscribe_takes_its_error_and_shifts_nothing) {
  // The ACL bug: -NOPERM to SUBSCRIBE went to the next command waiting, and every later reply
  // went to the wrong request (an acquire could take someone else's nil for "acquired").
  multiplexer m;
  outcome sub, acquire, query;
  m.add("SUBSCRIBE", answer_kind::subscribe, "ch", {}, record_into(sub));
  m.add("EVALSHA", answer_kind::reply, {}, {}, record_into(acquire));
  m.add("PTTL", answer_kind::reply, {}, {}, record_into(query));
  written(m);
  auto refusal = error("NOPERM this user has no permissions to access one of the channels");
  auto busy = resp3::value{};
  busy.type = resp3::type::number;
  busy.integer = 1234;
  auto ttl = text("ttl");
  EXPECT_EQ(m.on_value(refusal), multiplexer::verdict::ok);
  EXPECT_EQ(m.on_value(busy), multiplexer::verdict::ok);
  EXPECT_EQ(m.on_value(ttl), multiplexer::verdict::ok);
  EXPECT_TRUE(sub.reply.is_error());
  EXPECT_EQ(acquire.reply.integer, 1234);
  EXPECT_EQ(query.reply.str, "ttl");
}

TEST(multiplexer, confirmations_answer_subscriptions_and_messages_go_to_the_push_handler) {
  multiplexer m;
  std::vector<std::string> messages;
  m.set_push_handler([&](resp3::value& v) { messages.push_back(v.elements[2].str); });
  outcome sub, cmd, unsub;
  m.add("SUBSCRIBE", answer_kind::subscribe, "ch", {}, record_into(sub));
  m.add("X", answer_kind::reply, {}, {}, record_into(cmd));
  m.add("UNSUBSCRIBE", answer_kind::unsubscribe, "ch", {}, record_into(unsub));
  written(m);
  auto message_before = push("message", "other", "0");
  auto confirm = push("subscribe", "ch");
  auto message_between = push("message", "ch", "1");
  auto reply = text("x");
  auto unconfirm = push("unsubscribe", "ch", "0");
  for (auto* v : {&message_before, &confirm, &message_between, &reply, &unconfirm}) {
    EXPECT_EQ(m.on_value(*v), multiplexer::verdict::ok);
  }
  EXPECT_EQ(messages, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(sub.calls, 1);
  EXPECT_FALSE(sub.ec);
  EXPECT_EQ(cmd.reply.str, "x");
  EXPECT_EQ(unsub.calls, 1);
}

TEST(multiplexer, answers_no_request_expects_are_out_of_step) {
  {
    multiplexer m;
    auto stray = text("nobody asked");
    EXPECT_EQ(m.on_value(stray), multiplexer::verdict::out_of_step);
  }
  {
    multiplexer m;
    outcome sub;
    m.add("SUBSCRIBE", answer_kind::subscribe, "ch", {}, record_into(sub));
    written(m);
    auto other = push("subscribe", "another-channel");
    EXPECT_EQ(m.on_value(other), multiplexer::verdict::out_of_step);
    EXPECT_EQ(sub.calls, 0);
  }
  {
    multiplexer m;
    outcome sub;
    m.add("SUBSCRIBE", answer_kind::subscribe, "ch", {}, record_into(sub));
    written(m);
    auto plain = text("OK");  // a plain reply where the confirmation was due
    EXPECT_EQ(m.on_value(plain), multiplexer::verdict::out_of_step);
  }
  {
    multiplexer m;
    outcome cmd;
    m.add("X", answer_kind::reply, {}, {}, record_into(cmd));
    written(m);
    auto confirm = push("subscribe", "ch");
    EXPECT_EQ(m.on_value(confirm), multiplexer::verdict::out_of_step);
    EXPECT_EQ(cmd.calls, 0);
  }
}

TEST(multiplexer, an_unsolicited_sunsubscribe_is_a_push_not_an_answer) {
  // Redis 7 unsubscribes a sharded channel by itself when its slot moves: the push answers no
  // request (the command in flight keeps its own answer) and reaches the push handler.
  multiplexer m;
  std::vector<std::string> pushes;
  m.set_push_handler([&](resp3::value& v) { pushes.push_back(v.elements[0].str); });
  outcome cmd, unsub;
  m.add("X", answer_kind::reply, {}, {}, record_into(cmd));
  m.add("SUNSUBSCRIBE", answer_kind::unsubscribe, "mine", {}, record_into(unsub));
  written(m);
  auto dropped = push("sunsubscribe", "moved-away", "0");
  EXPECT_EQ(m.on_value(dropped), multiplexer::verdict::ok);
  EXPECT_EQ(cmd.calls, 0);
  auto reply = text("x");
  EXPECT_EQ(m.on_value(reply), multiplexer::verdict::ok);
  EXPECT_EQ(cmd.calls, 1);
  // Ours, when it is the oldest: the confirmation, not a push.
  auto confirm = push("sunsubscribe", "mine", "0");
  EXPECT_EQ(m.on_value(confirm), multiplexer::verdict::ok);
  EXPECT_EQ(unsub.calls, 1);
  EXPECT_EQ(pushes, (std::vector<std::string>{"sunsubscribe"}));
  // A classic unsubscribe nobody asked for still breaks the stream.
  auto stray = push("unsubscribe", "x", "0");
  EXPECT_EQ(m.on_value(stray), multiplexer::verdict::out_of_step);
}

TEST(multiplexer, nothing_but_the_handshake_is_written_before_the_connection_is_ready) {
  multiplexer m;
  outcome user, hello;
  m.add("USER", answer_kind::reply, {}, {}, record_into(user));
  request_options hs;
  hs.handshake = true;
  m.add("HELLO", answer_kind::reply, {}, hs, record_into(hello));
  EXPECT_EQ(written(m, false), "HELLO");
  EXPECT_EQ(written(m, false), "");
  EXPECT_EQ(written(m, true), "USER");
}

TEST(multiplexer, a_lost_connection_retries_idempotent_requests_and_fails_the_others) {
  multiplexer m;
  outcome query, acquire, tombstone, queued;
  request_options retry;
  retry.unknown = if_unknown::retry;
  request_options timed;
  timed.deadline = clock_type::now() + 1h;
  m.add("Q", answer_kind::reply, {}, retry, record_into(query));
  m.add("A", answer_kind::reply, {}, {}, record_into(acquire));
  m.add("T", answer_kind::reply, {}, timed, record_into(tombstone));
  EXPECT_EQ(written(m), "QAT");
  m.expire(timed.deadline);  // T's caller is told; its answer would be dropped
  EXPECT_EQ(tombstone.ec, rlock::errc::timeout);
  m.add("N", answer_kind::reply, {}, {}, record_into(queued));
  m.on_connection_lost(make_error_code(rlock::errc::connection_lost));
  EXPECT_EQ(acquire.ec, rlock::errc::connection_lost);
  EXPECT_EQ(query.calls, 0);
  EXPECT_EQ(queued.calls, 0);
  EXPECT_EQ(tombstone.calls, 1);
  EXPECT_EQ(m.retried(), 1u);
  // The retried request goes first, then what was queued; the tombstone is gone.
  EXPECT_EQ(written(m), "QN");
  auto r1 = text("q");
  auto r2 = text("n");
  m.on_value(r1);
  m.on_value(r2);
  EXPECT_EQ(query.reply.str, "q");
  EXPECT_EQ(queued.reply.str, "n");
}

TEST(multiplexer, deadlines_fail_queued_requests_and_tell_written_ones) {
  multiplexer m;
  outcome queued, written_plain, written_hooked;
  int hook_calls = 0;
  request_options soon;
  soon.deadline = clock_type::now() + 10ms;
  request_options hooked = soon;
  hooked.on_deadline = [](void* p) { ++*static_cast<int*>(p); };
  hooked.context = &hook_calls;
  m.add("P", answer_kind::reply, {}, soon, record_into(written_plain));
  m.add("H", answer_kind::reply, {}, hooked, record_into(written_hooked));
  written(m);
  m.add("Q", answer_kind::reply, {}, soon, record_into(queued));
  EXPECT_EQ(m.next_deadline(), soon.deadline);
  m.expire(soon.deadline);
  EXPECT_EQ(queued.ec, rlock::errc::timeout);  // never written: certainly not run
  EXPECT_EQ(m.queued(), 0u);
  EXPECT_EQ(written_plain.ec, rlock::errc::timeout);
  EXPECT_EQ(hook_calls, 1);
  EXPECT_EQ(written_hooked.calls, 0);  // still waiting for its answer
  m.expire(soon.deadline + 1s);
  EXPECT_EQ(hook_calls, 1);  // once only
  // The late answers: the plain request's is dropped, the hooked one's is delivered.
  auto late1 = text("late-p");
  auto late2 = text("late-h");
  EXPECT_EQ(m.on_value(late1), multiplexer::verdict::ok);
  EXPECT_EQ(m.on_value(late2), multiplexer::verdict::ok);
  EXPECT_EQ(written_plain.calls, 1);
  EXPECT_EQ(written_hooked.reply.str, "late-h");
}

// A request written before a reconnect and queued again is unknown, not "never ran": at its
// deadline a hooked one is told through its hook and stays to be written again, so its late
// answer still reaches it (a release's latch answers the retry). The soak of issue 24 lost a
// local handoff when such a transfer was failed as if it had never been written.
TEST(multiplexer, a_written_request_queued_again_after_a_reconnect_stays_unknown_at_its_deadline) {
  multiplexer m;
  outcome hooked_o, plain_o;
  int hook_calls = 0;
  request_options hooked;
  hooked.unknown = if_unknown::retry;
  hooked.deadline = clock_type::now() + 10ms;
  hooked.on_deadline = [](void* p) { ++*static_cast<int*>(p); };
  hooked.context = &hook_calls;
  request_options plain;
  plain.unknown = if_unknown::retry;
  plain.deadline = hooked.deadline;
  m.add("R", answer_kind::reply, {}, hooked, record_into(hooked_o));
  m.add("Q", answer_kind::reply, {}, plain, record_into(plain_o));
  EXPECT_EQ(written(m), "RQ");
  m.on_connection_lost(make_error_code(rlock::errc::connection_lost));
  EXPECT_EQ(m.queued(), 2u);
  m.expire(hooked.deadline);
  EXPECT_EQ(hook_calls, 1);
  EXPECT_EQ(hooked_o.calls, 0);                 // told by its hook, still waiting
  EXPECT_EQ(plain_o.ec, rlock::errc::timeout);  // no hook: its caller is told by the timeout
  EXPECT_EQ(m.queued(), 1u);
  m.expire(hooked.deadline + 1h);
  EXPECT_EQ(hook_calls, 1);    // once only
  EXPECT_EQ(written(m), "R");  // written again on the next connection, past its old deadline
  auto late = text("first-answer");
  EXPECT_EQ(m.on_value(late), multiplexer::verdict::ok);
  EXPECT_EQ(hooked_o.reply.str, "first-answer");
}

TEST(multiplexer, withdraw_takes_back_only_what_was_not_written) {
  multiplexer m;
  outcome a, b;
  const auto id_a = m.add("A", answer_kind::reply, {}, {}, record_into(a));
  written(m);
  const auto id_b = m.add("B", answer_kind::reply, {}, {}, record_into(b));
  EXPECT_FALSE(m.withdraw(id_a, std::make_error_code(std::errc::operation_canceled)));
  EXPECT_TRUE(m.withdraw(id_b, std::make_error_code(std::errc::operation_canceled)));
  EXPECT_EQ(b.ec, std::errc::operation_canceled);
  EXPECT_EQ(written(m), "");
}

TEST(multiplexer, written_at_is_the_time_of_the_last_write) {
  multiplexer m;
  outcome o;
  clock_type::time_point sent{};
  request_options opts;
  opts.unknown = if_unknown::retry;
  opts.written_at = &sent;
  m.add("R", answer_kind::reply, {}, opts, record_into(o));
  std::string out;
  const auto t1 = clock_type::now();
  m.prepare_write(out, true, t1);
  EXPECT_EQ(sent, t1);
  m.on_connection_lost(make_error_code(rlock::errc::connection_lost));
  const auto t2 = t1 + 5s;
  m.prepare_write(out, true, t2);
  EXPECT_EQ(sent, t2);
}

TEST(multiplexer, handlers_may_add_requests_while_being_completed) {
  multiplexer m;
  outcome second;
  m.add("A", answer_kind::reply, {}, {}, [&](std::error_code, resp3::value) {
    m.add("B", answer_kind::reply, {}, {}, record_into(second));
  });
  written(m);
  auto r = text("a");
  m.on_value(r);
  EXPECT_EQ(written(m), "B");
}

TEST(multiplexer, a_handler_may_grow_the_storage_by_many_requests_while_being_completed) {
  // Records live in chunks of a few hundred: a handler that adds more than a chunk's worth while
  // its own record is being completed must leave every request with its own answer.
  multiplexer m;
  std::vector<outcome> added(700);
  outcome first;
  m.add("A", answer_kind::reply, {}, {}, [&](std::error_code ec, resp3::value v) {
    for (auto& o : added) m.add("b", answer_kind::reply, {}, {}, record_into(o));
    record_into(first)(ec, std::move(v));
  });
  written(m);
  auto a = text("a");
  ASSERT_EQ(m.on_value(a), multiplexer::verdict::ok);
  EXPECT_EQ(first.reply.str, "a");
  EXPECT_EQ(written(m).size(), added.size());
  for (std::size_t i = 0; i < added.size(); ++i) {
    auto v = text(std::to_string(i));
    ASSERT_EQ(m.on_value(v), multiplexer::verdict::ok);
  }
  for (std::size_t i = 0; i < added.size(); ++i) EXPECT_EQ(added[i].reply.str, std::to_string(i));
  EXPECT_EQ(m.written(), 0u);
}

TEST(multiplexer, random_interleavings_never_mismatch_an_answer) {
  // Each request's answer carries its own id; messages are sprinkled in between. Whatever the
  // mix of kinds, every handler must see exactly its own answer, once.
  std::mt19937 rng(12345);
  for (int round = 0; round < 200; ++round) {
    multiplexer m;
    int messages = 0;
    m.set_push_handler([&](resp3::value&) { ++messages; });
    const int n = 1 + static_cast<int>(rng() % 30);
    std::vector<outcome> out(static_cast<std::size_t>(n));
    std::vector<answer_kind> kinds;
    for (int i = 0; i < n; ++i) {
      const auto kind = static_cast<answer_kind>(rng() % 3);
      kinds.push_back(kind);
      m.add("C", kind, "ch" + std::to_string(i), {}, record_into(out[static_cast<std::size_t>(i)]));
    }
    written(m);
    int sent_messages = 0;
    for (int i = 0; i < n; ++i) {
      if (rng() % 2 == 0) {
        auto msg = push("message", "ch" + std::to_string(i), "0");
        ++sent_messages;
        ASSERT_EQ(m.on_value(msg), multiplexer::verdict::ok);
      }
      resp3::value answer;
      switch (kinds[static_cast<std::size_t>(i)]) {
        case answer_kind::reply:
          answer = text("id" + std::to_string(i));
          break;
        case answer_kind::subscribe:
          answer = rng() % 2 == 0 ? push("subscribe", "ch" + std::to_string(i))
                                  : error("NOPERM id" + std::to_string(i));
          break;
        case answer_kind::unsubscribe:
          answer = push("unsubscribe", "ch" + std::to_string(i));
          break;
      }
      ASSERT_EQ(m.on_value(answer), multiplexer::verdict::ok);
    }
    EXPECT_EQ(messages, sent_messages);
    for (int i = 0; i < n; ++i) {
      const auto& o = out[static_cast<std::size_t>(i)];
      ASSERT_EQ(o.calls, 1);
      if (o.reply.type == resp3::type::push) {
        EXPECT_EQ(o.reply.elements[1].str, "ch" + std::to_string(i));
      } else if (o.reply.is_error()) {
        EXPECT_EQ(o.reply.str, "NOPERM id" + std::to_string(i));
      } else {
        EXPECT_EQ(o.reply.str, "id" + std::to_string(i));
      }
    }
  }
}

}  // namespace

namespace {

TEST(multiplexer, a_request_past_its_deadline_is_never_written) {
  multiplexer m;
  outcome stale, fresh;
  request_options past;
  past.deadline = clock_type::now() - 1ms;
  m.add("STALE", answer_kind::reply, {}, past, record_into(stale));
  m.add("FRESH", answer_kind::reply, {}, {}, record_into(fresh));
  EXPECT_EQ(written(m), "FRESH");
  EXPECT_EQ(stale.calls, 0);
  m.expire(clock_type::now());
  EXPECT_EQ(stale.ec, rlock::errc::timeout);
}

}  // namespace

TEST(multiplexer, a_request_of_several_commands_is_answered_by_all_its_replies_as_one) {
  multiplexer m;
  outcome pair, after, retried;
  request_options two;
  two.answers = 2;
  m.add("S+W", answer_kind::reply, {}, two, record_into(pair));
  m.add("N", answer_kind::reply, {}, {}, record_into(after));
  EXPECT_EQ(written(m), "S+WN");
  auto script = text("script");
  auto error_reply = error("NOREPLICAS");
  auto next = text("next");
  EXPECT_EQ(m.on_value(script), multiplexer::verdict::ok);
  EXPECT_EQ(pair.calls, 0);  // the first reply alone answers nothing
  EXPECT_EQ(m.on_value(error_reply), multiplexer::verdict::ok);
  ASSERT_EQ(pair.calls, 1);
  EXPECT_FALSE(pair.ec);
  ASSERT_EQ(pair.reply.elements.size(), 2u);
  EXPECT_EQ(pair.reply.elements[0].str, "script");
  EXPECT_TRUE(pair.reply.elements[1].is_error());
  EXPECT_EQ(m.on_value(next), multiplexer::verdict::ok);
  EXPECT_EQ(after.reply.str, "next");

  // Lost after one of its two replies: written again whole, the partial reply forgotten.
  two.unknown = if_unknown::retry;
  m.add("R+W", answer_kind::reply, {}, two, record_into(retried));
  EXPECT_EQ(written(m), "R+W");
  auto first = text("stale");
  m.on_value(first);
  m.on_connection_lost(make_error_code(rlock::errc::connection_lost));
  EXPECT_EQ(retried.calls, 0);
  EXPECT_EQ(written(m), "R+W");
  auto a = text("fresh");
  auto b = text("1");
  m.on_value(a);
  m.on_value(b);
  ASSERT_EQ(retried.calls, 1);
  ASSERT_EQ(retried.reply.elements.size(), 2u);
  EXPECT_EQ(retried.reply.elements[0].str, "fresh");
}
