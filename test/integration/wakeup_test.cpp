// Waiting without polling: unlock notifications wake waiters one at a time, per client.
#include "rlock/rlock.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace wakeup_test {

namespace asio = boost::asio;
using rlock::test::channel_of;
using rlock::test::make_config;
using rlock::test::wait_until;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

TEST(wakeup, waiter_acquires_within_100ms_of_unlock) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client holder_client(io.get_executor(), cfg);
  rlock::client waiter_client(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await holder_client.connect();
    co_await waiter_client.connect();
    auto holder = holder_client.get_lock("account");
    auto waiter = waiter_client.get_lock("account");
    co_await holder.lock(30s);

    clock_type::time_point acquired_at{};
    asio::steady_timer bell(io);
    int done = 0;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await waiter.lock();
          acquired_at = clock_type::now();
          ++done;
          bell.cancel();
        },
        asio::detached);

    // Let the waiter fail its attempts and go to sleep behind the 30 s lease.
    asio::steady_timer pause(io, 300ms);
    co_await pause.async_wait(asio::use_awaitable);
    EXPECT_EQ(done, 0);
    co_await holder.unlock();
    const auto released_at = clock_type::now();
    co_await wait_until(
        bell, [&] { return done >= 1; }, 10s);
    RLOCK_CO_ASSERT(done == 1);
    EXPECT_LT(acquired_at - released_at, 100ms);
    EXPECT_EQ(waiter.last_wake(), rlock::wake_reason::notification);
    EXPECT_EQ(waiter_client.stats().expiry_wakeups, 0u);
    co_await waiter.unlock();
    co_await holder_client.close();
    co_await waiter_client.close();
  });
}

TEST(wakeup, one_unlock_costs_constant_attempts_with_50_waiters) {
  constexpr int waiters = 50;
  asio::io_context io;
  auto cfg = make_config();
  rlock::client holder_client(io.get_executor(), cfg);
  rlock::client waiter_client(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(
      io,
      [&]() -> asio::awaitable<void> {
        co_await holder_client.connect();
        co_await waiter_client.connect();
        auto holder = holder_client.get_lock("account");
        co_await holder.lock(30s);

        // Each waiter records the attempt counter when it gets the lock, holds it until the
        // test says go, then unlocks; the next unlock is then always the previous holder's.
        std::vector<rlock::reentrant_lock> locks;
        for (int i = 0; i < waiters; ++i) locks.push_back(waiter_client.get_lock("account"));
        std::vector<std::uint64_t> attempts_at_acquire;
        asio::steady_timer bell(io);
        asio::steady_timer go(io, clock_type::time_point::max());
        int acquired = 0;
        for (auto& l : locks) {
          asio::co_spawn(
              io,
              [&]() -> asio::awaitable<void> {
                co_await l.lock();
                attempts_at_acquire.push_back(waiter_client.stats().acquire_attempts);
                ++acquired;
                bell.cancel();
                co_await go.async_wait(asio::as_tuple(asio::use_awaitable));
                co_await l.unlock();
              },
              asio::detached);
        }
        // Every waiter made its first attempt and its retry after subscribing: all asleep.
        for (int i = 0; i < 500 && waiter_client.stats().acquire_attempts < 2 * waiters; ++i) {
          asio::steady_timer poll(io, 10ms);
          co_await poll.async_wait(asio::use_awaitable);
        }
        const auto before = waiter_client.stats().acquire_attempts;
        co_await holder.unlock();
        co_await wait_until(
            bell, [&] { return acquired >= 1; }, 10s);
        RLOCK_CO_ASSERT(acquired == 1);
        EXPECT_LE(attempts_at_acquire[0] - before, 3u) << "one unlock woke more than one waiter";

        // The chain goes on: each unlock costs at most 3 attempts for the next holder.
        for (int next = 2; next <= 10; ++next) {
          const auto mark = waiter_client.stats().acquire_attempts;
          go.cancel();  // the current holder unlocks
          go.expires_at(clock_type::time_point::max());
          co_await wait_until(
              bell, [&] { return acquired >= next; }, 10s);
          RLOCK_CO_ASSERT(acquired == next);
          EXPECT_LE(attempts_at_acquire[next - 1] - mark, 3u);
        }
        // One subscription for all waiters of the name.
        auto numsub = raw.command({"PUBSUB", "NUMSUB", channel_of(holder)});
        RLOCK_CO_ASSERT(numsub.elements.size() == 2u);
        EXPECT_EQ(numsub.elements[1].integer, 1);
        // Let the rest through so the test ends cleanly.
        for (int next = 11; next <= waiters; ++next) {
          go.cancel();
          go.expires_at(clock_type::time_point::max());
          co_await wait_until(
              bell, [&] { return acquired >= next; }, 10s);
        }
        EXPECT_EQ(acquired, waiters);
        go.cancel();
        co_await holder_client.close();
        co_await waiter_client.close();
      },
      60s);
}

TEST(wakeup, a_woken_waiter_that_loses_the_race_sleeps_again) {
  // Two clients' waiters are both woken by one unlock; one wins. The other's retry is refused
  // and it must sleep again until the next message or the holder's TTL, not retry at once.
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::client c(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    co_await c.connect();
    auto holder = a.get_lock("race");
    co_await holder.lock(30s);
    auto wb = b.get_lock("race");
    auto wc = c.get_lock("race");
    int acquired = 0;
    asio::steady_timer bell(io);
    asio::steady_timer done(io, clock_type::time_point::max());
    auto wait = [&](rlock::reentrant_lock& l) -> asio::awaitable<void> {
      co_await l.lock(30s);
      ++acquired;
      bell.cancel();
      co_await done.async_wait(asio::as_tuple(asio::use_awaitable));
      co_await l.unlock();
    };
    asio::co_spawn(io, wait(wb), asio::detached);
    asio::co_spawn(io, wait(wc), asio::detached);
    RLOCK_CO_ASSERT(co_await rlock::test::until_asleep(b, wb, 2));
    RLOCK_CO_ASSERT(co_await rlock::test::until_asleep(c, wc, 2));
    co_await holder.unlock();
    co_await wait_until(
        bell, [&] { return acquired >= 1; }, 10s);
    RLOCK_CO_ASSERT(acquired == 1);
    const auto mark = b.stats().acquire_attempts + c.stats().acquire_attempts;
    // Nothing to await here: the loser must do nothing. Its retry may still be on its way
    // when the winner is told; anything past that is a waiter retrying without a reason.
    const bool spun = co_await rlock::test::poll_until(
        [&] { return b.stats().acquire_attempts + c.stats().acquire_attempts > mark + 1; }, 300ms);
    EXPECT_FALSE(spun) << (b.stats().acquire_attempts + c.stats().acquire_attempts - mark)
                       << " attempts while the lock was held";
    done.expires_at(clock_type::time_point::min());  // wakes the winner, and lets the loser by
    co_await wait_until(
        bell, [&] { return acquired == 2; }, 10s);
    EXPECT_EQ(acquired, 2);
    co_await a.close();
    co_await b.close();
    co_await c.close();
  });
}

TEST(wakeup, expired_lease_wakes_the_waiter_by_ttl) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client holder_client(io.get_executor(), cfg);
  rlock::client waiter_client(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await holder_client.connect();
    co_await waiter_client.connect();
    auto holder = holder_client.get_lock("account");
    auto waiter = waiter_client.get_lock("account");
    co_await holder.lock(400ms);  // and never unlocks: a crashed holder
    const auto start = clock_type::now();
    co_await waiter.lock();
    const auto waited = clock_type::now() - start;
    EXPECT_GE(waited, 200ms);
    EXPECT_LT(waited, 5s);
    EXPECT_EQ(waiter.last_wake(), rlock::wake_reason::expiry);
    co_await waiter.unlock();
    co_await holder_client.close();
    co_await waiter_client.close();
  });
}

TEST(wakeup, unlock_by_redis_cli_style_foreign_publish_wakes_waiter) {
  asio::io_context io;
  auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    // A foreign holder: a hash with somebody else's field and a 30 s TTL.
    raw.command({"HSET", lock.key(), "00000000-0000-4000-8000-000000000000:7", "1"});
    raw.command({"PEXPIRE", lock.key(), "30000"});
    clock_type::time_point acquired_at{};
    int done = 0;
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await lock.lock();
          acquired_at = clock_type::now();
          ++done;
          bell.cancel();
        },
        asio::detached);
    asio::steady_timer pause(io, 300ms);
    co_await pause.async_wait(asio::use_awaitable);
    raw.command({"DEL", lock.key()});
    raw.command({"PUBLISH", channel_of(lock), "0"});
    const auto released_at = clock_type::now();
    co_await wait_until(
        bell, [&] { return done >= 1; }, 10s);
    RLOCK_CO_ASSERT(done == 1);
    EXPECT_LT(acquired_at - released_at, 1s);
    EXPECT_EQ(lock.last_wake(), rlock::wake_reason::notification);
    co_await lock.unlock();
    co_await redis.close();
  });
}

TEST(wakeup, subscription_is_dropped_when_the_last_waiter_leaves) {
  asio::io_context io;
  auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto holder = redis.get_lock("account");
    auto waiter = redis.get_lock("account");
    co_await holder.lock(300ms);
    EXPECT_FALSE(co_await waiter.try_lock(100ms));  // waited, subscribed, gave up
    co_await waiter.is_locked();  // a round trip after the UNSUBSCRIBE on this connection
    auto numsub = raw.command({"PUBSUB", "NUMSUB", channel_of(holder)});
    RLOCK_CO_ASSERT(numsub.elements.size() == 2u);
    EXPECT_EQ(numsub.elements[1].integer, 0);
    co_await redis.close();
  });
}

// config::max_attempts_in_flight: lock() attempts beyond it wait their turn in the client, in
// order, and every waiter still gets the lock; bounded try_lock attempts never wait there.
TEST(wakeup, lock_attempts_beyond_the_limit_wait_their_turn_and_all_acquire) {
  constexpr std::size_t waiters = 20;
  constexpr std::size_t limit = 2;
  asio::io_context io;
  auto cfg = make_config();
  rlock::client holder_client(io.get_executor(), cfg);
  cfg.max_attempts_in_flight = limit;
  rlock::client waiter_client(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await holder_client.connect();
    co_await waiter_client.connect();
    auto holder = holder_client.get_lock("gate");
    co_await holder.lock(30s);

    std::vector<rlock::reentrant_lock> locks;
    for (std::size_t i = 0; i < waiters; ++i) locks.push_back(waiter_client.get_lock("gate"));
    asio::steady_timer bell(io);
    std::size_t acquired = 0;
    int inside = 0;
    int most_inside = 0;
    for (std::size_t i = 0; i < waiters; ++i) {
      // Started from the client's thread: each attempt starts inside the call.
      locks[i].async_lock(std::nullopt, [&, i](boost::system::error_code ec) {
        EXPECT_FALSE(ec) << ec.message();
        ++acquired;
        most_inside = std::max(most_inside, ++inside);
        --inside;
        locks[i].async_unlock([&](boost::system::error_code) { bell.cancel(); });
      });
    }
    // No answer can have come yet: `limit` attempts went out, the rest wait in the client.
    EXPECT_EQ(waiter_client.activity().queued_attempts, waiters - limit);
    // Every waiter gets its turn, fails and sleeps: nothing is left in line.
    RLOCK_CO_ASSERT(co_await rlock::test::poll_until([&] {
      return waiter_client.activity().queued_attempts == 0 &&
             waiter_client.activity().waiters == waiters && waiter_client.activity().requests == 0;
    }));
    EXPECT_EQ(acquired, 0u);

    co_await holder.unlock();
    co_await wait_until(
        bell, [&] { return acquired == waiters && inside == 0; }, 20s);
    RLOCK_CO_ASSERT(acquired == waiters);
    EXPECT_EQ(most_inside, 1);
    EXPECT_EQ(waiter_client.stats().expiry_wakeups, 0u);
    RLOCK_CO_ASSERT(
        co_await rlock::test::poll_until([&] { return waiter_client.activity().idle(); }));

    // try_lock with a wait is never held back: all of them go out at once.
    co_await holder.lock(30s);
    std::size_t answered = 0;
    for (std::size_t i = 0; i < waiters; ++i) {
      locks[i].async_try_lock(300ms, [&](boost::system::error_code ec, bool got) {
        EXPECT_FALSE(ec || got);
        ++answered;
        bell.cancel();
      });
    }
    EXPECT_EQ(waiter_client.activity().queued_attempts, 0u);
    EXPECT_GE(waiter_client.activity().requests, waiters);
    co_await wait_until(
        bell, [&] { return answered == waiters; }, 10s);
    RLOCK_CO_ASSERT(answered == waiters);
    co_await holder.unlock();
    co_await holder_client.close();
    co_await waiter_client.close();
  });
}

}  // namespace wakeup_test
