// What operators see: the log lines of a client (once per event, with the lock and a short
// owner, never the client's full UUID) and its metrics against a real server.
#include "support/acl_users.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/run.hpp"

#include <boost/asio/as_tuple.hpp>
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

namespace observability_test {

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
    // Each acquisition's line names its owner (the client id's first 8 characters and the
    // owner id). The waiter's waited for the timer: logged, once. The holder's took one round
    // trip: logged only where that took over 50 ms (a loaded machine), and then once too.
    const auto line_of = [&](const rlock::lock_handle& l) {
      const std::string field(l.owner_field());
      return "lock 'slow' (owner " + redis.id().substr(0, 8) + field.substr(field.rfind(':')) + ")";
    };
    const auto holders_lines = log.count(rlock::log_level::warning, line_of(holder));
    EXPECT_EQ(log.count(rlock::log_level::warning, line_of(waiter)), 1u) << log.all();
    EXPECT_LE(holders_lines, 1u) << log.all();
    EXPECT_EQ(log.count(rlock::log_level::warning, "acquired after"), 1u + holders_lines)
        << log.all();

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
    // b waits, asleep on the channel (its two attempts answered) before a holds 20 ms more and
    // lets go: woken by a's unlock message, whatever the machine's load. Named, not a temporary
    // inside co_await (g++ 12).
    auto hold_then_unlock = [a]() mutable -> asio::awaitable<void> {
      co_await rlock::test::sleep_for(20ms);
      co_await a.unlock();
    };
    auto passed = rlock::test::pass_to_sleeping_waiter(redis, a, b, hold_then_unlock);
    RLOCK_CO_ASSERT(co_await std::move(passed));
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

/// Reads `name` until `ready(info)` holds or 5 s pass (bounded: 500 reads), for a state another
/// coroutine is reaching (a waiter queued or listening).
template <typename Ready>
asio::awaitable<rlock::lock_info> inspect_until(rlock::client& c, std::string name, Ready ready) {
  asio::steady_timer pause(co_await asio::this_coro::executor);
  rlock::lock_info info;
  for (int i = 0; i < 500; ++i) {
    info = co_await rlock::inspect(c, name);
    if (ready(info)) break;
    pause.expires_after(10ms);
    co_await pause.async_wait(asio::use_awaitable);
  }
  co_return info;
}

TEST(observability, inspect_reads_every_kind_as_the_server_holds_it) {
  asio::io_context io;
  const auto cfg = make_config();  // one prefix for both clients
  rlock::client redis(io.get_executor(), cfg);
  rlock::client other(io.get_executor(), cfg);
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    co_await other.connect();

    // Absent, and a key that is no lock's.
    auto none = co_await rlock::inspect(redis, "insp:none");
    EXPECT_EQ(none.kind, rlock::key_kind::absent);
    EXPECT_FALSE(none.held());
    EXPECT_EQ(none.key, std::string(redis.get_lock("insp:none").key()));
    raw.command({"SET", std::string(redis.get_lock("insp:text").key()), "hello"});
    auto text = co_await rlock::inspect(redis, "insp:text");
    EXPECT_EQ(text.kind, rlock::key_kind::other);
    EXPECT_EQ(text.key_type, "string");

    // Reentrant, held twice: its owner's field and count, a TTL.
    auto lock = redis.get_lock("insp:plain");
    co_await lock.lock();
    co_await lock.lock();
    auto plain = co_await rlock::inspect(redis, "insp:plain");
    EXPECT_EQ(plain.kind, rlock::key_kind::reentrant);
    EXPECT_EQ(plain.holders.size(), 1U);
    EXPECT_EQ(plain.holders.at(0).owner, lock.owner_field());
    EXPECT_EQ(plain.holders.at(0).count, 2);
    EXPECT_GT(plain.ttl.value_or(0ms).count(), 0);
    co_await lock.unlock();
    co_await lock.unlock();

    // Fenced: its last token.
    auto fenced = redis.get_fenced_lock("insp:fenced");
    const auto token = co_await fenced.lock();
    auto f = co_await rlock::inspect(redis, "insp:fenced");
    EXPECT_EQ(f.kind, rlock::key_kind::fenced);
    EXPECT_EQ(f.token, token);
    co_await fenced.unlock();

    // Fair, with a waiter of another client in its queue.
    auto fair = redis.get_fair_lock("insp:fair");
    co_await fair.lock();
    auto waiter = other.get_fair_lock("insp:fair");
    bool waited = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          waited = co_await waiter.try_lock(5000ms, 1000ms);
          if (waited) co_await waiter.unlock();
        },
        asio::detached);
    auto queued = co_await inspect_until(
        redis, "insp:fair", [](const rlock::lock_info& i) { return !i.queue.empty(); });
    EXPECT_EQ(queued.kind, rlock::key_kind::fair);
    EXPECT_EQ(queued.queue.size(), 1U);
    EXPECT_EQ(queued.queue.at(0).owner, waiter.owner_field());
    co_await fair.unlock();

    // Read-write: two readers.
    auto rw1 = redis.get_read_write_lock("insp:rw");
    auto rw2 = other.get_read_write_lock("insp:rw");
    co_await rw1.read_lock().lock();
    co_await rw2.read_lock().lock();
    auto rw = co_await rlock::inspect(redis, "insp:rw");
    EXPECT_EQ(rw.kind, rlock::key_kind::read_write);
    EXPECT_EQ(rw.mode, rlock::hold_role::read);
    EXPECT_EQ(rw.holders.size(), 2U);
    for (const auto& h : rw.holders) EXPECT_EQ(h.role, rlock::hold_role::read);
    co_await rw1.read_lock().unlock();
    co_await rw2.read_lock().unlock();

    // Semaphore: 3 permits, one out.
    auto sem = redis.get_semaphore("insp:sem");
    EXPECT_TRUE(co_await sem.try_set_permits(3));
    auto permit = co_await sem.acquire();
    auto s = co_await rlock::inspect(redis, "insp:sem");
    EXPECT_EQ(s.kind, rlock::key_kind::semaphore);
    EXPECT_EQ(s.available, 2);
    EXPECT_EQ(s.total, 3);
    EXPECT_EQ(s.permits.size(), 1U);
    EXPECT_TRUE(s.held());
    co_await permit.unlock();

    // Count-down latch: count 1 and a waiter.
    rlock::count_down_latch latch(redis, "insp:latch");
    EXPECT_TRUE(co_await latch.try_set_count(1));
    rlock::count_down_latch waiting(other, "insp:latch");
    bool opened = false;
    asio::co_spawn(
        io, [&]() -> asio::awaitable<void> { opened = co_await waiting.try_wait(5000ms); },
        asio::detached);
    auto l = co_await inspect_until(redis, "insp:latch", [](const rlock::lock_info& i) {
      return i.kind == rlock::key_kind::count_down_latch;
    });
    EXPECT_EQ(l.kind, rlock::key_kind::count_down_latch);
    EXPECT_EQ(l.count, 1);
    EXPECT_EQ(l.subscribers, 1);
    co_await latch.count_down();

    // The token form completes with an error_code, as Asio's own operations do.
    auto [ec, info] =
        co_await rlock::async_inspect(redis, "insp:plain", asio::as_tuple(asio::use_awaitable));
    EXPECT_FALSE(ec);
    EXPECT_EQ(info.kind, rlock::key_kind::absent);

    // Let the spawned waiters finish before the clients close.
    asio::steady_timer settle(io);
    for (int i = 0; i < 500 && !(waited && opened); ++i) {
      settle.expires_after(10ms);
      co_await settle.async_wait(asio::use_awaitable);
    }
    EXPECT_TRUE(waited);
    EXPECT_TRUE(opened);
    co_await other.close();
    co_await redis.close();
  });
}

TEST(observability, inspect_refused_by_acl_names_the_refusal_in_every_form) {
  asio::io_context io;
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  auto cfg = make_config();
  const std::string user = "inspector";
  // The least-privilege line: enough to lock, not to read a lock's keys (no TYPE, no HGETALL).
  rlock::test::set_user(raw, user, rlock::test::least_privilege_rules(cfg.key_prefix));
  cfg.username = user;
  cfg.password = "pw";
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto [ec, info] =
        co_await rlock::async_inspect(redis, "insp:acl", asio::as_tuple(asio::use_awaitable));
    EXPECT_EQ(ec, rlock::errc::command_not_permitted) << ec.message();
    EXPECT_EQ(info.kind, rlock::key_kind::absent);  // nothing read
    try {
      co_await rlock::inspect(redis, "insp:acl");
      ADD_FAILURE() << "no error";
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), rlock::errc::command_not_permitted);
      EXPECT_NE(std::string(e.what()).find("NOPERM"), std::string::npos) << e.what();
    }
    co_await redis.close();
  });
  raw.command({"ACL", "DELUSER", user});
}

}  // namespace observability_test
