// The acquisition state machine without a server or a clock: scripted answers, wake-ups,
// cancellations and bounds, and the rules every lock kind relies on.
#include "engine/acquire_fsm.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace {

using rlock::detail::acquire_fsm;
using action = acquire_fsm::action;
using answer = acquire_fsm::answer;
using verdict = acquire_fsm::verdict;
using wake = acquire_fsm::wake;
using namespace std::chrono_literals;
using clock_type = acquire_fsm::clock;

const auto t0 = clock_type::time_point{} + 1h;
constexpr auto round_trip = 5000ms;
constexpr auto nap = 30000ms;

acquire_fsm make(std::optional<std::chrono::milliseconds> wait,
                 std::chrono::milliseconds lease = nap) {
  return acquire_fsm(t0, wait ? &*wait : nullptr, round_trip, nap, lease);
}

TEST(acquire_fsm, a_free_lock_is_taken_by_the_first_attempt) {
  auto fsm = make(std::nullopt);
  ASSERT_EQ(fsm.start(false), action::attempt);
  EXPECT_EQ(fsm.request_deadline(), clock_type::time_point::max());  // lock(): no bound
  ASSERT_EQ(fsm.on_attempt(answer::acquired, -1ms, t0), action::complete);
  EXPECT_EQ(fsm.outcome(), verdict::acquired);
  EXPECT_EQ(fsm.resume(), action::done);
}

TEST(acquire_fsm, a_busy_lock_parks_until_woken_then_tries_again) {
  auto fsm = make(std::nullopt);
  ASSERT_EQ(fsm.start(false), action::attempt);
  ASSERT_EQ(fsm.on_attempt(answer::busy, 2000ms, t0), action::join);
  ASSERT_EQ(fsm.on_joined(), action::sleep);
  EXPECT_EQ(fsm.sleep_until(), t0 + 2000ms);  // the holder's lease, never a poll
  ASSERT_EQ(fsm.on_woken(wake::message, t0 + 5ms), action::attempt);
  EXPECT_TRUE(fsm.retry_after_wake());
  ASSERT_EQ(fsm.on_attempt(answer::busy, 1000ms, t0 + 6ms), action::sleep);  // joined once
  EXPECT_EQ(fsm.sleep_until(), t0 + 1006ms);
  ASSERT_EQ(fsm.on_woken(wake::timer, t0 + 1006ms), action::attempt);  // the lease ran out
  EXPECT_FALSE(fsm.retry_after_wake());
  ASSERT_EQ(fsm.on_attempt(answer::acquired, -1ms, t0 + 1007ms), action::complete);
  EXPECT_EQ(fsm.outcome(), verdict::acquired);
}

TEST(acquire_fsm, any_wait_the_server_answers_is_a_sleep_ahead_bounded_by_the_lease_and_the_wait) {
  // The waits decoders hand over (server_wait: at most longest_server_wait, or -1), and the
  // extremes beyond them: each must become a sleep that ends after now and no later than the
  // lease or the caller's bound. A sleep that ended before it began is a busy loop.
  using millis = std::chrono::milliseconds;
  const millis answers[] = {
      millis(0),     millis(1),     millis(-1),         millis(-7),  millis(922337203685477),
      millis::max(), millis::min(), millis(0x7fffffff), millis(2000)};
  for (const auto ttl : answers) {
    for (const std::optional<millis> wait : {std::optional<millis>{}, std::optional<millis>(10s)}) {
      auto fsm = make(wait, 5000ms);
      fsm.start(false);
      ASSERT_EQ(fsm.on_attempt(answer::busy, ttl, t0), action::join) << ttl.count();
      ASSERT_EQ(fsm.on_joined(), action::sleep) << ttl.count();
      EXPECT_GT(fsm.sleep_until(), t0) << ttl.count();
      EXPECT_LE(fsm.sleep_until(), t0 + 5000ms) << ttl.count();  // the lease
      if (ttl > 0ms && ttl <= 5000ms) {
        EXPECT_EQ(fsm.sleep_until(), t0 + ttl);
      }
    }
  }
  auto short_wait = make(300ms, 5000ms);  // the caller's wait comes first
  short_wait.start(false);
  short_wait.on_attempt(answer::busy, millis(922337203685477), t0);
  ASSERT_EQ(short_wait.on_joined(), action::sleep);
  EXPECT_EQ(short_wait.sleep_until(), t0 + 300ms);
}

TEST(acquire_fsm, a_server_that_keeps_answering_a_millisecond_is_asked_ever_less_often) {
  // A hold scored in the past that a script never reclaims, or a clock that does not move: "at
  // most 1 ms more" again and again. The first such answer is slept as answered (a lease that
  // really ends now); from the second on the nap doubles, up to a second: no round trip a
  // millisecond, however long the wait.
  auto fsm = make(std::nullopt);
  ASSERT_EQ(fsm.start(false), action::attempt);
  ASSERT_EQ(fsm.on_attempt(answer::busy, 0ms, t0), action::join);
  ASSERT_EQ(fsm.on_joined(), action::sleep);
  auto now = t0;
  std::vector<std::chrono::milliseconds> naps;
  for (int i = 0; i < 14; ++i) {
    naps.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(fsm.sleep_until() - now));
    now = fsm.sleep_until();
    ASSERT_EQ(fsm.on_woken(wake::timer, now), action::attempt);
    ASSERT_EQ(fsm.on_attempt(answer::busy, i % 2 == 0 ? 1ms : 0ms, now), action::sleep);
  }
  const std::vector<std::chrono::milliseconds> expected = {
      1ms, 2ms, 4ms, 8ms, 16ms, 32ms, 64ms, 128ms, 256ms, 512ms, 1024ms, 1024ms, 1024ms, 1024ms};
  EXPECT_EQ(naps, expected);
  // Any other answer ends the doubling: the server's wait is slept as answered again.
  ASSERT_EQ(fsm.on_woken(wake::timer, fsm.sleep_until()), action::attempt);
  now = fsm.sleep_until();
  ASSERT_EQ(fsm.on_attempt(answer::busy, 40ms, now), action::sleep);
  EXPECT_EQ(fsm.sleep_until(), now + 40ms);
  ASSERT_EQ(fsm.on_woken(wake::timer, fsm.sleep_until()), action::attempt);
  now = fsm.sleep_until();
  ASSERT_EQ(fsm.on_attempt(answer::busy, 0ms, now), action::sleep);
  EXPECT_EQ(fsm.sleep_until(), now + 1ms);
}

TEST(acquire_fsm, a_wait_too_long_to_represent_is_no_bound_not_a_bound_already_passed) {
  const auto forever = std::chrono::milliseconds::max();
  auto fsm = make(forever);
  ASSERT_EQ(fsm.start(false), action::attempt);
  EXPECT_EQ(fsm.request_deadline(), clock_type::time_point::max());
  ASSERT_EQ(fsm.on_attempt(answer::busy, 1000ms, t0), action::join);
  ASSERT_EQ(fsm.on_joined(), action::sleep);
  EXPECT_EQ(fsm.sleep_until(), t0 + 1000ms);
}

TEST(acquire_fsm, an_attempt_refused_unrun_is_tried_again_at_once_within_the_bound) {
  // NOSCRIPT: the server's script cache was flushed; the next attempt follows a SCRIPT LOAD.
  auto fsm = make(std::nullopt);
  ASSERT_EQ(fsm.start(false), action::attempt);
  ASSERT_EQ(fsm.on_attempt(answer::not_run, -1ms, t0), action::attempt);
  EXPECT_FALSE(fsm.reconciled_not_run());  // it cannot run late: nothing to suspect
  ASSERT_EQ(fsm.on_attempt(answer::acquired, -1ms, t0 + 1ms), action::complete);
  EXPECT_EQ(fsm.outcome(), verdict::acquired);

  auto once = make(0ms);  // try_lock(): one attempt, but one that ran
  once.start(false);
  ASSERT_EQ(once.on_attempt(answer::not_run, -1ms, t0 + 1ms), action::attempt);
  ASSERT_EQ(once.on_attempt(answer::busy, 1000ms, t0 + 2ms), action::complete);
  EXPECT_EQ(once.outcome(), verdict::not_acquired);

  auto late = make(100ms);  // past the caller's bound: told, no attempt
  late.start(false);
  ASSERT_EQ(late.on_attempt(answer::not_run, -1ms, t0 + 100ms), action::complete);
  EXPECT_EQ(late.outcome(), verdict::not_acquired);

  auto cancelled = make(std::nullopt);
  cancelled.start(false);
  cancelled.on_cancel(true, true);
  ASSERT_EQ(cancelled.on_attempt(answer::not_run, -1ms, t0 + 1ms), action::complete);
  EXPECT_EQ(cancelled.outcome(), verdict::cancelled);
}

TEST(acquire_fsm, a_holder_without_ttl_is_waited_for_the_default_nap) {
  auto fsm = make(std::nullopt);
  fsm.start(false);
  fsm.on_attempt(answer::busy, -1ms, t0);
  ASSERT_EQ(fsm.on_joined(), action::sleep);
  EXPECT_EQ(fsm.sleep_until(), t0 + nap);
}

TEST(acquire_fsm, one_attempt_is_bounded_by_a_round_trip_and_never_waits) {
  auto fsm = make(0ms);
  ASSERT_EQ(fsm.start(false), action::attempt);
  EXPECT_EQ(fsm.request_deadline(), t0 + round_trip);
  ASSERT_EQ(fsm.on_attempt(answer::busy, 2000ms, t0), action::complete);
  EXPECT_EQ(fsm.outcome(), verdict::not_acquired);
}

TEST(acquire_fsm, the_wait_bounds_the_sleep_and_ends_it_without_another_attempt) {
  auto fsm = make(300ms);
  fsm.start(false);
  EXPECT_EQ(fsm.request_deadline(), t0 + 300ms);  // not wait + a round trip
  fsm.on_attempt(answer::busy, 10000ms, t0 + 1ms);
  ASSERT_EQ(fsm.on_joined(), action::sleep);
  EXPECT_EQ(fsm.sleep_until(), t0 + 300ms);
  ASSERT_EQ(fsm.on_woken(wake::timer, t0 + 300ms), action::complete);
  EXPECT_EQ(fsm.outcome(), verdict::not_acquired);
}

TEST(acquire_fsm, the_bound_passing_over_a_written_attempt_tells_the_caller_and_gives_back_later) {
  auto fsm = make(300ms);
  fsm.start(false);
  // Nothing ever answered: the server is stalled or black-holed.
  ASSERT_EQ(fsm.on_bound_passed(), action::complete);
  EXPECT_EQ(fsm.outcome(), verdict::timed_out);
  EXPECT_TRUE(fsm.detached());
  ASSERT_EQ(fsm.resume(), action::wait);
  EXPECT_EQ(fsm.request_deadline(), clock_type::time_point::max());
  // The answer comes after all, and took the lock: given back, nobody told twice.
  ASSERT_EQ(fsm.on_attempt(answer::acquired, -1ms, t0 + 10s), action::give_back);
  EXPECT_EQ(fsm.on_given_back(false, t0), action::done);
}

TEST(acquire_fsm, the_bound_passing_after_a_busy_answer_is_not_acquired) {
  auto fsm = make(300ms);
  fsm.start(false);
  fsm.on_attempt(answer::busy, 5000ms, t0);
  fsm.on_joined();
  ASSERT_EQ(fsm.on_woken(wake::message, t0 + 100ms), action::attempt);
  ASSERT_EQ(fsm.on_bound_passed(), action::complete);
  EXPECT_EQ(fsm.outcome(), verdict::not_acquired);  // the server answers; the lock was busy
  EXPECT_EQ(fsm.resume(), action::wait);
  EXPECT_EQ(fsm.on_attempt(answer::busy, 5000ms, t0 + 400ms), action::done);
}

TEST(acquire_fsm, an_attempt_queued_past_the_bound_never_ran) {
  auto fsm = make(300ms);
  fsm.start(false);
  ASSERT_EQ(fsm.on_attempt(answer::not_written, -1ms, t0 + 300ms), action::complete);
  EXPECT_EQ(fsm.outcome(), verdict::timed_out);
  EXPECT_EQ(fsm.resume(), action::done);
}

TEST(acquire_fsm, a_lost_answer_is_reconciled_never_written_again) {
  auto fsm = make(std::nullopt);
  fsm.start(false);
  ASSERT_EQ(fsm.on_attempt(answer::unknown, -1ms, t0), action::reconcile);
  // It did not run: attempted again (no wake-up used).
  ASSERT_EQ(fsm.on_reconciled(answer::busy, t0 + 1ms), action::attempt);
  EXPECT_TRUE(fsm.reconciled_not_run());
  ASSERT_EQ(fsm.on_attempt(answer::unknown, -1ms, t0 + 2ms), action::reconcile);
  // It ran: the hold is the caller's.
  ASSERT_EQ(fsm.on_reconciled(answer::acquired, t0 + 3ms), action::complete);
  EXPECT_EQ(fsm.outcome(), verdict::acquired);
}

TEST(acquire_fsm, a_hold_answered_after_its_belief_ended_is_given_back_and_tried_again) {
  // The attempt was written at t0 and its answer lost; the outage outlived the lease, and the
  // question finds the hold (the server has not reclaimed it yet, or renewed nothing): the
  // server may hand it to another owner any moment, so the caller must not believe it.
  auto fsm = make(std::nullopt);
  fsm.start(false);
  ASSERT_EQ(fsm.on_attempt(answer::unknown, -1ms, t0), action::reconcile);
  fsm.hold_believed_until(t0 + 985ms);
  ASSERT_EQ(fsm.on_reconciled(answer::acquired, t0 + 1200ms), action::give_back);
  EXPECT_TRUE(fsm.giving_back_late_hold());
  EXPECT_FALSE(fsm.detached());  // nobody was told anything
  // Given back: attempted again at once, and this answer is in time.
  ASSERT_EQ(fsm.on_given_back(false, t0 + 1201ms), action::attempt);
  EXPECT_FALSE(fsm.giving_back_late_hold());
  EXPECT_FALSE(fsm.retry_after_wake());
  fsm.hold_believed_until(t0 + 2185ms);
  ASSERT_EQ(fsm.on_attempt(answer::acquired, -1ms, t0 + 1203ms), action::complete);
  EXPECT_EQ(fsm.outcome(), verdict::acquired);
}

TEST(acquire_fsm, a_late_hold_is_never_retried_past_the_bound_or_a_cancellation) {
  {
    // A slow answer to a plain attempt is just as late; after the give-back the wait is over.
    auto fsm = make(1000ms);
    fsm.start(false);
    fsm.hold_believed_until(t0 + 485ms);
    ASSERT_EQ(fsm.on_attempt(answer::acquired, -1ms, t0 + 490ms), action::give_back);
    ASSERT_EQ(fsm.on_given_back(false, t0 + 1000ms), action::complete);
    EXPECT_EQ(fsm.outcome(), verdict::not_acquired);
  }
  {
    auto fsm = make(std::nullopt);
    fsm.start(false);
    fsm.hold_believed_until(t0);
    ASSERT_EQ(fsm.on_attempt(answer::acquired, -1ms, t0), action::give_back);  // at the end
    EXPECT_EQ(fsm.on_cancel(true, true), action::wait);
    ASSERT_EQ(fsm.on_given_back(false, t0 + 1ms), action::complete);
    EXPECT_EQ(fsm.outcome(), verdict::cancelled);
  }
  {
    // A give-back that fails fails the caller: the hold's fate is unknown.
    auto fsm = make(std::nullopt);
    fsm.start(false);
    fsm.hold_believed_until(t0);
    ASSERT_EQ(fsm.on_attempt(answer::acquired, -1ms, t0 + 1ms), action::give_back);
    ASSERT_EQ(fsm.on_given_back(true, t0 + 2ms), action::complete);
    EXPECT_EQ(fsm.outcome(), verdict::failed);
  }
  {
    // A belief noted for one answer does not outlive it: the next hold is judged on its own.
    auto fsm = make(std::nullopt);
    fsm.start(false);
    fsm.hold_believed_until(t0 + 10ms);
    ASSERT_EQ(fsm.on_attempt(answer::acquired, -1ms, t0 + 1ms), action::complete);
    EXPECT_EQ(fsm.outcome(), verdict::acquired);
  }
}

TEST(acquire_fsm, late_holds_end_the_acquisition_after_a_few_instead_of_retrying_for_ever) {
  // A lease shorter than the round trip: every answer is late.
  auto fsm = make(std::nullopt);
  fsm.start(false);
  auto now = t0;
  for (int i = 1; i <= acquire_fsm::max_late_holds; ++i) {
    fsm.hold_believed_until(now + 45ms);
    now += 60ms;
    ASSERT_EQ(fsm.on_attempt(answer::acquired, -1ms, now), action::give_back);
    EXPECT_EQ(fsm.late_holds_exhausted(), i == acquire_fsm::max_late_holds);
    if (i < acquire_fsm::max_late_holds) {
      ASSERT_EQ(fsm.on_given_back(false, now), action::attempt);
    }
  }
  // The shell names why and reports the give-back as failed: the caller is told.
  ASSERT_EQ(fsm.on_given_back(true, now), action::complete);
  EXPECT_EQ(fsm.outcome(), verdict::failed);
}

TEST(acquire_fsm, a_question_out_of_time_tells_the_caller_and_stays_open) {
  auto fsm = make(300ms);
  fsm.start(false);
  fsm.on_attempt(answer::unknown, -1ms, t0 + 10ms);
  ASSERT_EQ(fsm.on_reconciled(answer::unknown, t0 + 300ms), action::complete);
  EXPECT_EQ(fsm.outcome(), verdict::timed_out);
  ASSERT_EQ(fsm.resume(), action::reconcile);
  EXPECT_EQ(fsm.request_deadline(), clock_type::time_point::max());
  ASSERT_EQ(fsm.on_reconciled(answer::acquired, t0 + 20s), action::give_back);
  EXPECT_EQ(fsm.on_given_back(false, t0), action::done);
}

TEST(acquire_fsm, a_run_whose_result_is_lost_is_given_back_and_fails) {
  auto fsm = make(std::nullopt);
  fsm.start(false);
  fsm.on_attempt(answer::unknown, -1ms, t0);
  ASSERT_EQ(fsm.on_reconciled(answer::ran_no_token, t0), action::give_back);
  ASSERT_EQ(fsm.on_given_back(false, t0), action::complete);
  EXPECT_EQ(fsm.outcome(), verdict::failed);
}

TEST(acquire_fsm, an_unsynced_acquisition_is_given_back_and_fails) {
  auto fsm = make(std::nullopt);
  fsm.start(false);
  ASSERT_EQ(fsm.on_attempt(answer::unsynced, -1ms, t0), action::give_back);
  ASSERT_EQ(fsm.on_given_back(false, t0), action::complete);
  EXPECT_EQ(fsm.outcome(), verdict::failed);
}

TEST(acquire_fsm, a_refused_channel_fails_the_waiter) {
  auto fsm = make(std::nullopt);
  fsm.start(false);
  fsm.on_attempt(answer::busy, 100ms, t0);
  fsm.on_joined();
  ASSERT_EQ(fsm.on_woken(wake::failed, t0), action::complete);
  EXPECT_EQ(fsm.outcome(), verdict::failed);
}

TEST(acquire_fsm, a_local_handoff_grants_the_hold_and_a_reserved_waiter_never_retries) {
  auto fsm = make(std::nullopt);
  fsm.start(false);
  fsm.on_attempt(answer::busy, 100ms, t0);
  ASSERT_EQ(fsm.on_joined(), action::sleep);
  // Reserved for a handoff in flight: neither its timer nor a message makes it retry (its
  // attempt could re-enter the lock handed to it meanwhile).
  ASSERT_EQ(fsm.on_woken(wake::timer, t0 + 100ms, true), action::sleep);
  ASSERT_EQ(fsm.on_woken(wake::message, t0 + 101ms, true), action::sleep);
  ASSERT_EQ(fsm.on_woken(wake::granted, t0 + 102ms, false), action::complete);
  EXPECT_EQ(fsm.outcome(), verdict::acquired);
}

TEST(acquire_fsm, a_reserved_waiter_still_ends_at_its_bound_or_cancellation) {
  {
    auto fsm = make(300ms);
    fsm.start(false);
    fsm.on_attempt(answer::busy, 100ms, t0);
    fsm.on_joined();
    ASSERT_EQ(fsm.on_woken(wake::timer, t0 + 300ms, true), action::complete);
    EXPECT_EQ(fsm.outcome(), verdict::not_acquired);
  }
  {
    auto fsm = make(std::nullopt);
    fsm.start(false);
    fsm.on_attempt(answer::busy, 100ms, t0);
    fsm.on_joined();
    ASSERT_EQ(fsm.on_cancel(false, true), action::interrupt);
    ASSERT_EQ(fsm.on_woken(wake::timer, t0 + 1ms, true), action::complete);
    EXPECT_EQ(fsm.outcome(), verdict::cancelled);
  }
}

TEST(acquire_fsm, cancellation_in_each_phase) {
  {  // before it started
    auto fsm = make(std::nullopt);
    ASSERT_EQ(fsm.start(true), action::complete);
    EXPECT_EQ(fsm.outcome(), verdict::cancelled);
  }
  {  // asleep: the timer is interrupted, and its completion ends the wait
    auto fsm = make(std::nullopt);
    fsm.start(false);
    fsm.on_attempt(answer::busy, 100ms, t0);
    fsm.on_joined();
    ASSERT_EQ(fsm.on_cancel(false, true), action::interrupt);
    ASSERT_EQ(fsm.on_woken(wake::timer, t0 + 1ms), action::complete);
    EXPECT_EQ(fsm.outcome(), verdict::cancelled);
  }
  {  // an attempt still queued: withdrawn
    auto fsm = make(std::nullopt);
    fsm.start(false);
    ASSERT_EQ(fsm.on_cancel(false, false), action::withdraw);
    ASSERT_EQ(fsm.on_attempt(answer::failed, -1ms, t0), action::complete);
    EXPECT_EQ(fsm.outcome(), verdict::cancelled);
  }
  {  // written, connected: the answer is due; a hold it took is given back first
    auto fsm = make(std::nullopt);
    fsm.start(false);
    ASSERT_EQ(fsm.on_cancel(true, true), action::wait);
    ASSERT_EQ(fsm.on_attempt(answer::acquired, -1ms, t0), action::give_back);
    ASSERT_EQ(fsm.on_given_back(false, t0), action::complete);
    EXPECT_EQ(fsm.outcome(), verdict::cancelled);
    EXPECT_EQ(fsm.resume(), action::done);
  }
  {  // written, disconnected: told at once; reconciled and given back in the background
    auto fsm = make(std::nullopt);
    fsm.start(false);
    ASSERT_EQ(fsm.on_cancel(true, false), action::complete);
    EXPECT_EQ(fsm.outcome(), verdict::cancelled);
    ASSERT_EQ(fsm.resume(), action::wait);
    ASSERT_EQ(fsm.on_attempt(answer::unknown, -1ms, t0), action::reconcile);
    ASSERT_EQ(fsm.on_reconciled(answer::acquired, t0), action::give_back);
    EXPECT_EQ(fsm.on_given_back(false, t0), action::done);
  }
  {  // after the caller was told: nothing happens
    auto fsm = make(300ms);
    fsm.start(false);
    fsm.on_bound_passed();
    EXPECT_EQ(fsm.on_cancel(true, true), action::wait);
  }
}

// --- the whole matrix ----------------------------------------------------------------------------

/// Where a cancellation or the caller's bound strikes, counted in events delivered.
enum class strike : std::uint8_t { none, cancel_connected, cancel_disconnected, bound };

/// A scripted server: plays the operation to its end and checks what must hold whatever happens.
struct run_result {
  int completes = 0;
  verdict told = verdict::not_acquired;
  int holds_taken = 0;
  int holds_given_back = 0;
  bool over = false;
  bool struck_before_told = false;
};

run_result play(std::optional<std::chrono::milliseconds> wait, std::deque<answer> attempts,
                std::deque<answer> questions, wake wake_by, strike what, int strike_at) {
  auto fsm = make(wait);
  run_result r;
  auto now = t0;
  enum class pending { none, attempt, question, sleep } waiting = pending::none;
  bool written = false;
  bool withdrawn = false;
  bool interrupted = false;
  action a = fsm.start(false);
  int events = 0;
  for (int step = 0; step < 200 && !r.over; ++step) {
    // Do what the machine says until it waits.
    for (int inner = 0; inner < 20; ++inner) {
      if (a == action::complete) {
        ++r.completes;
        r.told = fsm.outcome();
        a = fsm.resume();
        continue;
      }
      if (a == action::join) {
        a = fsm.on_joined();
        continue;
      }
      if (a == action::give_back) {
        ++r.holds_given_back;
        a = fsm.on_given_back(false, t0);
        continue;
      }
      break;
    }
    switch (a) {
      case action::attempt:
        waiting = pending::attempt;
        written = true;
        break;
      case action::reconcile:
        waiting = pending::question;
        break;
      case action::sleep:
        waiting = pending::sleep;
        break;
      case action::withdraw:
        withdrawn = true;
        break;
      case action::interrupt:
        interrupted = true;
        break;
      case action::done:
        r.over = true;
        continue;
      default:
        break;
    }
    // A strike between two events.
    if (events++ == strike_at && what != strike::none && r.completes == 0) {
      r.struck_before_told = true;
      action hook = action::wait;
      if (what == strike::bound) {
        // Only bounded waits install the hook, and only a written attempt reaches it.
        if (waiting == pending::attempt && wait) hook = fsm.on_bound_passed();
      } else {
        // Even strikes find the attempt still queued, odd ones written.
        hook = fsm.on_cancel(written && strike_at % 2 == 1, what == strike::cancel_connected);
      }
      if (hook == action::complete) {
        ++r.completes;
        r.told = fsm.outcome();
        hook = fsm.resume();
      }
      if (hook == action::withdraw) withdrawn = true;
      if (hook == action::interrupt) interrupted = true;
    }
    now += 10ms;
    // The event the operation waits for.
    switch (waiting) {
      case pending::attempt: {
        answer ans = attempts.empty() ? answer::acquired : attempts.front();
        if (!attempts.empty()) attempts.pop_front();
        if (withdrawn) ans = answer::failed;  // completed as not written
        withdrawn = false;
        if (ans == answer::acquired || ans == answer::unsynced) ++r.holds_taken;
        waiting = pending::none;
        a = fsm.on_attempt(ans, 50ms, now);
        break;
      }
      case pending::question: {
        answer ans = questions.empty() ? answer::busy : questions.front();
        if (!questions.empty()) questions.pop_front();
        if (ans == answer::acquired || ans == answer::ran_no_token) ++r.holds_taken;
        waiting = pending::none;
        a = fsm.on_reconciled(ans, now);
        break;
      }
      case pending::sleep:
        waiting = pending::none;
        if (interrupted) {
          a = fsm.on_woken(wake::timer, now);
        } else {
          if (wake_by == wake::timer) now = fsm.sleep_until();
          // A handoff grant: the shell recorded the hold before waking it.
          if (wake_by == wake::granted) ++r.holds_taken;
          a = fsm.on_woken(wake_by, now);
        }
        interrupted = false;
        break;
      case pending::none:
        if (a == action::wait) r.over = true;  // nothing left to wait for
        break;
    }
  }
  return r;
}

TEST(acquire_fsm, every_combination_tells_the_caller_once_and_leaves_no_hold_behind) {
  const std::deque<std::deque<answer>> attempt_scripts{
      {answer::acquired},
      {answer::busy, answer::acquired},
      {answer::busy, answer::busy, answer::busy},
      {answer::unknown, answer::acquired},
      {answer::unknown, answer::busy},
      {answer::unsynced},
      {answer::failed},
      {answer::not_written},
  };
  const std::deque<std::deque<answer>> question_scripts{
      {answer::acquired},     {answer::busy},   {answer::unknown, answer::acquired},
      {answer::ran_no_token}, {answer::failed},
  };
  const std::optional<std::chrono::milliseconds> waits[] = {std::nullopt, 0ms, 300ms};
  int cases = 0;
  for (const auto& wait : waits) {
    for (const auto& attempts : attempt_scripts) {
      for (const auto& questions : question_scripts) {
        for (wake w : {wake::message, wake::subscribed, wake::timer, wake::granted}) {
          for (strike s : {strike::none, strike::cancel_connected, strike::cancel_disconnected,
                           strike::bound}) {
            for (int at = 0; at < 6; ++at) {
              ++cases;
              const auto r = play(wait, attempts, questions, w, s, at);
              const std::string where =
                  "wait " + (wait ? std::to_string(wait->count()) : std::string("none")) +
                  ", strike " + std::to_string(static_cast<int>(s)) + " at " + std::to_string(at) +
                  ", wake " + std::to_string(static_cast<int>(w));
              EXPECT_EQ(r.completes, 1) << where;
              EXPECT_TRUE(r.over) << where;
              // Every hold an answer took is the caller's or was given back.
              const int kept = r.told == verdict::acquired ? 1 : 0;
              EXPECT_EQ(r.holds_taken, kept + r.holds_given_back) << where;
              if (r.struck_before_told && s != strike::bound) {
                EXPECT_NE(r.told, verdict::acquired) << where;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 1000);
}

}  // namespace
