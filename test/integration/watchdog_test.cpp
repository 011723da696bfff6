// The lease watchdog: renewal of locks taken without a lease, batching, lost-lock reports.
#include "rlock/rlock.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <system_error>
#include <vector>

namespace watchdog_test {

namespace asio = boost::asio;
using rlock::test::error_of;
using rlock::test::sleep_for;
using rlock::test::wait_until;
using namespace asio::experimental::awaitable_operators;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

rlock::config make_config(std::chrono::milliseconds watchdog_timeout) {
  auto cfg = rlock::test::make_config();
  cfg.watchdog_timeout = watchdog_timeout;
  return cfg;
}

std::int64_t pttl(rlock::test::raw_client& raw, std::string_view key) {
  return raw.command_int({"PTTL", key});
}

std::int64_t exists(rlock::test::raw_client& raw, std::string_view key) {
  return raw.command_int({"EXISTS", key});
}

TEST(watchdog, renews_a_lock_held_far_past_its_lease) {
  asio::io_context io;
  const auto cfg = make_config(600ms);
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    const auto renewals_before = redis.stats().renewal_calls;
    co_await lock.lock();
    const auto start = clock_type::now();
    int samples = 0;
    std::int64_t lowest = pttl(raw, lock.key());
    EXPECT_GT(lowest, 0);
    EXPECT_LE(lowest, 600);
    for (int i = 0; i < 200 && clock_type::now() - start < 3s; ++i) {
      co_await sleep_for(50ms);
      const auto ttl = pttl(raw, lock.key());
      EXPECT_GT(ttl, 0) << "sample " << i << " at "
                        << std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() -
                                                                                 start)
                               .count()
                        << " ms";
      if (ttl < lowest) lowest = ttl;
      ++samples;
    }
    EXPECT_GE(samples, 20);  // 3 s of ~50 ms steps, even on a loaded machine
    EXPECT_GT(lowest, 0);
    EXPECT_GE(clock_type::now() - start, 3s);  // held five lease lengths
    EXPECT_TRUE(co_await lock.is_held());
    // A renewal every 200 ms over 3 s is 15; allow for a slow machine.
    EXPECT_GE(redis.stats().renewal_calls - renewals_before, 10u);
    EXPECT_EQ(redis.stats().lost_locks, 0u);
    co_await lock.unlock();
    EXPECT_EQ(exists(raw, lock.key()), 0);
    co_await redis.close();
  });
}

TEST(watchdog, explicit_lease_is_not_renewed_and_expires_for_a_waiter) {
  asio::io_context io;
  const auto cfg = make_config(600ms);
  rlock::client holder_client(io.get_executor(), cfg);
  rlock::client waiter_client(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await holder_client.connect();
    co_await waiter_client.connect();
    auto holder = holder_client.get_lock("account");
    auto waiter = waiter_client.get_lock("account");
    const auto renewals_before = holder_client.stats().renewal_calls;
    co_await holder.lock(300ms);  // and never unlocks
    const auto acquired_at = clock_type::now();
    const auto ttl = pttl(raw, holder.key());
    EXPECT_GT(ttl, 0);
    EXPECT_LE(ttl, 300);
    // No watchdog lease, so nothing to lose.
    EXPECT_EQ(co_await error_of(holder.lost()), rlock::errc::not_owner);

    co_await waiter.lock();
    const auto waited = clock_type::now() - acquired_at;
    EXPECT_GE(waited, 200ms);
    EXPECT_LT(waited, 3s);
    EXPECT_EQ(waiter.last_wake(), rlock::wake_reason::expiry);
    EXPECT_TRUE(co_await waiter.is_held());
    EXPECT_FALSE(co_await holder.is_held());
    EXPECT_EQ(holder_client.stats().renewal_calls, renewals_before);
    EXPECT_EQ(holder_client.stats().lost_locks, 0u);  // a lease lock is never "lost"
    co_await waiter.unlock();
    co_await holder_client.close();
    co_await waiter_client.close();
  });
}

TEST(watchdog, leaves_no_timer_armed_once_nothing_is_renewed) {
  asio::io_context io;
  const auto cfg = make_config(600ms);
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    EXPECT_FALSE(redis.activity().watchdog_armed);
    auto a = redis.get_lock("a");
    auto b = redis.get_lock("b");
    co_await a.lock();
    co_await b.lock();
    EXPECT_EQ(redis.activity().renewed_locks, 2u);
    EXPECT_TRUE(redis.activity().watchdog_armed);
    co_await a.unlock();
    EXPECT_TRUE(redis.activity().watchdog_armed);  // b is still renewed
    co_await b.unlock();
    // Right after the last release, not a renewal period later. (The timer itself may fire once
    // more, to no effect: it holds no reference to the client.)
    const auto now = redis.activity();
    EXPECT_EQ(now.renewed_locks, 0u);
    EXPECT_FALSE(now.watchdog_armed);
    co_await redis.close();
  });
}

TEST(watchdog, deleted_key_is_reported_lost) {
  asio::io_context io;
  const auto cfg = make_config(600ms);
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    co_await lock.lock();
    RLOCK_CO_ASSERT(raw.command_int({"DEL", lock.key()}) == 1);
    const auto deleted_at = clock_type::now();
    co_await lock.lost();
    EXPECT_LT(clock_type::now() - deleted_at, 1500ms);
    EXPECT_FALSE(co_await lock.is_held());
    EXPECT_EQ(redis.stats().lost_locks, 1u);
    // A lost() that starts after the report completes at once: a critical section raced
    // against it late still learns the lock is gone.
    EXPECT_EQ(co_await error_of(lock.lost()), std::error_code{});
    EXPECT_EQ(co_await error_of(lock.unlock()), rlock::errc::not_owner);
    co_await redis.close();
  });
}

TEST(watchdog, lost_wins_a_race_against_the_critical_section) {
  asio::io_context io;
  const auto cfg = make_config(600ms);
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    co_await lock.lock();
    // The critical section: long work. Somebody deletes the key meanwhile.
    auto work = [&]() -> asio::awaitable<void> { co_await sleep_for(20s); };
    auto vandal = [&]() -> asio::awaitable<void> {
      co_await sleep_for(100ms);
      raw.command({"DEL", lock.key()});
      co_await sleep_for(20s);
    };
    const auto start = clock_type::now();
    auto winner = co_await (work() || lock.lost() || vandal());
    EXPECT_EQ(winner.index(), 1u) << "lost() should end the critical section";
    EXPECT_LT(clock_type::now() - start, 2s);
    EXPECT_EQ(redis.stats().lost_locks, 1u);
    EXPECT_FALSE(co_await lock.is_locked());
    EXPECT_EQ(co_await error_of(lock.unlock()), rlock::errc::not_owner);
    co_await redis.close();
  });
}

TEST(watchdog, force_unlock_by_another_client_is_reported_lost) {
  asio::io_context io;
  const auto cfg = make_config(600ms);
  rlock::client holder_client(io.get_executor(), cfg);
  rlock::client other_client(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await holder_client.connect();
    co_await other_client.connect();
    auto holder = holder_client.get_lock("account");
    auto other = other_client.get_lock("account");
    co_await holder.lock();
    bool lost = false;
    std::error_code lost_ec;
    asio::steady_timer bell(io);
    holder.async_lost([&](boost::system::error_code ec) {
      lost_ec = ec;
      lost = true;
      bell.cancel();
    });
    EXPECT_TRUE(co_await other.force_unlock());
    const auto forced_at = clock_type::now();
    co_await wait_until(
        bell, [&] { return lost; }, 5s);
    RLOCK_CO_ASSERT(lost);
    EXPECT_EQ(lost_ec, std::error_code{});
    EXPECT_LT(clock_type::now() - forced_at, 1500ms);
    EXPECT_FALSE(co_await holder.is_held());
    EXPECT_EQ(holder_client.stats().lost_locks, 1u);
    EXPECT_EQ(co_await error_of(holder.unlock()), rlock::errc::not_owner);
    co_await holder_client.close();
    co_await other_client.close();
  });
}

// --- deposed holders told at push speed (config::track_holds) -------------------------------
// The watchdog's lease here is 30 s: its next round is 10 s away, so a lost() within the 5 s
// these tests wait came from the server's invalidation push and the check it started.

rlock::config tracking_config(std::chrono::milliseconds watchdog_timeout) {
  auto cfg = make_config(watchdog_timeout);
  cfg.track_holds = true;
  return cfg;
}

/// Whether `held` was told lost() within `limit`.
template <typename Lost>
asio::awaitable<bool> told_within(Lost lost, std::chrono::seconds limit) {
  asio::steady_timer limit_timer(co_await asio::this_coro::executor, limit);
  const auto first = co_await (std::move(lost) || limit_timer.async_wait(asio::use_awaitable));
  co_return first.index() == 0;
}

TEST(deposed, every_exclusive_kind_is_told_at_once_when_another_client_deletes_its_key) {
  asio::io_context io;
  const auto cfg = tracking_config(30s);
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    const auto renewals = redis.stats().renewal_calls;
    auto reentrant = redis.get_lock("deposed-reentrant");
    auto fenced = redis.get_fenced_lock("deposed-fenced");
    auto non_reentrant = redis.get_non_reentrant_lock("deposed-non-reentrant");
    auto fair = redis.get_fair_lock("deposed-fair");
    auto spin = redis.get_spin_lock("deposed-spin");
    auto rw = redis.get_read_write_lock("deposed-write");
    auto write = rw.write_lock();
    rlock::election election(redis, "deposed-election");
    co_await reentrant.lock();
    co_await fenced.lock();
    co_await non_reentrant.lock();
    co_await fair.lock();
    co_await spin.lock();
    co_await write.lock();
    (void)co_await election.campaign("me");
    // The holder's own acquisitions and renewals invalidate nothing for it (NOLOOP).
    EXPECT_EQ(redis.stats().hold_checks, 0u);
    EXPECT_EQ(raw.command_int({"DEL", reentrant.key()}), 1);
    EXPECT_TRUE(co_await told_within(reentrant.lost(), 5s));
    EXPECT_EQ(raw.command_int({"DEL", fenced.key()}), 1);
    EXPECT_TRUE(co_await told_within(fenced.lost(), 5s));
    EXPECT_EQ(raw.command_int({"DEL", non_reentrant.key()}), 1);
    EXPECT_TRUE(co_await told_within(non_reentrant.lost(), 5s));
    EXPECT_EQ(raw.command_int({"DEL", fair.key()}), 1);
    EXPECT_TRUE(co_await told_within(fair.lost(), 5s));
    // Overwritten: deleted and taken by another owner (a Java client) in one go.
    raw.command({"MULTI"});
    raw.command({"DEL", spin.key()});
    raw.command({"HSET", spin.key(), "java-uuid:7", "1"});
    raw.command({"EXEC"});
    EXPECT_TRUE(co_await told_within(spin.lost(), 5s));
    EXPECT_EQ(raw.command_int({"DEL", write.key()}), 1);
    EXPECT_TRUE(co_await told_within(write.lost(), 5s));
    EXPECT_EQ(raw.command_int({"DEL", std::string(election.key())}), 1);
    EXPECT_TRUE(co_await told_within(election.lost(), 5s));
    EXPECT_FALSE(election.metrics().leading);
    // One check each, and no watchdog round meanwhile.
    EXPECT_EQ(redis.stats().hold_checks, 7u);
    EXPECT_EQ(redis.stats().lost_locks, 7u);
    EXPECT_EQ(redis.stats().renewal_calls - renewals, 7u);
    co_await redis.close();
  });
}

TEST(deposed, a_flush_tells_every_holder_and_a_waiters_reads_start_no_check) {
  asio::io_context io;
  const auto cfg = tracking_config(30s);
  rlock::client holder(io.get_executor(), cfg);
  rlock::client other(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await holder.connect();
    co_await other.connect();
    auto lock = holder.get_lock("flushed-lock");
    // Three read holds of one client on one key (three owners), the first given back: the
    // others stay found by their key.
    auto first = holder.get_read_write_lock("flushed-read").read_lock();
    auto read = holder.get_read_write_lock("flushed-read").read_lock();
    auto third = holder.get_read_write_lock("flushed-read").read_lock();
    co_await lock.lock();
    co_await first.lock();
    co_await read.lock();
    co_await third.lock();
    co_await first.unlock();
    // Another client's attempts read the key (and track it for itself): nothing changes for the
    // holder, and the other client, holding nothing, checks nothing when the key changes.
    EXPECT_FALSE(co_await other.get_lock("flushed-lock").try_lock());
    auto other_read = other.get_read_write_lock("flushed-read").read_lock();
    co_await other_read.lock();  // a read hold changes the shared hash: no check for `read`
    co_await other_read.unlock();
    EXPECT_EQ(holder.stats().hold_checks, 0u);
    EXPECT_EQ(other.stats().hold_checks, 0u);
    // A FLUSHALL: every hold is checked, shared kinds included.
    raw.command({"FLUSHALL"});
    EXPECT_TRUE(co_await told_within(lock.lost(), 5s));
    EXPECT_TRUE(co_await told_within(read.lost(), 5s));
    EXPECT_TRUE(co_await told_within(third.lost(), 5s));
    EXPECT_EQ(holder.stats().hold_checks, 3u);
    co_await holder.close();
    co_await other.close();
  });
}

TEST(deposed, a_reconnection_checks_every_hold_and_tracks_it_again) {
  asio::io_context io;
  auto cfg = tracking_config(30s);
  cfg.client_name = "deposed-reconnect";
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("reconnected");
    co_await lock.lock();
    raw.command({"CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal"});  // every other client
    EXPECT_TRUE(co_await rlock::test::poll_until(
        [&] { return redis.stats().reconnects >= 1 && redis.stats().hold_checks >= 1; }, 5s));
    EXPECT_TRUE(co_await lock.is_held());
    // The new connection tracks the key again: a DEL is told at once.
    EXPECT_EQ(raw.command_int({"DEL", lock.key()}), 1);
    EXPECT_TRUE(co_await told_within(lock.lost(), 5s));
    co_await redis.close();
  });
}

TEST(deposed, without_track_holds_a_deleted_key_waits_for_the_watchdogs_round) {
  asio::io_context io;
  auto cfg = make_config(3s);
  cfg.track_holds = false;
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("untracked");
    co_await lock.lock();
    const auto renewals = redis.stats().renewal_calls;
    EXPECT_EQ(raw.command_int({"DEL", lock.key()}), 1);
    co_await lock.lost();
    EXPECT_EQ(redis.stats().hold_checks, 0u);
    EXPECT_GT(redis.stats().renewal_calls, renewals);  // told by the round, not by a push
    co_await redis.close();
  });
}

TEST(deposed, a_user_refused_client_tracking_is_warned_and_keeps_the_watchdogs_rounds) {
  asio::io_context io;
  auto cfg = tracking_config(900ms);
  rlock::test::raw_client raw(cfg.port);
  const std::string user = "untracked-" + rlock::test::unique_prefix();
  raw.command({"ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", "-client"});
  cfg.username = user;
  cfg.password = "pw";
  std::vector<std::string> warnings;
  cfg.log = [&](rlock::log_level level, std::string_view line) {
    if (level == rlock::log_level::warning) warnings.emplace_back(line);
  };
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("untracked-user");
    co_await lock.lock();
    EXPECT_EQ(raw.command_int({"DEL", lock.key()}), 1);
    co_await lock.lost();  // the next round (every 300 ms here) finds it gone
    EXPECT_EQ(redis.stats().hold_checks, 0u);
    co_await redis.close();
  });
  raw.command({"ACL", "DELUSER", user});
  const auto told = std::count_if(warnings.begin(), warnings.end(), [](const std::string& w) {
    return w.find("CLIENT TRACKING was refused") != std::string::npos &&
           w.find("next renewal") != std::string::npos;
  });
  EXPECT_EQ(told, 1) << (warnings.empty() ? "no warning" : warnings.front());
}

TEST(watchdog, renews_250_locks_in_batches_of_100) {
  constexpr int count = 250;
  constexpr std::uint64_t calls_per_round = (count + 99) / 100;  // 3
  asio::io_context io;
  const auto cfg = make_config(900ms);  // a round every 300 ms
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(
      io,
      [&]() -> asio::awaitable<void> {
        co_await redis.connect();
        std::vector<rlock::reentrant_lock> locks;
        for (int i = 0; i < count; ++i)
          locks.push_back(redis.get_lock("lock-" + std::to_string(i)));
        for (auto& l : locks) co_await l.lock();

        const auto before = redis.stats().renewal_calls;
        const auto start = clock_type::now();
        co_await sleep_for(700ms);  // two renewal periods and a bit
        const auto grown = redis.stats().renewal_calls - before;
        const auto elapsed = clock_type::now() - start;
        // Rounds that may have (partly) fallen into the window, counted generously.
        const auto rounds = static_cast<std::uint64_t>(elapsed / 300ms) + 1;
        EXPECT_GE(grown, calls_per_round) << "not even one full round in " << rounds << " periods";
        EXPECT_LE(grown, calls_per_round * rounds + calls_per_round)
            << "more calls than batches of 100 explain over " << rounds << " rounds";

        int alive = 0;
        for (auto& l : locks) {
          const auto ttl = pttl(raw, l.key());
          EXPECT_GT(ttl, 0) << l.key();
          if (ttl > 0) ++alive;
        }
        EXPECT_EQ(alive, count);
        EXPECT_EQ(redis.stats().lost_locks, 0u);

        for (auto& l : locks) co_await l.unlock();
        int left = 0;
        for (auto& l : locks) left += static_cast<int>(exists(raw, l.key()));
        EXPECT_EQ(left, 0);
        co_await redis.close();
      },
      60s);
}

TEST(watchdog, lost_when_not_held_is_not_owner) {
  asio::io_context io;
  const auto cfg = make_config(600ms);
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    EXPECT_EQ(co_await error_of(lock.lost()), rlock::errc::not_owner);
    auto [ec] = co_await lock.async_lost(asio::as_tuple(asio::use_awaitable));
    EXPECT_EQ(std::error_code(ec), rlock::errc::not_owner);
    // Held with an explicit lease: not a watchdog lock, so nothing to report either.
    co_await lock.lock(10s);
    EXPECT_EQ(co_await error_of(lock.lost()), rlock::errc::not_owner);
    co_await lock.unlock();
    co_await redis.close();
  });
}

TEST(watchdog, pending_lost_is_aborted_by_the_final_unlock) {
  asio::io_context io;
  const auto cfg = make_config(600ms);
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    co_await lock.lock();
    co_await lock.lock();  // hold count 2

    asio::steady_timer bell(io);
    // One pending lost() per form: the awaitable throws std::errc::operation_canceled, the
    // any-token form completes with asio::error::operation_aborted.
    bool awaitable_done = false;
    std::error_code awaitable_ec;
    asio::co_spawn(io, error_of(lock.lost()), [&](std::exception_ptr, std::error_code ec) {
      awaitable_ec = ec;
      awaitable_done = true;
      bell.cancel();
    });
    bool token_done = false;
    boost::system::error_code token_ec;
    lock.async_lost([&](boost::system::error_code ec) {
      token_ec = ec;
      token_done = true;
      bell.cancel();
    });

    // A nested unlock keeps the lock: lost() stays pending (over a few renewal periods).
    co_await lock.unlock();
    co_await sleep_for(500ms);
    EXPECT_FALSE(awaitable_done);
    EXPECT_FALSE(token_done);
    EXPECT_EQ(redis.stats().lost_locks, 0u);

    co_await lock.unlock();  // final
    co_await wait_until(
        bell, [&] { return awaitable_done; }, 2s);
    co_await wait_until(
        bell, [&] { return token_done; }, 2s);
    RLOCK_CO_ASSERT(awaitable_done && token_done);
    EXPECT_EQ(awaitable_ec, std::errc::operation_canceled);
    EXPECT_EQ(token_ec, asio::error::operation_aborted);
    EXPECT_EQ(redis.stats().lost_locks, 0u);
    co_await redis.close();
  });
}

TEST(watchdog, renewal_stops_once_the_last_lock_is_released) {
  asio::io_context io;
  const auto cfg = make_config(600ms);  // a round every 200 ms
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto first = redis.get_lock("first");
    auto second = redis.get_lock("second");
    co_await first.lock();
    co_await second.lock();

    // One lock left in the table: renewal goes on.
    co_await first.unlock();
    const auto one_left = redis.stats().renewal_calls;
    co_await sleep_for(500ms);
    EXPECT_GE(redis.stats().renewal_calls - one_left, 1u);
    EXPECT_TRUE(co_await second.is_held());

    // Table empty: not one more renewal call, over several periods.
    co_await second.unlock();
    const auto none_left = redis.stats().renewal_calls;
    co_await sleep_for(600ms);
    EXPECT_EQ(redis.stats().renewal_calls, none_left);
    EXPECT_FALSE(co_await second.is_locked());

    // And it starts again with the next watchdog lock.
    co_await first.lock();
    co_await sleep_for(500ms);
    EXPECT_GE(redis.stats().renewal_calls - none_left, 1u);
    co_await first.unlock();
    co_await redis.close();
  });
}

}  // namespace watchdog_test
