// Chaos scenarios: a workload of coroutines and a blocking thread contending on two locks while
// one fault is injected, its history checked by the checker (chaos/checker.hpp). Each test says
// which fault and when; every one must end with the checker clean: no overlapping beliefs, no
// operation past its bound, nothing left behind.
#include "chaos/scenario.hpp"
#include "support/lock_env.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <rlock/client.hpp>
#include <rlock/error.hpp>
#include <thread>
#include <vector>

namespace {

using namespace rlock::chaos;
using namespace std::chrono_literals;
namespace asio = boost::asio;

constexpr nanos ms = 1'000'000;

/// The time from each restarted server answering again to the first acquisition after that.
std::vector<double> recovery_ms(const history& h, const std::vector<nanos>& back_at) {
  std::vector<double> out;
  for (const nanos back : back_at) {
    nanos first = -1;
    for (const auto& a : h.acquisitions) {
      if (a.acquired > back && (first < 0 || a.acquired < first)) first = a.acquired;
    }
    if (first >= 0) out.push_back(static_cast<double>(first - back) / 1e6);
  }
  return out;
}

std::size_t count_ends(const history& h, end_kind k) {
  return static_cast<std::size_t>(std::count_if(h.acquisitions.begin(), h.acquisitions.end(),
                                                [k](const auto& a) { return a.end == k; }));
}

/// Injects `fault` `times` times, each once `moment` holds, letting the workload run for
/// `settle` before the next one.
void aim(int times, const std::function<bool()>& moment, const std::function<void()>& fault,
         std::chrono::milliseconds settle) {
  for (int i = 0; i < times; ++i) {
    ASSERT_TRUE(wait_until(moment));
    fault();
    std::this_thread::sleep_for(settle);
  }
}

TEST(chaos, client_kill_while_waiting) {
  scenario s;
  auto w = s.workload("p");
  w.names = {"alpha"};  // one lock: most workers are waiting at any moment
  s.start(w);
  aim(
      3, [&] { return s.rec.in_progress(op_kind::lock, 20 * ms); },
      [&] { EXPECT_GE(s.kill_clients(), 1); }, 300ms);
  const auto v = s.finish();
  EXPECT_TRUE(v.clean()) << v.report();
  EXPECT_GT(v.acquisitions, 10u);
}

TEST(chaos, client_kill_while_holding) {
  scenario s;
  auto w = s.workload("p");
  w.max_hold = 200ms;  // holders hold across the kill and must keep renewing after it
  s.start(w);
  aim(
      3, [&] { return s.rec.holding(); }, [&] { EXPECT_GE(s.kill_clients(), 1); }, 300ms);
  const auto v = s.finish();
  EXPECT_TRUE(v.clean()) << v.report();
}

TEST(chaos, client_kill_while_an_unlock_is_in_flight) {
  scenario s;
  // Replies take 40 ms through the proxy, so an unlock stays in flight long enough to aim at.
  s.proxy.set_delay(direction::to_client, 40ms);
  s.start(s.workload("p"));
  aim(
      3, [&] { return s.rec.in_progress(op_kind::unlock, 5 * ms); },
      [&] { EXPECT_GE(s.kill_clients(), 1); }, 300ms);
  const auto v = s.finish();
  EXPECT_TRUE(v.clean()) << v.report();
}

/// A holder behind the proxy, a waiter connected directly: the proxy swallows everything for
/// 1.5 leases. The holder must stop believing (lost()) before the waiter can acquire.
void black_hole_scenario(transport_kind kind) {
  scenario s({}, kind);
  asio::io_context io;
  rlock::client holder(io.get_executor(), s.client_config("holder"));
  rlock::client waiter(io.get_executor(), s.client_config("waiter", false));
  nanos lost_at = 0;
  nanos taken_at = 0;
  int finished = 0;
  auto done = [&] {
    if (++finished == 2) io.stop();
  };
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await holder.connect();
        co_await waiter.connect();
        auto l = holder.get_lock("gamma");
        const nanos requested = now_ns();
        co_await l.lock();
        const auto a = s.rec.acquired("gamma", "holder", requested);
        asio::co_spawn(
            io,
            [&, a]() -> asio::awaitable<void> {
              auto w = waiter.get_lock("gamma");
              const nanos asked = now_ns();
              const auto op = s.rec.started(op_kind::lock, "gamma", "waiter", -1);
              co_await w.lock();
              s.rec.finished(op, "acquired");
              taken_at = now_ns();
              const auto b = s.rec.acquired("gamma", "waiter", asked);
              const auto u = s.rec.started(op_kind::unlock, "gamma", "waiter", 300 * ms);
              s.rec.end(b, end_kind::released);
              co_await w.unlock();
              s.rec.finished(u, "released");
              (void)a;
              done();
            },
            asio::detached);
        s.proxy.black_hole();
        co_await l.lost();
        lost_at = now_ns();
        s.rec.end(a, end_kind::lost);
        done();
      },
      asio::detached);
  // Both coroutines end within about a lease; run_for bounds a hang.
  io.run_for(10s);
  EXPECT_EQ(finished, 2);
  s.proxy.heal();
  ASSERT_GT(lost_at, 0);
  ASSERT_GT(taken_at, 0);
  std::printf("lost() margin: %.1f ms before the next owner acquired\n",
              static_cast<double>(taken_at - lost_at) / 1e6);
  EXPECT_LT(lost_at, taken_at);
  // Let the healed holder reconnect and release its (already lost) hold before the checks.
  asio::co_spawn(io, holder.close(), asio::detached);
  asio::co_spawn(io, waiter.close(), asio::detached);
  io.restart();
  io.run_for(5s);
  const auto v = s.finish();
  EXPECT_TRUE(v.clean()) << v.report();
}

TEST(chaos, black_hole_longer_than_the_lease_holder_learns_lost_first) {
  black_hole_scenario(transport_kind::tcp);
}

TEST(chaos, black_hole_over_tls_holder_learns_lost_first) {
  black_hole_scenario(transport_kind::tls);
}

/// Runs a directed scenario: `body` on `io` (at most 20 s), then lets `clients` go idle (a
/// give-back's latch is deleted a turn after its answer), closes them, and checks that the run
/// left nothing behind on the server or in the clients.
void run_directed(scenario& s, asio::io_context& io, std::vector<rlock::client*> clients,
                  const std::function<asio::awaitable<void>()>& body) {
  bool done = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await body();
        const auto idle = [&] {
          return std::all_of(clients.begin(), clients.end(),
                             [](rlock::client* c) { return c->activity().idle(); });
        };
        for (int i = 0; i < 200 && !idle(); ++i) co_await rlock::test::sleep_for(5ms);
        for (rlock::client* c : clients) co_await c->close();
        done = true;
        io.stop();
      },
      asio::detached);
  io.run_for(20s);
  EXPECT_TRUE(done);
  const auto v = s.finish();
  EXPECT_TRUE(v.leftovers.empty()) << v.report();
}

/// An acquire is written to a connection whose path then breaks (frozen in the proxy; new
/// connections flow). The client gives the connection up, reconnects, reconciles the acquire as
/// not run and acquires again; then the old path heals and TCP delivers the old bytes. With
/// `fenced`, the new connection's handshake killed the old one: the old acquire never runs.
/// Without the right to do that (an ACL user without `client|kill`) it runs late and adds a hold
/// nobody has, which the owner's unlock must give back instead of keeping the lock for no one.
void late_acquire_scenario(bool fenced) {
  scenario s;
  rlock::test::raw_client raw(s.server.port());
  auto cfg = chaos_config(s.proxy.port(), s.prefix, "late");
  if (!fenced) {
    raw.command(
        {"ACL", "SETUSER", "chaos-nokill", "on", ">pw", "~*", "&*", "+@all", "-client|kill"});
    cfg.username = "chaos-nokill";
    cfg.password = "pw";
  }
  asio::io_context io;
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), chaos_config(s.server.port(), s.prefix, "other"));
  run_directed(s, io, {&a, &b}, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto l = a.get_lock("delta");
    s.proxy.freeze_open();
    EXPECT_TRUE(co_await l.try_lock(5s));  // reconciled, then acquired on a new connection
    EXPECT_GE(a.stats().reconnects, 1u);
    EXPECT_GE(a.stats().reconciled_acquires, 1u);
    s.proxy.heal();  // the old connection's bytes go out now
    // Delivered, and the old link closed (by the server, or after its end marker).
    for (int i = 0; i < 400 && s.proxy.open_connections() > 1; ++i) {
      co_await rlock::test::sleep_for(5ms);
    }
    const std::string want = fenced ? "1" : "2";
    for (int i = 0; i < 200 && raw.command({"HGET", l.key(), l.owner_field()}).str != want; ++i) {
      co_await rlock::test::sleep_for(5ms);
    }
    EXPECT_EQ(raw.command({"HGET", l.key(), l.owner_field()}).str, want);
    co_await l.unlock();
    auto other = b.get_lock("delta");
    const bool taken = co_await other.try_lock(2s);  // well within a lease
    EXPECT_TRUE(taken);
    EXPECT_EQ(a.stats().given_back, fenced ? 0u : 1u);
    if (taken) co_await other.unlock();
  });
}

TEST(chaos, an_acquire_on_a_connection_given_up_never_runs_after_the_reconnect) {
  late_acquire_scenario(true);
}

TEST(chaos, an_acquire_delivered_late_without_the_fence_leaves_no_lock_behind) {
  late_acquire_scenario(false);
}

TEST(chaos, an_unlock_on_a_connection_given_up_never_releases_a_later_hold) {
  // What the soak found before the fence: an unlock stalled on a path that later heals is
  // retried on a new connection (same latch), answered, its latch deleted; the owner locks
  // again; then the old path delivers the first unlock, which, its latch gone, released the new
  // hold while its owner believed it held the lock. The fence kills the old connection first.
  scenario s;
  rlock::test::raw_client raw(s.server.port());
  asio::io_context io;
  rlock::client a(io.get_executor(), chaos_config(s.proxy.port(), s.prefix, "late-unlock"));
  run_directed(s, io, {&a}, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    auto l = a.get_lock("epsilon");
    co_await l.lock();
    s.proxy.freeze_open();
    std::error_code ec;
    try {
      co_await l.unlock();
    } catch (const std::system_error& e) {
      ec = e.code();
    }
    EXPECT_EQ(ec, rlock::errc::timeout);  // written to the frozen connection
    // Retried on a new connection with its latch: released.
    for (int i = 0; i < 400 && raw.command_int({"EXISTS", l.key()}) != 0; ++i) {
      co_await rlock::test::sleep_for(5ms);
    }
    EXPECT_EQ(raw.command_int({"EXISTS", l.key()}), 0);
    for (int i = 0; i < 200 && !a.activity().idle(); ++i) {  // latch deleted
      co_await rlock::test::sleep_for(5ms);
    }
    co_await l.lock();
    s.proxy.heal();
    for (int i = 0; i < 400 && s.proxy.open_connections() > 1; ++i) {
      co_await rlock::test::sleep_for(5ms);
    }
    EXPECT_EQ(s.proxy.open_connections(), 1u);
    EXPECT_EQ(raw.command({"HGET", l.key(), l.owner_field()}).str, "1");  // still ours
    EXPECT_TRUE(co_await l.is_held());
    co_await l.unlock();
  });
}

TEST(chaos, two_lost_acquires_of_one_owner_count_one_hold_once) {
  // What the dense soak found after the fence: a try_lock told `timeout` left its acquire to be
  // reconciled; its owner then called lock(), whose attempt was lost too. After the reconnect
  // both asked HGET and saw the one hold the first attempt had made; the first claimed it and
  // gave it back (that release queued behind both questions), the second claimed it as well and
  // reported the lock acquired while the give-back released it.
  scenario s;
  rlock::test::raw_client raw(s.server.port());
  auto cfg = chaos_config(s.proxy.port(), s.prefix, "twice");
  cfg.health_check_interval = 0ms;  // the stalls end with the cut, not with a failed PING
  asio::io_context io;
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), chaos_config(s.server.port(), s.prefix, "other"));
  run_directed(s, io, {&a, &b}, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto l = a.get_lock("eta");
    // 1. The first attempt runs; its answer is held until the bound passes.
    s.proxy.drop(direction::to_client);
    std::error_code first;
    try {
      co_await l.try_lock(0ms);
    } catch (const std::system_error& e) {
      first = e.code();
    }
    EXPECT_EQ(first, rlock::errc::timeout);
    EXPECT_EQ(raw.command({"HGET", l.key(), l.owner_field()}).str, "1");
    // 2. The second attempt is written and never reaches the server.
    s.proxy.drop(direction::to_server);
    const auto sent = s.proxy.received(direction::to_server);
    bool second = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await l.lock();
          second = true;
        },
        asio::detached);
    for (int i = 0; i < 400 && s.proxy.received(direction::to_server) == sent; ++i) {
      co_await rlock::test::sleep_for(5ms);
    }
    EXPECT_GT(s.proxy.received(direction::to_server), sent);
    // 3. Both answers are lost with the connection; both acquires are reconciled.
    s.proxy.cut_all();
    s.proxy.heal();
    for (int i = 0; i < 400 && !second; ++i) co_await rlock::test::sleep_for(5ms);
    EXPECT_TRUE(second);
    for (int i = 0; i < 200 && a.activity().requests != 0; ++i) {
      co_await rlock::test::sleep_for(5ms);
    }
    EXPECT_GE(a.stats().reconciled_acquires, 2u);
    // lock() returned: the server must count the hold its caller believes in.
    EXPECT_EQ(raw.command({"HGET", l.key(), l.owner_field()}).str, "1");
    auto other = b.get_lock("eta");
    EXPECT_FALSE(co_await other.try_lock(0ms));
    co_await l.unlock();
  });
}

/// SIGKILL and restart of a server with `appendfsync always`, three times, aimed at moments when
/// someone holds a lock: nothing is lost, so exclusion must hold throughout.
void restart_scenario(transport_kind kind) {
  scenario s(rlock::test::redis_server::options::with_aof(), kind);
  auto w = s.workload("p");
  w.duration = 5s;
  w.max_hold = 100ms;
  s.start(w);
  aim(
      3, [&] { return s.rec.holding(); }, [&] { EXPECT_TRUE(s.restart_server()); }, 600ms);
  const auto v = s.finish();
  EXPECT_TRUE(v.clean()) << v.report();
  auto rec = recovery_ms(s.last(), s.back_at);
  ASSERT_FALSE(rec.empty());  // 3 unless the run ended right after the last restart
  std::sort(rec.begin(), rec.end());
  std::printf("recovery after restart%s: p50 %.1f ms, max %.1f ms\n",
              kind == transport_kind::tls ? " (TLS)" : "", rec[rec.size() / 2], rec.back());
}

TEST(chaos, server_restart_with_aof_keeps_exclusion_without_data_loss) {
  restart_scenario(transport_kind::tcp);
}

TEST(chaos, server_restart_over_tls_keeps_exclusion_without_data_loss) {
  restart_scenario(transport_kind::tls);
}

TEST(chaos, server_restart_without_persistence_is_reported_as_data_loss) {
  scenario s;  // no AOF, no RDB: a SIGKILL forgets every lock
  auto w = s.workload("p");
  w.max_hold = 300ms;
  s.start(w);
  ASSERT_TRUE(wait_until([&] { return s.rec.holding(); }));
  EXPECT_FALSE(s.restart_server());
  const auto v = s.finish();
  // Never a pass, never hidden: the loss is reported on its own, and any overlap it caused is
  // listed under it, not as a violation of exclusion.
  ASSERT_EQ(v.data_loss.size(), 1u) << v.report();
  EXPECT_FALSE(v.clean());
  EXPECT_TRUE(v.violations.empty()) << v.report();
  EXPECT_TRUE(v.overruns.empty()) << v.report();
  EXPECT_TRUE(v.stuck.empty()) << v.report();
  EXPECT_TRUE(v.leftovers.empty()) << v.report();
}

TEST(chaos, client_pause_during_acquires) {
  // CLIENT PAUSE longer than command_timeout while acquires are in flight: callers time out,
  // late answers are given back; no ghost lock is left, nothing overlaps.
  scenario s;
  s.start(s.workload("p"));
  aim(
      2, [&] { return s.rec.in_progress(op_kind::try_lock, 0); }, [&] { s.pause_clients(700ms); },
      900ms);
  const auto v = s.finish();
  EXPECT_TRUE(v.clean()) << v.report();
}

TEST(chaos, client_pause_during_unlocks) {
  scenario s;
  s.proxy.set_delay(direction::to_client, 20ms);
  s.start(s.workload("p"));
  aim(
      2, [&] { return s.rec.in_progress(op_kind::unlock, 0); }, [&] { s.pause_clients(700ms); },
      900ms);
  const auto v = s.finish();
  EXPECT_TRUE(v.clean()) << v.report();
}

TEST(chaos, server_stopped_longer_than_a_lease) {
  scenario s;
  auto w = s.workload("p");
  w.duration = 4s;
  w.max_hold = 3s;  // holders that outlast the stop must be told lost() before it ends
  s.start(w);
  ASSERT_TRUE(wait_until([&] { return s.rec.holding(); }));
  s.stop_server(1500ms);
  const auto v = s.finish();
  EXPECT_TRUE(v.clean()) << v.report();
  std::printf("lost() during the stop: %zu\n", count_ends(s.last(), end_kind::lost));
}

TEST(chaos, replies_split_at_every_byte) {
  scenario s;
  s.proxy.split_replies(true);
  s.start(s.workload("p"));
  const auto v = s.finish();
  EXPECT_TRUE(v.clean()) << v.report();
  EXPECT_GT(v.acquisitions, 10u);
  EXPECT_GT(s.proxy.delivered(direction::to_client), 1000u);
}

TEST(chaos, user_without_channel_rights_contends_with_others) {
  scenario s;
  const std::string user = "chaos-nochan";
  {
    rlock::test::raw_client raw(s.server.port());
    raw.command({"ACL", "SETUSER", user, "on", ">pw", "~*", "resetchannels", "+@all"});
  }
  auto limited = s.workload("limited");
  limited.cfg.username = user;
  limited.cfg.password = "pw";
  limited.threads = 0;
  limited.coroutines = 3;
  limited.seed = 11;
  s.start(limited);
  s.start(s.workload("full"));
  const auto v = s.finish();
  EXPECT_TRUE(v.clean()) << v.report();
  // The limited user waited on a channel it may not read: those waits failed, with Redis's
  // reason, and did not disturb anyone else.
  const auto& ops = s.last().operations;
  EXPECT_TRUE(std::any_of(ops.begin(), ops.end(), [](const operation& o) {
    return o.owner.rfind("limited/", 0) == 0 && o.outcome.find("permission") != std::string::npos;
  })) << v.report();
  EXPECT_TRUE(std::any_of(s.last().acquisitions.begin(), s.last().acquisitions.end(),
                          [](const acquisition& a) { return a.owner.rfind("full/", 0) == 0; }));
}

}  // namespace
