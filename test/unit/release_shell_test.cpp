// The release's I/O shell (release_shell.cpp) over an engine context without a client or a server:
// the test answers the unlock script as a server or a failing connection would, and passes its
// deadline when it chooses.
#include "rlock/error.hpp"
#include "support/engine_shell.hpp"
#include "support/resp3_values.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <system_error>

namespace {

using rlock::test::completion;
using rlock::test::number;
using namespace std::chrono_literals;

/// One owner of "L" that holds it (acquired at once, kept by the watchdog).
struct holder : rlock::test::engine_shell {
  std::shared_ptr<rlock::detail::lock_state> s = owner();
  completion unlocked;
  holder() { hold(s); }

  /// Starts the unlock; the index of its script request.
  std::size_t unlock() {
    release(s, unlocked);
    const auto i = next_request();
    EXPECT_TRUE(is_script(i));
    return i;
  }
};

TEST(release_shell, an_unlock_answered_released_ends_the_hold_and_drops_its_latch) {
  holder t;
  const auto latches_before = t.engine->latches.pending();
  const auto r = t.unlock();
  EXPECT_FALSE(t.s->renewing());  // renewal stops before the final unlock goes out
  t.server().answer(r, number(1));
  ASSERT_TRUE(t.run_until([&] { return t.unlocked.done; }));
  EXPECT_FALSE(t.unlocked.error) << t.unlocked.error.message();
  EXPECT_EQ(t.s->local_holds, 0u);
  EXPECT_EQ(t.engine->latches.pending(), latches_before + 1);  // its latch is deleted later
}

TEST(release_shell, an_unlock_answered_not_held_is_not_owner) {
  holder t;
  t.server().answer(t.unlock(), {});
  ASSERT_TRUE(t.run_until([&] { return t.unlocked.done; }));
  EXPECT_EQ(t.unlocked.error, rlock::errc::not_owner) << t.unlocked.error.message();
  EXPECT_EQ(t.s->local_holds, 0u);
}

TEST(release_shell, an_unlock_written_and_unanswered_is_unknown_and_not_undone) {
  holder t;
  t.server().fail(t.unlock(), rlock::make_error_code(rlock::errc::connection_lost));
  ASSERT_TRUE(t.run_until([&] { return t.unlocked.done; }));
  EXPECT_EQ(t.unlocked.error, rlock::errc::connection_lost);
  // It may have run: the owner does not go back to believing it holds.
  EXPECT_EQ(t.s->local_holds, 0u);
  EXPECT_FALSE(t.s->renewing());
}

TEST(release_shell, an_unlock_never_written_is_undone) {
  holder t;
  t.server().written_at_once = false;  // still queued when it fails: it never reached the server
  t.server().fail(t.unlock(), rlock::make_error_code(rlock::errc::timeout));
  ASSERT_TRUE(t.run_until([&] { return t.unlocked.done; }));
  EXPECT_EQ(t.unlocked.error, rlock::errc::timeout);
  EXPECT_EQ(t.s->local_holds, 1u);
  EXPECT_TRUE(t.s->renewing());  // the watchdog keeps it again
}

TEST(release_shell, an_unlock_past_its_bound_is_told_unknown_and_its_late_answer_still_counts) {
  holder t;
  const auto r = t.unlock();
  t.server().pass_deadline(r);
  ASSERT_TRUE(t.run_until([&] { return t.unlocked.done; }));
  EXPECT_EQ(t.unlocked.error, rlock::errc::timeout);
  // The request goes on waiting; its answer settles the owner's state.
  ASSERT_EQ(t.server().pending().size(), 1u);
  t.server().answer(r, number(1));
  t.settle();
  EXPECT_EQ(t.s->local_holds, 0u);
  EXPECT_FALSE(t.s->renewing());
}

TEST(release_shell, a_final_unlock_hands_the_lock_to_a_parked_waiter_of_this_client) {
  holder t;
  auto waiter = t.owner();
  completion waited;
  t.acquire(waiter, 10s, waited);
  t.server().answer(t.next_request(), number(30'000));  // busy
  const std::string channel = waiter->channel();
  ASSERT_TRUE(t.run_until([&] { return t.server().channels.contains(channel); }));
  t.server().confirmed.insert(channel);
  t.engine->hub.on_subscribed(channel);
  t.server().answer(t.next_request(), number(30'000));  // its retry: still busy; it parks
  t.settle();
  ASSERT_TRUE(t.server().pending().empty());
  // The holder's unlock is a transfer to the waiter, answered "handed over".
  t.server().answer(t.unlock(), number(2));
  ASSERT_TRUE(t.run_until([&] { return t.unlocked.done && waited.done; }));
  EXPECT_FALSE(t.unlocked.error) << t.unlocked.error.message();
  EXPECT_TRUE(waited.acquired);
  EXPECT_EQ(t.counters().local_handoffs.load(), 1u);
  EXPECT_EQ(t.s->local_holds, 0u);
  EXPECT_EQ(waiter->local_holds, 1u);
  // No acquire attempt was made for the handed-over hold: one round trip for both.
  for (auto i : t.server().pending()) EXPECT_FALSE(t.is_script(i));
}

}  // namespace
