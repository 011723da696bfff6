// What operators see: the log lines of a client (once per event, with the lock and a short
// owner, never the client's full UUID) and its metrics against a real server.
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/run.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <rlock/rlock.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using rlock::test::make_config;

struct log_capture {
  std::vector<std::pair<rlock::log_level, std::string>> lines;
  rlock::logger logger() {
    return [this](rlock::log_level level, std::string_view line) {
      lines.emplace_back(level, std::string(line));
    };
  }
  std::size_t count(rlock::log_level level, const std::string& part) const {
    return static_cast<std::size_t>(std::count_if(lines.begin(), lines.end(), [&](const auto& l) {
      return l.first == level && l.second.find(part) != std::string::npos;
    }));
  }
  std::string all() const {
    std::string out;
    for (const auto& [level, line] : lines) {
      out += std::string(rlock::to_string(level)) + ": " + line + "\n";
    }
    return out;
  }
};

TEST(observability, slow_acquire_lost_lock_and_reconnect_are_logged_once_with_context) {
  asio::io_context io;
  log_capture log;
  auto cfg = make_config();
  cfg.client_name = "obs";
  cfg.watchdog_timeout = 1000ms;
  cfg.slow_acquire_threshold = 50ms;
  cfg.log = log.logger();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto holder = redis.get_lock("slow");
    auto waiter = redis.get_lock("slow");
    co_await holder.lock();
    asio::steady_timer release(io, 100ms);
    release.async_wait(
        [&](boost::system::error_code) { asio::co_spawn(io, holder.unlock(), asio::detached); });
    co_await waiter.lock();  // waits ~100 ms: over the 50 ms threshold
    co_await waiter.unlock();
    EXPECT_EQ(log.count(rlock::log_level::warning, "lock 'slow' (owner "), 1u) << log.all();
    EXPECT_EQ(log.count(rlock::log_level::warning, "acquired after"), 1u) << log.all();

    // Lost: deleted behind the holder's back.
    auto victim = redis.get_lock("victim");
    co_await victim.lock();
    raw.command({"DEL", victim.key()});
    co_await victim.lost();
    EXPECT_EQ(log.count(rlock::log_level::error, "lock 'victim'"), 1u) << log.all();
    EXPECT_EQ(log.count(rlock::log_level::error, "the server no longer has it"), 1u) << log.all();

    // Reconnect: the connection killed.
    raw.command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
    co_await rlock::test::poll_until(
        [&] { return log.count(rlock::log_level::info, "reconnected") > 0; });
    EXPECT_EQ(log.count(rlock::log_level::warning, "connection lost"), 1u) << log.all();
    EXPECT_EQ(log.count(rlock::log_level::info, "reconnected"), 1u) << log.all();
    co_await redis.close();
  });
  // Every line names the client; none carries its full UUID.
  for (const auto& [level, line] : log.lines) {
    EXPECT_TRUE(line.starts_with("obs: ")) << line;
    EXPECT_EQ(line.find(redis.id()), std::string::npos) << line;
  }
  EXPECT_NE(log.all().find(redis.id().substr(0, 8) + ":"), std::string::npos) << log.all();
}

TEST(observability, a_failed_renewal_is_logged_and_counted) {
  // The client's ACL user loses the right to run scripts while it holds a watchdog lock (its
  // credentials were changed): the next renewal gets NOPERM.
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  raw.command({"ACL", "SETUSER", "obs-renewer", "on", ">pw", "~*", "&*", "+@all"});
  asio::io_context io;
  log_capture log;
  auto cfg = make_config();
  cfg.username = "obs-renewer";
  cfg.password = "pw";
  cfg.watchdog_timeout = 1000ms;  // renewals every ~333 ms
  cfg.log = log.logger();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto l = redis.get_lock("renewed");
    co_await l.lock();
    raw.command({"ACL", "SETUSER", "obs-renewer", "-evalsha"});
    // Two rounds fail (~333 ms and ~667 ms) before the belief deadline (~985 ms) ends it.
    co_await rlock::test::poll_until([&] { return redis.metrics().renewal_failures >= 2; });
    EXPECT_GE(redis.metrics().renewal_failures, 2u);
    // Once per failure streak, naming the lock and its short owner.
    const std::string owner = redis.id().substr(0, 8) + ":" + std::to_string(l.owner_id());
    EXPECT_EQ(log.count(rlock::log_level::warning,
                        "renewal of 1 lock(s) failed: 'renewed' (owner " + owner + ")"),
              1u)
        << log.all();
    EXPECT_EQ(log.count(rlock::log_level::warning, "NOPERM"), 1u) << log.all();
    co_await rlock::test::poll_until([&] { return redis.metrics().lost_locks > 0; });
    EXPECT_EQ(redis.metrics().lost_locks, 1u);
    EXPECT_EQ(log.count(rlock::log_level::error, "lock 'renewed' (owner " + owner + ") lost"), 1u)
        << log.all();
    co_await redis.close();  // the lock expires with its 1 s lease
  });
  raw.command({"ACL", "DELUSER", "obs-renewer"});
}

TEST(observability, metrics_count_acquisitions_waits_and_holds) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.local_handoff.max_streak = 0;  // b is woken by a's unlock message (handoff: handoff_test)
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto a = redis.get_lock("m");
    auto b = redis.get_lock("m");
    for (int i = 0; i < 5; ++i) {
      co_await a.lock();
      co_await a.unlock();
    }
    co_await a.lock();
    asio::steady_timer release(io, 20ms);
    release.async_wait(
        [&](boost::system::error_code) { asio::co_spawn(io, a.unlock(), asio::detached); });
    co_await b.lock();  // woken by a's unlock
    const auto during = redis.metrics();
    EXPECT_EQ(during.renewed_locks, 1u);
    EXPECT_TRUE(during.connected);
    co_await b.unlock();
    const auto m = redis.metrics();
    EXPECT_EQ(m.acquisitions_immediate, 6u);
    EXPECT_EQ(m.acquisitions_handoff, 0u);
    EXPECT_EQ(m.acquisitions_notification, 1u);
    EXPECT_EQ(m.acquisitions_expiry, 0u);
    EXPECT_EQ(m.acquire_wait.count, 7u);
    EXPECT_EQ(m.hold.count, 7u);
    EXPECT_GE(m.hold.sum, 0.020);  // a held it for the 20 ms b waited
    EXPECT_EQ(m.renewed_locks, 0u);
    EXPECT_EQ(m.waiters, 0u);
    const auto text = rlock::to_prometheus(m);
    EXPECT_NE(text.find("rlock_acquisitions_total{wake=\"notification\"} 1\n"), std::string::npos)
        << text;
    EXPECT_NE(text.find("rlock_hold_seconds_count 7\n"), std::string::npos) << text;
    co_await redis.close();
  });
}

TEST(observability, metrics_gauges_expiry_wake_ups_reconnects_and_losses) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.client_name = "obs-gauges";
  cfg.watchdog_timeout = 1000ms;
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    using rlock::test::poll_until;
    // A waiter sleeps on its channel until the holder's 300 ms lease runs out.
    auto holder = redis.get_lock("g");
    auto waiter = redis.get_lock("g");
    co_await holder.lock(300ms);
    bool got = false;
    asio::co_spawn(
        io, [&]() -> asio::awaitable<void> { got = co_await waiter.try_lock(5s, 5s); },
        asio::detached);
    co_await poll_until([&] { return redis.metrics().waiters == 1; });
    const auto waiting = redis.metrics();
    EXPECT_EQ(waiting.waiters, 1u);
    EXPECT_EQ(waiting.subscriptions, 1u);
    co_await poll_until([&] { return got; });
    EXPECT_TRUE(got);
    const auto woken = redis.metrics();
    EXPECT_EQ(woken.acquisitions_expiry, 1u);
    EXPECT_EQ(woken.waiters, 0u);
    co_await waiter.unlock();
    // A request the server does not answer yet is in flight.
    raw.command({"CLIENT", "PAUSE", "500", "ALL"});
    bool answered = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          (void)co_await holder.is_locked();
          answered = true;
        },
        asio::detached);
    co_await poll_until([&] { return redis.metrics().requests_in_flight >= 1; });
    EXPECT_GE(redis.metrics().requests_in_flight, 1u);
    co_await poll_until([&] { return answered; });
    EXPECT_EQ(redis.metrics().requests_in_flight, 0u);
    // A watchdog lock, then its connection killed and the lock deleted: a reconnect, and a
    // loss found by the next renewal.
    auto kept = redis.get_lock("kept");
    co_await kept.lock();
    raw.command({"CLIENT", "KILL", "USER", "default", "SKIPME", "yes"});
    co_await poll_until([&] { return redis.metrics().reconnects >= 1; });
    raw.command({"DEL", kept.key()});
    co_await poll_until([&] { return redis.metrics().lost_locks >= 1; });
    const auto after = redis.metrics();
    EXPECT_GE(after.reconnects, 1u);
    EXPECT_EQ(after.lost_locks, 1u);
    EXPECT_EQ(after.renewed_locks, 0u);
    co_await redis.close();
  });
}

TEST(observability, metrics_from_another_thread_and_a_throwing_logger) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.log = [](rlock::log_level, std::string_view) { throw std::runtime_error("log sink full"); };
  cfg.slow_acquire_threshold = 1ms;  // every acquisition logs (and the logger throws)
  rlock::client redis(io.get_executor(), cfg);
  auto work = asio::make_work_guard(io);
  std::thread runner([&] { io.run(); });
  asio::co_spawn(io, redis.connect(), asio::use_future).get();
  auto l = redis.get_lock("t");
  auto other = redis.get_lock("t");
  asio::co_spawn(io, l.lock(), asio::use_future).get();
  auto waiting = asio::co_spawn(io, other.try_lock(2s), asio::use_future);
  asio::co_spawn(io, l.unlock(), asio::use_future).get();
  EXPECT_TRUE(waiting.get());  // the logger threw; the client went on
  const auto m = redis.async_metrics(asio::use_future).get();
  // `other` got it by a wake-up, or by a local handoff if it was parked when l unlocked.
  EXPECT_EQ(m.acquisitions_immediate + m.acquisitions_notification + m.acquisitions_handoff, 2u);
  asio::co_spawn(io, other.unlock(), asio::use_future).get();
  asio::co_spawn(io, redis.close(), asio::use_future).get();
  work.reset();
  runner.join();
}

}  // namespace
