// The acquisition's I/O shell (acquire_op.cpp) over an engine context without a client or a
// server: the test answers each request the shell makes, as a server or a failing connection
// would, and delivers the channel's messages itself.
#include "engine/engine_context.hpp"
#include "lock/lock_ops.hpp"
#include "lock/lock_state.hpp"
#include "rlock/error.hpp"
#include "support/engine_fixture.hpp"
#include "support/resp3_values.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <system_error>

namespace {

namespace asio = boost::asio;
using rlock::detail::lock_state;
using rlock::test::number;
using rlock::test::text;
using namespace std::chrono_literals;

std::error_code code_of(const std::exception_ptr& e) {
  if (!e) return {};
  try {
    std::rethrow_exception(e);
  } catch (const std::system_error& ex) {
    return ex.code();
  }
}

struct shell {
  asio::io_context io;
  std::shared_ptr<rlock::test::engine_fixture> engine =
      rlock::test::engine_fixture::make(io.get_executor());
  std::shared_ptr<lock_state> s =
      rlock::detail::owner_table::new_owner(engine->context(), "L", rlock::detail::reentrant_kind);
  asio::cancellation_signal cancel;

  bool done = false;
  bool acquired = false;
  std::error_code error;

  ~shell() {
    engine->dog.stop();
    engine->session.close(std::make_error_code(std::errc::operation_canceled));
    io.restart();
    io.poll();
  }

  rlock::test::fake_session& server() { return engine->session; }
  rlock::detail::engine_counters& counters() { return engine->ctx.counters; }

  void acquire(std::optional<std::chrono::milliseconds> wait) {
    rlock::detail::async_acquire(s, wait, std::nullopt,
                                 rlock::detail::bool_handler(asio::bind_cancellation_slot(
                                     cancel.slot(), [this](std::exception_ptr e, bool got) {
                                       done = true;
                                       acquired = got;
                                       error = code_of(e);
                                     })));
  }

  /// Runs the engine's handlers until `pred` holds (at most 3 s, 3 000 turns).
  template <typename Pred>
  bool run_until(Pred pred) {
    const auto until = std::chrono::steady_clock::now() + 3s;
    for (int turn = 0; turn < 3000 && !pred(); ++turn) {
      if (std::chrono::steady_clock::now() > until) break;
      io.restart();
      io.run_one_for(1ms);
    }
    return pred();
  }
  /// Runs until a request is waiting for its answer; its index.
  std::size_t next_request() {
    EXPECT_TRUE(run_until([&] { return !server().pending().empty(); }));
    return server().pending().empty() ? 0 : server().pending().front();
  }
  bool is_script(std::size_t i) { return server().script_of(server().requests.at(i)).has_value(); }
};

TEST(acquire_shell, an_attempt_answered_acquired_completes_true_and_renews) {
  shell t;
  t.acquire(0ms);
  const auto attempt = t.next_request();
  ASSERT_TRUE(t.is_script(attempt));
  t.server().answer(attempt, {});  // nil: acquired
  ASSERT_TRUE(t.run_until([&] { return t.done; }));
  EXPECT_TRUE(t.acquired);
  EXPECT_FALSE(t.error);
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
  t.io.restart();
  t.io.poll();
  EXPECT_TRUE(t.server().pending().empty());
  EXPECT_FALSE(t.done);
  t.engine->hub.on_message(channel, "0", std::chrono::steady_clock::now());
  const auto third = t.next_request();
  ASSERT_TRUE(t.is_script(third));
  t.server().answer(third, {});
  ASSERT_TRUE(t.run_until([&] { return t.done; }));
  EXPECT_TRUE(t.acquired);
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
    return t.done;
  }));
  EXPECT_FALSE(t.acquired);
  EXPECT_FALSE(t.error) << t.error.message();
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
  ASSERT_TRUE(t.run_until([&] { return t.done; }));
  EXPECT_FALSE(t.acquired);
  EXPECT_EQ(t.error, std::errc::operation_canceled) << t.error.message();
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
  ASSERT_TRUE(t.run_until([&] { return t.done; }));
  EXPECT_TRUE(t.acquired);
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
  ASSERT_TRUE(t.run_until([&] { return t.done; }));
  EXPECT_TRUE(t.acquired);
  EXPECT_EQ(t.s->local_holds, 1u);
}

TEST(acquire_shell, an_attempt_cancelled_in_flight_that_then_acquires_is_given_back) {
  shell t;
  t.acquire(10s);
  const auto attempt = t.next_request();
  // Cancelled while its attempt is written: withdraw cannot take it back, so its answer settles
  // what the server did.
  t.cancel.emit(asio::cancellation_type::terminal);
  t.io.restart();
  t.io.poll();
  t.server().answer(attempt, {});  // it took the lock after all
  const auto give_back = t.next_request();
  ASSERT_TRUE(t.is_script(give_back));
  EXPECT_EQ(t.counters().given_back.load(), 1u);
  t.server().answer(give_back, number(1));  // released
  ASSERT_TRUE(t.run_until([&] { return t.done; }));
  EXPECT_EQ(t.error, std::errc::operation_canceled) << t.error.message();
  EXPECT_FALSE(t.acquired);
  EXPECT_EQ(t.s->local_holds, 0u);
  EXPECT_FALSE(t.s->renewing());
}

}  // namespace
