// Redisson's users' complaints (its tracker, 2025-2026), each reproduced against rlock with the
// reporter's scenario and the defect asserted absent. docs/guide/redisson-complaints.md links
// each complaint to its test, here or elsewhere.
#include "chaos/fault_proxy.hpp"
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
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redisson_complaints_test {

namespace asio = boost::asio;
using rlock::test::make_config;
using rlock::test::poll_until;
using rlock::test::sleep_for;
using rlock::test::wait_until;
using namespace std::chrono_literals;

/// Redisson #7272: acquisitions cancelled while they race a free lock (the watchdog's schedule and
/// its cancel were unordered, so a cancelled acquire could be renewed forever with no holder).
/// Here each of 200 lock() calls on a free lock is cancelled at once (emitted before it starts, or
/// posted after it); the attempts are written and land, most callers are told "cancelled" and
/// their holds are given back (all 200 in a quiet run), the others unlock: nothing is renewed,
/// and the key is gone once the dust settles and stays gone for three watchdog periods.
TEST(redisson_complaints, a_cancelled_acquire_is_never_renewed_7272) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.watchdog_timeout = 300ms;
  rlock::client c(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    auto lock = c.get_lock("raced");
    const auto key = std::string(lock.key());
    int held = 0;
    int cancelled = 0;
    int finished = 0;
    for (int i = 0; i < 200; ++i) {
      auto signal = std::make_shared<asio::cancellation_signal>();
      asio::co_spawn(
          io,
          [&, signal]() -> asio::awaitable<void> {
            // The cancellation is lock()'s to answer; a caller told "acquired" still unlocks.
            co_await asio::this_coro::throw_if_cancelled(false);
            bool got = false;
            try {
              co_await lock.lock();
              got = true;
            } catch (const boost::system::system_error&) {
              ++cancelled;
            }
            if (got) {
              ++held;
              co_await lock.unlock();
            }
            ++finished;
          },
          asio::bind_cancellation_slot(signal->slot(), asio::detached));
      if (i % 2 == 0) {
        signal->emit(asio::cancellation_type::terminal);  // before its request is written
      } else {
        asio::post(io, [signal] { signal->emit(asio::cancellation_type::terminal); });
      }
      if (i % 20 == 19) {
        const bool settled = co_await poll_until([&] { return finished == i + 1; });
        RLOCK_CO_ASSERT(settled);
      }
    }
    EXPECT_EQ(held + cancelled, 200);
    EXPECT_GT(c.stats().given_back, 0u);  // the race exercised: holds landed for cancelled callers
    EXPECT_GT(cancelled, 0);
    // Holds that landed for cancelled callers are given back; then nothing is renewed.
    const bool quiet = co_await poll_until([&] {
      return c.activity().renewed_locks == 0 && raw.command_int({"EXISTS", key}) == 0;
    });
    EXPECT_TRUE(quiet);
    const auto renewals = c.stats().renewal_calls;
    co_await sleep_for(3 * cfg.watchdog_timeout);
    EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
    EXPECT_EQ(c.stats().renewal_calls, renewals);
    EXPECT_FALSE(c.activity().watchdog_armed);
    co_await c.close();
  });
}

/// Redisson #7272's second case: try_lock with a wait that ends while the lock is busy, 100 times
/// against a holder (0, 1 or 2 ms: false when answered busy in time, timeout when not); none is
/// renewed once its caller was told.
TEST(redisson_complaints, a_timed_out_try_lock_is_never_renewed_7272) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.watchdog_timeout = 300ms;
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto holder = a.get_lock("timed");
    // An explicit lease far longer than the 100 attempts: the short watchdog lease is the
    // waiter's (a renewal of its timed-out attempts would show), not the holder's, which a
    // loaded machine could let lapse between two renewals.
    co_await holder.lock(60s);
    auto waiter = b.get_lock("timed");
    int timed_out = 0;
    for (int i = 0; i < 100; ++i) {
      // Answered busy within the wait: false. Not answered within it (1 or 2 ms, a slow
      // machine): timeout, and an acquisition that happens after all is given back.
      bool got = false;
      try {
        got = co_await waiter.try_lock(std::chrono::milliseconds(i % 3));
      } catch (const boost::system::system_error& e) {
        EXPECT_EQ(e.code(), rlock::errc::timeout) << e.what();
        ++timed_out;
      }
      EXPECT_FALSE(got);
    }
    // Whatever each ended as, none is renewed once its caller was told.
    const bool settled = co_await poll_until([&] { return b.activity().renewed_locks == 0; });
    EXPECT_TRUE(settled) << timed_out << " timed out";
    EXPECT_EQ(b.activity().renewed_locks, 0u);
    EXPECT_FALSE(b.activity().watchdog_armed);
    EXPECT_EQ(b.stats().renewal_calls, 0u);
    co_await holder.unlock();
    co_await a.close();
    co_await b.close();
  });
}

/// Redisson #7251: a read lock taken twice by its owner and released twice left its watchdog
/// entry behind, renewing a lock nobody held.
TEST(redisson_complaints,
     a_reentrant_read_lock_released_as_often_as_taken_is_no_longer_renewed_7251) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.watchdog_timeout = 300ms;
  rlock::client c(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    auto rw = c.get_read_write_lock("rw");
    auto reader = rw.read_lock();
    co_await reader.lock();
    co_await reader.lock();
    EXPECT_EQ(c.activity().renewed_locks, 1u);
    co_await reader.unlock();
    EXPECT_EQ(c.activity().renewed_locks, 1u);  // still held once: still renewed
    co_await reader.unlock();
    EXPECT_EQ(c.activity().renewed_locks, 0u);
    EXPECT_FALSE(c.activity().watchdog_armed);
    const auto renewals = c.stats().renewal_calls;
    co_await sleep_for(3 * cfg.watchdog_timeout);
    EXPECT_EQ(c.stats().renewal_calls, renewals);
    EXPECT_EQ(raw.command_int({"EXISTS", std::string(reader.key())}), 0);
    co_await c.close();
  });
}

/// Redisson #6664 (its RPermitExpirableSemaphore; rlock's multi-permit holds are semaphore's, in
/// the same `{name}:timeout` zset): with 2 permits, A and B each want both; A holds them 500 ms
/// and releases. B slept on a latch counting waiters, not permits, and was never woken: it waited
/// its whole wait. Here B is woken by the release's message and takes both in one more attempt.
TEST(redisson_complaints, a_waiter_for_several_permits_is_woken_when_they_come_back_6664) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto theirs = a.get_semaphore("pair");
    auto ours = b.get_semaphore("pair");
    EXPECT_TRUE(co_await theirs.try_set_permits(2));
    auto both = co_await theirs.acquire(2);
    std::optional<rlock::permit> got;
    bool done = false;
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          got = co_await ours.try_acquire(2, 20s);
          done = true;
          bell.cancel();
        },
        asio::detached);
    // Its first attempt and its retry once subscribed: asleep.
    const bool asleep = co_await poll_until([&] { return b.stats().acquire_attempts >= 2; });
    RLOCK_CO_ASSERT(asleep);
    co_await sleep_for(500ms);  // the reporter's hold
    const auto before = b.stats().acquire_attempts;
    co_await both.unlock();
    co_await wait_until(
        bell, [&] { return done; }, 10s);
    RLOCK_CO_ASSERT(got.has_value());
    EXPECT_EQ(got->count(), 2u);
    EXPECT_EQ(b.stats().acquire_attempts - before, 1u);  // woken once, took both
    EXPECT_EQ(b.stats().notified_wakeups, 1u);
    co_await got->unlock();
    EXPECT_EQ(co_await ours.available(), 2);
    co_await a.close();
    co_await b.close();
  });
}

/// Redisson #6539 and #6766: a waiter whose subscription completes late. Redisson's tryLock
/// returned false when its subscription took longer than the wait, and waiters that missed the
/// unlock message slept the holder's whole lease. Here the waiter's replies are 400 ms late (the
/// fault proxy), and the holder unlocks after the waiter's first attempt ran on the server but
/// before its SUBSCRIBE got there: the unlock's message reaches nobody. The subscription's
/// confirmation makes the waiter look again, and it takes the lock, long before the holder's
/// 30 s lease or its own 10 s wait would end.
TEST(redisson_complaints, an_unlock_before_the_subscription_is_confirmed_is_not_waited_out_6539) {
  asio::io_context io;
  auto cfg = make_config();
  rlock::test::fault_proxy proxy(cfg.port);
  auto slow = cfg;
  slow.port = proxy.port();
  slow.health_check_interval = 0ms;  // late replies must not look like a dead connection
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), slow);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto holder = a.get_lock("late-subscription");
    auto waiter = b.get_lock("late-subscription");
    co_await holder.lock(30s);
    proxy.set_delay(rlock::test::direction::to_client, 400ms);
    const auto before = raw.calls_of("evalsha");
    bool got = false;
    bool done = false;
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          got = co_await waiter.try_lock(10s);
          done = true;
          bell.cancel();
        },
        asio::detached);
    // Its first attempt has run on the server; the answer ("busy") is still on its way, and the
    // SUBSCRIBE it leads to is not sent yet.
    const bool ran = co_await poll_until([&] { return raw.calls_of("evalsha") > before; });
    RLOCK_CO_ASSERT(ran);
    co_await holder.unlock();
    co_await wait_until(
        bell, [&] { return done; }, 15s);
    EXPECT_TRUE(got);
    EXPECT_EQ(b.stats().expiry_wakeups, 0u);
    EXPECT_NE(waiter.last_wake(), rlock::wake_reason::expiry);
    proxy.heal();
    if (got) co_await waiter.unlock();
    co_await a.close();
    co_await b.close();
  });
}

/// Redisson #6480: its multi-lock takes its members one after another, one round trip each. rlock
/// makes one attempt at every member at once: ten free members are taken in one write and given
/// back in one (counted by the fault proxy between client and server, no clock); a busy member
/// leaves none of the others taken.
TEST(redisson_complaints, a_multi_lock_takes_its_free_members_in_one_round_trip_6480) {
  asio::io_context io;
  auto cfg = make_config();
  rlock::test::fault_proxy proxy(cfg.port);
  auto counted = cfg;
  counted.port = proxy.port();
  rlock::client c(io.get_executor(), counted);
  rlock::client other(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    co_await other.connect();
    std::vector<rlock::lock_handle> members;
    for (int i = 0; i < 10; ++i) members.push_back(c.get_lock("member-" + std::to_string(i)));
    rlock::multi_lock group(members);
    using rlock::test::direction;
    auto writes = [&] { return proxy.writes(direction::to_server); };
    const auto before = writes();
    co_await group.lock(10s);  // a lease: no renewal writes meanwhile
    const auto taking = writes() - before;
    EXPECT_LE(taking, 2u) << "writes to take 10 free members (one each before)";
    for (const auto& m : members) {
      EXPECT_EQ(raw.command_int({"EXISTS", std::string(m.key())}), 1);
    }
    const auto held = writes();
    co_await group.unlock();
    EXPECT_LE(writes() - held, 2u) << "writes to give back 10 members";
    // One busy member in the middle: the group is not taken, and nothing else stays taken.
    auto blocker = other.get_lock("member-5");
    co_await blocker.lock();
    EXPECT_FALSE(co_await group.try_lock());
    for (const auto& m : members) {
      EXPECT_EQ(raw.command_int({"EXISTS", std::string(m.key())}), m.name() == "member-5" ? 1 : 0)
          << m.name();
    }
    co_await blocker.unlock();
    EXPECT_TRUE(co_await group.try_lock(5s));
    co_await group.unlock();
    co_await c.close();
    co_await other.close();
  });
}

/// Redisson #5019's entries left behind, in the form F1 found in rlock: a waiter that gives up and
/// whose client closes at once (a process that exits when its try_lock fails). The leave script
/// went out in the background and close() did not wait for it, so the queue entry stayed for the
/// allowance (60 s). close() now waits for the leaves in flight, as for the unlock latches' DELs:
/// nothing stays, for a fair queue's entry nor for a waiting writer's mark.
TEST(redisson_complaints,
     a_waiter_that_gives_up_and_closes_its_client_at_once_leaves_nothing_5019) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client holder(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await holder.connect();
    auto fair = holder.get_fair_lock("gives-up");
    auto rw = holder.get_read_write_lock("gives-up-rw");
    co_await fair.lock();
    co_await rw.read_lock().lock();
    const std::string queue = "redisson_lock_queue:{" + std::string(fair.key()) + "}";
    const std::string timeouts = "redisson_lock_timeout:{" + std::string(fair.key()) + "}";
    const std::string marks = "{" + std::string(rw.read_lock().key()) + "}:rlock_writers";
    for (int round = 0; round < 3; ++round) {
      rlock::client waiter(io.get_executor(), cfg);
      co_await waiter.connect();
      EXPECT_FALSE(co_await waiter.get_fair_lock("gives-up").try_lock(150ms));
      EXPECT_FALSE(co_await waiter.get_read_write_lock("gives-up-rw").write_lock().try_lock(150ms));
      co_await waiter.close();  // at once, as a process exiting
      EXPECT_EQ(raw.command_int({"EXISTS", queue}), 0) << round;
      EXPECT_EQ(raw.command_int({"EXISTS", timeouts}), 0) << round;
      EXPECT_EQ(raw.command_int({"EXISTS", marks}), 0) << round;
    }
    co_await fair.unlock();
    co_await rw.read_lock().unlock();
    co_await holder.close();
  });
}

/// Redisson #6510: 25 M of a deployment's 75 M keys were fenced locks' token counters, kept
/// forever. With config::fenced_lock's token_idle_ttl, a thousand names fenced once each leave
/// counters that expire (key inspection), and a name fenced again after its counter is gone gets
/// a token above every earlier one.
TEST(redisson_complaints,
     fenced_token_counters_of_idle_names_expire_and_tokens_never_go_back_6510) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.fenced_lock.token_idle_ttl = 60s;
  rlock::client c(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    std::int64_t highest = 0;
    std::string first_counter;
    for (int i = 0; i < 1000; ++i) {
      auto lock = c.get_fenced_lock("order-" + std::to_string(i));
      const auto token = co_await lock.try_lock(0ms, 10s);
      EXPECT_TRUE(token.has_value()) << lock.name();
      if (token) highest = std::max(highest, *token);
      co_await lock.unlock();
      if (i == 0) first_counter = lock.token_key();
    }
    // Every counter left behind carries a TTL (Redisson's would all read -1).
    std::size_t without_ttl = 0;
    for (int i = 0; i < 1000; ++i) {
      const auto key = c.get_fenced_lock("order-" + std::to_string(i)).token_key();
      const auto ttl = raw.command_int({"PTTL", key});
      if (ttl <= 0 || ttl > 60'000) ++without_ttl;
    }
    EXPECT_EQ(without_ttl, 0u);
    // The first name's counter expires (its TTL brought forward); fenced again, it goes on
    // above every token any of the thousand names gave.
    raw.command({"PEXPIRE", first_counter, "1"});
    EXPECT_TRUE(co_await rlock::test::poll_until([&] {
      return raw.command_int({"EXISTS", first_counter}) == 0;
    }));
    auto again = c.get_fenced_lock("order-0");
    const std::int64_t token = co_await again.lock(10s);
    EXPECT_GT(token, highest);
    co_await again.unlock();
    co_await c.close();
  });
}

}  // namespace redisson_complaints_test
