// Faults against real redis-server processes: an acquire or an unlock on a dying connection, a
// server down or stopped, a holder that can neither renew nor reconnect, SELECT while connecting,
// a bad key in a renewal batch, a release answered "still held". Each test checks what an owner
// believed against what the server holds: exclusion among owners who believed they held the
// lock, no ghost lock, no drifted hold count, and bounded waiting.
// CLIENT KILL of a holder/waiter/unlocker, AOF restart, a server stopped past the lease, late
// answers and a user without channel rights live in test/chaos/scenarios_test.cpp.
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
#include <csignal>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace faults_test {

namespace asio = boost::asio;
using rlock::test::error_of;
using rlock::test::kill_client;
using rlock::test::make_config;
using rlock::test::sleep_for;
using rlock::test::wait_until;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

/// This test's config for the server on `port`, with fast fault detection: short health check
/// and backoff. Every config of one test shares its key prefix, so their locks contend.
rlock::config fast_config(std::uint16_t port, const std::string& name) {
  static std::string prefix;
  static std::string for_test;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string test = info != nullptr ? info->name() : "";
  if (test != for_test || prefix.empty()) {
    for_test = test;
    prefix = rlock::test::unique_prefix();
  }
  auto cfg = make_config();
  cfg.key_prefix = prefix;
  cfg.port = port;
  cfg.client_name = name;
  cfg.health_check_interval = 200ms;
  cfg.connect_timeout = 500ms;
  cfg.reconnect.backoff_initial = 20ms;
  cfg.reconnect.backoff_cap = 200ms;
  return cfg;
}

/// Records a client's connection states; `bell` rings at each.
struct state_log {
  state_log(asio::io_context& io, rlock::client& c) : bell(io, clock_type::time_point::max()) {
    c.on_state_change([this](const rlock::connection_event& e) {
      states.push_back(e.state);
      if (e.state == rlock::connection_state::reconnecting) reasons.push_back(e.diagnostic);
      bell.cancel();
    });
  }
  int count(rlock::connection_state s) const {
    return static_cast<int>(std::count(states.begin(), states.end(), s));
  }
  asio::awaitable<void> wait_for(rlock::connection_state s, int n,
                                 clock_type::duration limit = 10s) {
    co_await wait_until(
        bell, [&] { return count(s) >= n; }, limit);
  }
  asio::steady_timer bell;
  std::vector<rlock::connection_state> states;
  std::vector<std::string> reasons;
};

TEST(faults, an_acquire_written_to_a_dead_connection_is_reconciled) {
  asio::io_context io;
  auto cfg = fast_config(rlock::test::shared_server().port(), "reconcile");
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    // Killed while this thread is busy: the client has not read the EOF when it writes the
    // acquire, so the acquire's answer is lost and the hold count tells what happened.
    EXPECT_EQ(kill_client(raw, "reconcile"), 1);
    EXPECT_TRUE(co_await lock.try_lock());
    EXPECT_GE(redis.stats().reconciled_acquires, 1u);
    EXPECT_EQ(co_await lock.hold_count(), 1);  // not taken twice
    co_await lock.unlock();
    EXPECT_EQ(raw.command_int({"EXISTS", lock.key()}), 0);
    co_await redis.close();
  });
}

TEST(faults, unlock_in_flight_when_the_connection_dies_is_retried_with_its_latch) {
  rlock::test::redis_server server;
  asio::io_context io;
  auto cfg = fast_config(server.port(), "latch");
  cfg.command_timeout = 10s;  // the unlock waits for the reconnection
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(server.port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    co_await lock.lock(60s);
    // The unlock is written to a stopped server; the health check drops the connection; the
    // server, resumed, may run the buffered unlock of the dead connection as well as the retry.
    ::kill(server.pid(), SIGSTOP);
    std::error_code unlock_result = make_error_code(rlock::errc::timeout);
    bool done = false;
    asio::steady_timer bell(io, clock_type::time_point::max());
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          unlock_result = co_await error_of(lock.unlock());
          done = true;
          bell.cancel();
        },
        asio::detached);
    co_await sleep_for(800ms);
    ::kill(server.pid(), SIGCONT);
    co_await wait_until(
        bell, [&] { return done; }, 10s);
    RLOCK_CO_ASSERT(done);
    EXPECT_FALSE(unlock_result) << unlock_result.message();  // never a false not_owner
    EXPECT_GE(redis.stats().retried_commands, 1u);
    EXPECT_EQ(raw.command_int({"EXISTS", lock.key()}), 0);
    EXPECT_FALSE(co_await lock.is_held());
    co_await redis.close();
  });
}

TEST(faults, operations_while_the_server_is_down_are_bounded_and_lock_waits_across) {
  rlock::test::redis_server server;
  asio::io_context io;
  auto cfg = fast_config(server.port(), "down");
  cfg.command_timeout = 300ms;
  rlock::client redis(io.get_executor(), cfg);
  state_log log(io, redis);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    server.kill_hard();
    co_await log.wait_for(rlock::connection_state::reconnecting, 1);
    auto lock = redis.get_lock("account");
    // try_lock while Redis is down ends within its bound (Redisson #2801, #4025 hang here).
    const auto start = clock_type::now();
    EXPECT_EQ(co_await error_of(lock.try_lock(200ms)), rlock::errc::timeout);
    EXPECT_LT(clock_type::now() - start, 3s);
    EXPECT_EQ(co_await error_of(lock.is_locked()), rlock::errc::timeout);
    // lock() without a wait waits for the server to come back.
    bool acquired = false;
    asio::steady_timer bell(io, clock_type::time_point::max());
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await lock.lock();
          acquired = true;
          bell.cancel();
        },
        asio::detached);
    co_await sleep_for(300ms);
    EXPECT_FALSE(acquired);
    server.restart();
    co_await wait_until(
        bell, [&] { return acquired; }, 10s);
    EXPECT_TRUE(acquired);
    EXPECT_TRUE(co_await lock.is_held());
    co_await lock.unlock();
    co_await redis.close();
  });
}

TEST(faults, fail_fast_fails_at_once_while_disconnected) {
  rlock::test::redis_server server;
  asio::io_context io;
  auto cfg = fast_config(server.port(), "fail-fast");
  cfg.fail_fast = true;
  rlock::client redis(io.get_executor(), cfg);
  state_log log(io, redis);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    server.kill_hard();
    co_await log.wait_for(rlock::connection_state::reconnecting, 1);
    auto lock = redis.get_lock("account");
    const auto start = clock_type::now();
    EXPECT_EQ(co_await error_of(lock.lock()), rlock::errc::connection_lost);
    EXPECT_EQ(co_await error_of(lock.is_locked()), rlock::errc::connection_lost);
    EXPECT_LT(clock_type::now() - start, 1s);
    server.restart();
    co_await log.wait_for(rlock::connection_state::connected, 2);
    EXPECT_TRUE(co_await lock.try_lock());
    co_await lock.unlock();
    co_await redis.close();
  });
}

TEST(faults, health_check_replaces_a_connection_that_stopped_answering) {
  rlock::test::redis_server server;
  asio::io_context io;
  auto cfg = fast_config(server.port(), "health");
  rlock::client redis(io.get_executor(), cfg);
  state_log log(io, redis);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    ::kill(server.pid(), SIGSTOP);  // the socket stays open: only silence tells
    co_await log.wait_for(rlock::connection_state::reconnecting, 1, 5s);
    ::kill(server.pid(), SIGCONT);
    EXPECT_GE(redis.stats().health_check_failures, 1u);
    RLOCK_CO_ASSERT(!log.reasons.empty());
    EXPECT_NE(log.reasons.front().find("PING"), std::string::npos) << log.reasons.front();
    co_await log.wait_for(rlock::connection_state::connected, 2);
    auto lock = redis.get_lock("account");
    EXPECT_TRUE(co_await lock.try_lock());
    co_await lock.unlock();
    co_await redis.close();
  });
}

/// Records when the holder of `held` is told lost() and when a second owner `wanted` acquires.
struct loss_race {
  loss_race(asio::io_context& io, rlock::reentrant_lock held, rlock::reentrant_lock wanted)
      : bell(io, clock_type::time_point::max()) {
    asio::co_spawn(
        io,
        [this, held]() mutable -> asio::awaitable<void> {
          if (!co_await error_of(held.lost())) lost_at = clock_type::now();
          bell.cancel();
        },
        asio::detached);
    asio::co_spawn(
        io,
        [this, wanted]() mutable -> asio::awaitable<void> {
          co_await wanted.lock();
          acquired_at = clock_type::now();
          bell.cancel();
        },
        asio::detached);
  }
  asio::awaitable<void> wait(clock_type::duration limit) {
    co_await wait_until(
        bell, [this] { return lost_at && acquired_at; }, limit);
  }
  std::optional<clock_type::time_point> lost_at, acquired_at;
  asio::steady_timer bell;
};

/// The holder's connection is killed and its user deleted, so it can neither renew nor
/// reconnect; a second client waits. The holder must be told lost() before the second client
/// acquires. Prints the margin.
TEST(faults, holder_is_told_lost_before_another_owner_acquires) {
  rlock::test::redis_server server;
  rlock::test::raw_client raw(server.port());
  raw.command({"ACL", "SETUSER", "holder", "on", ">pw", "~*", "&*", "+@all"});
  asio::io_context io;
  auto cfg = fast_config(server.port(), "doomed");
  cfg.username = "holder";
  cfg.password = "pw";
  cfg.watchdog_timeout = 1000ms;
  rlock::client holder(io.get_executor(), cfg);
  rlock::client waiter(io.get_executor(), fast_config(server.port(), "waiter"));
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await holder.connect();
    co_await waiter.connect();
    auto held = holder.get_lock("account");
    co_await held.lock();
    auto wanted = waiter.get_lock(held.name());
    loss_race race(io, held, wanted);
    co_await sleep_for(500ms);                  // a renewal or two went through
    raw.command({"ACL", "DELUSER", "holder"});  // drops its connection; reconnects are refused
    co_await race.wait(10s);
    RLOCK_CO_ASSERT(race.lost_at && race.acquired_at);
    EXPECT_LT(*race.lost_at, *race.acquired_at);
    const auto margin =
        std::chrono::duration_cast<std::chrono::microseconds>(*race.acquired_at - *race.lost_at);
    std::printf("lost() came %lld us before the other owner acquired (configured margin %lld ms)\n",
                static_cast<long long>(margin.count()),
                static_cast<long long>(holder.lease_margin().count()));
    RecordProperty("lost_margin_us", std::to_string(margin.count()));
    co_await wanted.unlock();
    co_await holder.close();
    co_await waiter.close();
  });
}

TEST(faults, commands_issued_while_connecting_wait_for_select) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.database = 5;
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    bool connected = false;
    asio::co_spawn(io, redis.connect(), [&](std::exception_ptr e) { connected = !e; });
    // Issued while the connection is being made: it must not run before SELECT.
    auto lock = redis.get_lock("account");
    co_await lock.lock(30s);
    EXPECT_TRUE(connected);
    EXPECT_EQ(raw.command_int({"EXISTS", lock.key()}), 0);
    raw.command({"SELECT", "5"});
    EXPECT_EQ(raw.command_int({"EXISTS", lock.key()}), 1);
    co_await lock.unlock();
    co_await redis.close();
  });
}

TEST(faults, a_key_of_the_wrong_type_fails_only_its_own_renewal) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.watchdog_timeout = 600ms;
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    std::vector<rlock::reentrant_lock> locks;
    for (int i = 0; i < 3; ++i) {
      locks.push_back(redis.get_lock("batch-" + std::to_string(i)));
      co_await locks.back().lock();
    }
    int lost = 0;
    for (auto& l : locks) {
      asio::co_spawn(
          io, [&]() -> asio::awaitable<void> { lost += !(co_await error_of(l.lost())); },
          asio::detached);
    }
    raw.command({"DEL", locks[1].key()});
    raw.command({"SET", locks[1].key(), "a string"});
    co_await sleep_for(3 * cfg.watchdog_timeout);
    EXPECT_EQ(lost, 1);
    EXPECT_EQ(redis.stats().lost_locks, 1u);
    EXPECT_TRUE(co_await locks[0].is_held());
    EXPECT_TRUE(co_await locks[2].is_held());
    co_await locks[0].unlock();
    co_await locks[2].unlock();
    raw.command({"DEL", locks[1].key()});
    co_await redis.close();
  });
}

TEST(faults, a_release_answered_still_held_keeps_the_lock_renewed) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.watchdog_timeout = 600ms;
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    co_await lock.lock();
    // The server counts one hold more than the owner knows of (another handle of the same owner
    // id in another process, say).
    raw.command({"HINCRBY", lock.key(), lock.owner_field(), "1"});
    co_await lock.unlock();  // the owner's "last" unlock; the server says: still held
    co_await sleep_for(3 * cfg.watchdog_timeout);
    EXPECT_TRUE(co_await lock.is_held());
    EXPECT_GT(raw.command_int({"PTTL", lock.key()}), 0);
    co_await lock.unlock();
    EXPECT_EQ(raw.command_int({"EXISTS", lock.key()}), 0);
    co_await redis.close();
  });
}

}  // namespace faults_test
