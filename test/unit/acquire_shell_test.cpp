// The acquisition's I/O shell (acquire_shell.cpp) over an engine context without a client or a
// server: the test answers each request the shell makes, as a server or a failing connection
// would, and delivers the channel's messages itself.
#include "kinds/registry.hpp"
#include "rlock/error.hpp"
#include "support/engine_shell.hpp"
#include "support/resp3_values.hpp"

#include <boost/asio/cancellation_signal.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

namespace {

namespace asio = boost::asio;
using rlock::test::completion;
using rlock::test::number;
using rlock::test::text;
using namespace std::chrono_literals;

/// One owner of "L" acquiring, cancellable.
struct shell : rlock::test::engine_shell {
  std::shared_ptr<rlock::detail::lock_state> s = owner();
  asio::cancellation_signal cancel;
  completion out;

  void acquire(std::optional<std::chrono::milliseconds> wait) {
    engine_shell::acquire(s, wait, out, &cancel);
  }
};

TEST(acquire_shell, an_attempt_answered_acquired_completes_true_and_renews) {
  shell t;
  t.acquire(0ms);
  const auto attempt = t.next_request();
  ASSERT_TRUE(t.is_script(attempt));
  t.server().answer(attempt, {});  // nil: acquired
  ASSERT_TRUE(t.run_until([&] { return t.out.done; }));
  EXPECT_TRUE(t.out.acquired);
  EXPECT_FALSE(t.out.error);
  EXPECT_EQ(t.s->local_holds, 1u);
  EXPECT_TRUE(t.s->renewing());  // no lease: the watchdog's
  EXPECT_EQ(t.counters().acquire_attempts.load(), 1u);
}

TEST(acquire_shell, a_waiter_listens_sleeps_and_an_unlock_message_wakes_it) {
  shell t;
  t.acquire(10s);
  t.server().answer(t.next_request(), number(30'000));  // busy for 30 s
  const std::string channel = t.s->channel();
  ASSERT_TRUE(t.run_until([&] { return t.server().channels.contains(channel); }));
  // The channel confirmed: the waiter tries once more (an unlock may have gone unheard before).
  t.server().confirmed.insert(channel);
  t.engine->hub.on_subscribed(channel);
  const auto second = t.next_request();
  ASSERT_TRUE(t.is_script(second));
  t.server().answer(second, number(30'000));
  // Asleep now: nothing more is asked until a message comes (the lock's holder renews for 30 s).
  t.settle();
  EXPECT_TRUE(t.server().pending().empty());
  EXPECT_FALSE(t.out.done);
  t.engine->hub.on_message(channel, "0", std::chrono::steady_clock::now());
  const auto third = t.next_request();
  ASSERT_TRUE(t.is_script(third));
  t.server().answer(third, {});
  ASSERT_TRUE(t.run_until([&] { return t.out.done; }));
  EXPECT_TRUE(t.out.acquired);
  EXPECT_EQ(t.counters().notified_wakeups.load(), 1u);
  // It left the channel: nobody else here waits on it.
  EXPECT_TRUE(t.run_until([&] { return !t.server().channels.contains(channel); }));
}

TEST(acquire_shell, a_wait_that_passes_completes_false_without_error) {
  shell t;
  t.acquire(40ms);
  t.server().answer(t.next_request(), number(30'000));
  // Whatever else it asks (the retry after its channel is confirmed) is answered busy too.
  ASSERT_TRUE(t.run_until([&] {
    for (auto i : t.server().pending()) t.server().answer(i, number(30'000));
    return t.out.done;
  }));
  EXPECT_FALSE(t.out.acquired);
  EXPECT_FALSE(t.out.error) << t.out.error.message();
  EXPECT_LE(t.server().requests.size(), 3u);  // no polling while it waited
  EXPECT_EQ(t.s->local_holds, 0u);
}

TEST(acquire_shell, a_cancelled_waiter_completes_aborted_and_leaves_its_channel) {
  shell t;
  t.acquire(std::nullopt);  // no bound but the caller's cancellation
  t.server().answer(t.next_request(), number(30'000));
  const std::string channel = t.s->channel();
  ASSERT_TRUE(t.run_until([&] { return t.server().channels.contains(channel); }));
  t.cancel.emit(asio::cancellation_type::terminal);
  ASSERT_TRUE(t.run_until([&] { return t.out.done; }));
  EXPECT_FALSE(t.out.acquired);
  EXPECT_EQ(t.out.error, std::errc::operation_canceled) << t.out.error.message();
  EXPECT_TRUE(t.run_until([&] { return !t.server().channels.contains(channel); }));
  EXPECT_EQ(t.s->local_holds, 0u);
}

TEST(acquire_shell, an_unknown_answer_is_reconciled_and_a_lost_acquire_that_ran_is_kept) {
  shell t;
  t.acquire(10s);
  const auto attempt = t.next_request();
  // Written, then the connection died: it may have run.
  t.server().fail(attempt, rlock::make_error_code(rlock::errc::connection_lost));
  const auto question = t.next_request();
  EXPECT_FALSE(t.is_script(question));
  const auto words = t.server().requests.at(question).words();
  ASSERT_FALSE(words.empty());
  EXPECT_EQ(words[0], "HGET");
  t.server().answer(question, text("1"));  // it ran: this owner holds once
  ASSERT_TRUE(t.run_until([&] { return t.out.done; }));
  EXPECT_TRUE(t.out.acquired);
  EXPECT_EQ(t.counters().reconciled_acquires.load(), 1u);
  EXPECT_EQ(t.s->local_holds, 1u);
}

TEST(acquire_shell, an_unknown_answer_that_did_not_run_is_tried_again) {
  shell t;
  t.acquire(10s);
  t.server().fail(t.next_request(), rlock::make_error_code(rlock::errc::connection_lost));
  t.server().answer(t.next_request(), {});  // HGET: nil, it did not run
  const auto again = t.next_request();
  ASSERT_TRUE(t.is_script(again));
  t.server().answer(again, {});
  ASSERT_TRUE(t.run_until([&] { return t.out.done; }));
  EXPECT_TRUE(t.out.acquired);
  EXPECT_EQ(t.s->local_holds, 1u);
}

TEST(acquire_shell, an_attempt_cancelled_in_flight_that_then_acquires_is_given_back) {
  shell t;
  t.acquire(10s);
  const auto attempt = t.next_request();
  // Cancelled while its attempt is written: withdraw cannot take it back, so its answer settles
  // what the server did.
  t.cancel.emit(asio::cancellation_type::terminal);
  t.settle();
  t.server().answer(attempt, {});  // it took the lock after all
  const auto give_back = t.next_request();
  ASSERT_TRUE(t.is_script(give_back));
  EXPECT_EQ(t.counters().given_back.load(), 1u);
  t.server().answer(give_back, number(1));  // released
  ASSERT_TRUE(t.run_until([&] { return t.out.done; }));
  EXPECT_EQ(t.out.error, std::errc::operation_canceled) << t.out.error.message();
  EXPECT_FALSE(t.out.acquired);
  EXPECT_EQ(t.s->local_holds, 0u);
  EXPECT_FALSE(t.s->renewing());
}

}  // namespace

namespace {

TEST(acquire_shell, a_fair_waiter_listens_first_and_a_grant_by_push_makes_it_the_holder) {
  rlock::test::engine_shell t;
  auto f = t.owner("F", rlock::detail::fair_kind);
  completion out;
  t.acquire(f, 10s, out);
  const std::string channel = f->channel();  // its own: <lock channel>:<its field>
  const auto attempt = t.next_request();
  // Subscribed before its attempt could queue it: a push right after the attempt is heard.
  ASSERT_EQ(t.server().subscribe_calls.size(), 1u);
  EXPECT_EQ(t.server().subscribe_calls.front(), channel);
  t.server().answer(attempt, number(30'000));  // queued behind the holder
  t.server().confirmed.insert(channel);
  t.engine->hub.on_subscribed(channel);
  t.settle();
  // A confirmation makes every waiter registered before it try once more: still queued.
  for (auto i : t.server().pending()) t.server().answer(i, number(30'000));
  t.settle();
  ASSERT_TRUE(t.server().pending().empty());
  const auto attempts = t.counters().acquire_attempts.load();
  // The holder's release hands the lock to this acquisition (its ticket, the client's first).
  t.engine->hub.on_message(channel, "g1", std::chrono::steady_clock::now());
  ASSERT_TRUE(t.run_until([&] { return out.done; }));
  EXPECT_TRUE(out.acquired);
  EXPECT_EQ(t.counters().acquired_handoff.load(), 1u);
  EXPECT_EQ(f->local_holds, 1u);
  // The push alone: no attempt to claim it (the grant came within a quarter of the lease).
  EXPECT_EQ(t.counters().acquire_attempts.load(), attempts);
}

TEST(acquire_shell, a_spin_waiter_joins_no_channel_and_tries_again_on_its_own) {
  rlock::config cfg;
  cfg.spin_lock.initial = 1ms;
  cfg.spin_lock.cap = 4ms;
  rlock::test::engine_shell t(cfg);
  auto s = t.owner("S", rlock::detail::spin_kind);
  completion out;
  t.acquire(s, 10s, out);
  for (int busy = 0; busy < 3; ++busy) {
    const auto attempt = t.next_request();  // no message comes: it backs off and polls
    ASSERT_TRUE(t.is_script(attempt));
    t.server().answer(attempt, number(30'000));
  }
  t.server().answer(t.next_request(), {});
  ASSERT_TRUE(t.run_until([&] { return out.done; }));
  EXPECT_TRUE(out.acquired);
  EXPECT_TRUE(t.server().subscribe_calls.empty());
  EXPECT_EQ(t.counters().acquire_attempts.load(), 4u);
}

}  // namespace
