// Local handoff (config::local_handoff): a final unlock that finds a coroutine of the same client
// parked on the lock hands the hold to it in one script. What must hold when the waiter does not
// stay for it (cancelled, or out of time while the transfer is in flight: a stopped server makes
// that window as long as the test needs), for a kind that must not hand off (fenced), and with
// the handoff turned off. Redisson's view of a handed-over lock is in interop_test.
#include "rlock/rlock.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <optional>
#include <string>
#include <system_error>

namespace handoff_test {

namespace asio = boost::asio;
using rlock::test::error_of;
using rlock::test::poll_until;
using rlock::test::until_asleep;
using rlock::test::wait_until;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

/// The test's config with the handoff on, as by default: 8 in a row, 20 ms.
rlock::config handoff_config() {
  auto cfg = rlock::test::make_config();
  cfg.local_handoff.max_streak = 8;
  cfg.local_handoff.max_time = 20ms;
  return cfg;
}

/// A waiter that leaves while the handoff to it is in flight: by cancellation, or by its bound.
enum class leaves { cancelled, out_of_time };

class handoff_in_flight : public testing::TestWithParam<leaves> {};

TEST_P(handoff_in_flight, a_waiter_that_left_gets_nothing_and_the_hold_goes_back) {
  rlock::test::redis_server server;
  asio::io_context io;
  auto cfg = handoff_config();
  cfg.port = server.port();
  cfg.health_check_interval = 30s;  // the server is stopped on purpose
  cfg.command_timeout = 30s;
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto holder = redis.get_lock("passed");
    auto waiter = redis.get_lock("passed");
    co_await holder.lock();
    std::optional<std::error_code> outcome;
    bool acquired = false;
    asio::steady_timer bell(io, clock_type::time_point::max());
    asio::cancellation_signal stop;
    const auto attempts = redis.stats().acquire_attempts;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          if (GetParam() == leaves::cancelled) {
            outcome = co_await error_of(waiter.lock());
            acquired = !*outcome;
          } else {
            try {
              acquired = co_await waiter.try_lock(1500ms);
              outcome = std::error_code{};
            } catch (const boost::system::system_error& e) {
              outcome = e.code();
            }
          }
          bell.cancel();
        },
        asio::bind_cancellation_slot(stop.slot(), asio::detached));
    RLOCK_CO_ASSERT(co_await until_asleep(redis, holder, attempts + 2));
    // The unlock picks the parked waiter and writes the transfer; the server holds it unrun.
    ::kill(server.pid(), SIGSTOP);
    bool unlocked = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await holder.unlock();
          unlocked = true;
          bell.cancel();
        },
        asio::detached);
    if (GetParam() == leaves::cancelled) {
      co_await rlock::test::sleep_for(100ms);  // the transfer is written by now
      stop.emit(asio::cancellation_type::terminal);
    }
    co_await wait_until(
        bell, [&] { return outcome.has_value(); }, 10s);
    ::kill(server.pid(), SIGCONT);
    // Handed over on the server, to a waiter that left.
    co_await wait_until(
        bell, [&] { return unlocked; }, 10s);
    EXPECT_TRUE(unlocked);
    RLOCK_CO_ASSERT(outcome.has_value());
    EXPECT_FALSE(acquired);
    if (GetParam() == leaves::cancelled) {
      EXPECT_EQ(*outcome, std::errc::operation_canceled);
    } else {
      EXPECT_FALSE(*outcome);  // try_lock's false: the server answered it before (busy)
    }
    EXPECT_TRUE(co_await poll_until([&] { return redis.stats().handoffs_given_back == 1; }, 5s));
    EXPECT_EQ(redis.stats().local_handoffs, 1u);
    EXPECT_TRUE(co_await poll_until([&] { return redis.activity().renewed_locks == 0; }, 5s));
    EXPECT_FALSE(co_await holder.is_locked());  // nobody holds a lock nobody knows of
    co_await redis.close();
  });
}

INSTANTIATE_TEST_SUITE_P(waiters, handoff_in_flight,
                         testing::Values(leaves::cancelled, leaves::out_of_time),
                         [](const testing::TestParamInfo<leaves>& param) {
                           return std::string(param.param == leaves::cancelled ? "cancelled"
                                                                               : "out_of_time");
                         });

/// One holder, one waiter of the same client: how the waiter got the lock.
template <rlock::owned_lock Lock>
asio::awaitable<rlock::wake_reason> pass_once(rlock::client& redis, Lock holder, Lock waiter) {
  co_await holder.lock();
  EXPECT_TRUE(co_await rlock::test::pass_to_sleeping_waiter(redis, holder, waiter));
  co_await waiter.unlock();
  co_return waiter.last_wake();
}

TEST(handoff, a_parked_coroutine_of_the_same_client_gets_the_lock_from_the_unlock) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), handoff_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto a = redis.get_lock("passed");
    auto b = redis.get_lock("passed");
    EXPECT_EQ(co_await pass_once(redis, a, b), rlock::wake_reason::handoff);
    EXPECT_EQ(redis.stats().local_handoffs, 1u);
    EXPECT_EQ(redis.metrics().acquisitions_handoff, 1u);
    EXPECT_EQ(redis.activity().waiters, 0u);
    co_await redis.close();
  });
}

TEST(handoff, turned_off_the_unlock_publishes_and_wakes_the_waiter) {
  asio::io_context io;
  auto cfg = rlock::test::make_config();
  cfg.local_handoff.max_streak = 0;
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto a = redis.get_lock("passed");
    auto b = redis.get_lock("passed");
    EXPECT_EQ(co_await pass_once(redis, a, b), rlock::wake_reason::notification);
    EXPECT_EQ(redis.stats().local_handoffs, 0u);
    co_await redis.close();
  });
}

TEST(handoff, a_fenced_waiter_takes_a_new_token_instead) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), handoff_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto a = redis.get_fenced_lock("fenced-passed");
    auto b = redis.get_fenced_lock("fenced-passed");
    EXPECT_EQ(co_await pass_once(redis, a, b), rlock::wake_reason::notification);
    EXPECT_GT(b.token(), a.token());
    EXPECT_EQ(redis.stats().local_handoffs, 0u);
    co_await redis.close();
  });
}

// A transfer answered "not the owner" may still have run (a retry that reads the latch after it
// is gone): the unlock asks the server before it lets the reserved waiter go. Here the hash is
// made to look as if the transfer ran and its answer was lost, which is what that retry sees.
// Before the settle, the waiter was woken to retry, re-entered the hold handed to it (count 2
// where it knew of 1), and its final unlock left the lock held and renewed for nobody.
TEST(handoff, a_transfer_that_may_have_run_is_settled_by_asking_the_server) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), handoff_config());
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto holder = redis.get_lock("settled");
    auto waiter = redis.get_lock("settled");
    co_await holder.lock();
    // A named lambda, not a temporary: g++ 12 mishandles those inside co_await expressions.
    auto transfer_ran_and_its_answer_was_lost = [&]() -> asio::awaitable<void> {
      // The first run of the transfer, as the server would have made it.
      raw.command({"HDEL", holder.key(), holder.owner_field()});
      raw.command({"HSET", holder.key(), waiter.owner_field(), "1"});
      raw.command({"PEXPIRE", holder.key(), "30000"});
      EXPECT_EQ(co_await error_of(holder.unlock()), rlock::errc::not_owner);
    };
    RLOCK_CO_ASSERT(co_await rlock::test::pass_to_sleeping_waiter(
        redis, holder, waiter, transfer_ran_and_its_answer_was_lost));
    EXPECT_EQ(waiter.last_wake(), rlock::wake_reason::handoff);
    EXPECT_EQ(co_await waiter.hold_count(), 1);  // granted, not re-entered
    co_await waiter.unlock();
    EXPECT_FALSE(co_await waiter.is_locked());
    EXPECT_TRUE(co_await poll_until([&] { return redis.activity().renewed_locks == 0; }, 5s));
    co_await redis.close();
  });
}

// The soak's case end to end: the transfer is written to a stopped server, the connection is
// declared dead and the release's bound passes while it waits to be written again (its caller
// is told `timeout`); when the server resumes it runs the transfer, and the client, back on a
// new connection, learns what happened (the latched retry, or the settle's question). The
// waiter must end up holding the lock once, and its unlock must free it: never a second count
// renewed for nobody.
TEST(handoff, a_transfer_lost_with_its_connection_still_ends_with_one_known_hold) {
  rlock::test::redis_server server;
  asio::io_context io;
  auto cfg = handoff_config();
  cfg.port = server.port();
  cfg.command_timeout = 300ms;
  cfg.health_check_interval = 100ms;
  cfg.connect_timeout = 200ms;
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto holder = redis.get_lock("lost-transfer");
    auto waiter = redis.get_lock("lost-transfer");
    co_await holder.lock();
    const auto reconnects = redis.stats().reconnects;
    auto unlock_to_a_stopped_server = [&]() -> asio::awaitable<void> {
      ::kill(server.pid(), SIGSTOP);
      EXPECT_EQ(co_await error_of(holder.unlock()), rlock::errc::timeout);
      // Declared dead by the health check while stopped; resumed only after the release's bound.
      EXPECT_TRUE(co_await poll_until(
          [&] { return redis.state() != rlock::connection_state::connected; }, 5s));
      co_await rlock::test::sleep_for(300ms);
      ::kill(server.pid(), SIGCONT);
    };
    RLOCK_CO_ASSERT(co_await rlock::test::pass_to_sleeping_waiter(redis, holder, waiter,
                                                                  unlock_to_a_stopped_server, 10s));
    EXPECT_GE(redis.stats().reconnects, reconnects + 1);
    EXPECT_EQ(waiter.last_wake(), rlock::wake_reason::handoff);  // granted, not re-entered
    EXPECT_EQ(co_await waiter.hold_count(), 1);
    co_await waiter.unlock();
    EXPECT_FALSE(co_await waiter.is_locked());
    EXPECT_TRUE(co_await poll_until([&] { return redis.activity().renewed_locks == 0; }, 5s));
    co_await redis.close();
  });
}

}  // namespace handoff_test
