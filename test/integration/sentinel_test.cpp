// Redis Sentinel and replica-synced writes against real processes on loopback: a master, its
// replica and three sentinels (support/sentinel_topology.hpp). Discovery, its errors, a
// failover that moves holders and waiters with no user action, and WAIT after each write.
#include "rlock/rlock.hpp"
#include "support/fake_server.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"
#include "support/sentinel_topology.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace sentinel_test {

namespace asio = boost::asio;
using rlock::test::error_of;
using rlock::test::poll_until;
using rlock::test::raw_client;
using rlock::test::sentinel_topology;
using namespace std::chrono_literals;

/// One topology for the binary (starting one takes seconds); a failover test leaves it settled
/// again, with whichever node is master then.
sentinel_topology& topology() {
  static sentinel_topology t;
  static const bool ready = [] {
    t.wait_settled();
    return true;
  }();
  (void)ready;
  return t;
}

rlock::config sentinel_config() {
  rlock::config cfg;
  cfg.host = "192.0.2.1";  // never used: with sentinels, the sentinels say where to go
  cfg.port = 1;
  cfg.sentinel.nodes = topology().sentinels();
  cfg.sentinel.master_name = topology().master_name();
  cfg.key_prefix = rlock::test::unique_prefix();
  cfg.watchdog_timeout = 3s;
  cfg.command_timeout = 1s;
  cfg.connect_timeout = 1s;
  cfg.health_check_interval = 300ms;
  cfg.reconnect.backoff_initial = 20ms;
  cfg.reconnect.backoff_cap = 200ms;
  return cfg;
}

/// Runs `f` (a blocking wait on the topology) on another thread and completes with its result,
/// while the calling coroutine's io_context goes on running the clients.
template <typename F>
asio::awaitable<std::invoke_result_t<F>> off_thread(F f) {
  auto done = std::async(std::launch::async, std::move(f));
  co_await poll_until([&] { return done.wait_for(0s) == std::future_status::ready; }, 90s);
  co_return done.get();
}

/// A port nothing listens on (a server started and stopped).
std::uint16_t dead_port() {
  rlock::test::redis_server gone;
  return gone.port();
}

TEST(sentinel, the_client_finds_the_master_through_the_sentinels_and_locks_there) {
  asio::io_context io;
  auto cfg = sentinel_config();
  // A sentinel that is down is skipped: the next one answers.
  cfg.sentinel.nodes.insert(cfg.sentinel.nodes.begin(), {"127.0.0.1", dead_port()});
  rlock::client redis(io.get_executor(), cfg);
  const auto master = topology().master_port();
  raw_client raw(master);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("found");
    co_await lock.lock();
    EXPECT_EQ(raw.command_int({"EXISTS", lock.key()}), 1);  // on the master sentinels named
    co_await lock.unlock();
    co_await redis.close();
  });
}

TEST(sentinel, an_unknown_master_name_fails_connect_naming_every_sentinel) {
  asio::io_context io;
  auto cfg = sentinel_config();
  cfg.sentinel.master_name = "no-such-master";
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    EXPECT_EQ(co_await error_of(redis.connect()), rlock::errc::master_not_found);
    co_return;
  });
  try {
    rlock::test::run(io, [&]() -> asio::awaitable<void> { co_await redis.connect(); });
  } catch (const boost::system::system_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no-such-master"), std::string::npos) << what;
    for (const auto& node : cfg.sentinel.nodes) {
      EXPECT_NE(what.find(std::to_string(node.port)), std::string::npos) << what;
    }
  }
}

TEST(sentinel, no_sentinel_reachable_fails_connect_with_master_not_found) {
  asio::io_context io;
  auto cfg = sentinel_config();
  cfg.sentinel.nodes = {{"127.0.0.1", dead_port()}, {"127.0.0.1", dead_port()}};
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    EXPECT_EQ(co_await error_of(redis.connect()), rlock::errc::master_not_found);
  });
}

/// A fake sentinel: answers HELLO, then `SENTINEL get-master-addr-by-name` with 127.0.0.1 and
/// `port_of(n)` for the n-th question (counted in `asked`); any other second command (the
/// `+switch-master` listener's SUBSCRIBE) gets the connection closed.
template <typename PortOf>
rlock::test::fake_server::behaviour_type fake_sentinel(std::atomic<int>& asked, PortOf port_of) {
  return [&asked, port_of](rlock::test::fake_server::socket& socket, rlock::test::fake_server&) {
    using rlock::test::fake_server;
    if (fake_server::read_some(socket).empty()) return;
    fake_server::write(socket, "%1\r\n+server\r\n+redis\r\n");
    if (fake_server::read_some(socket).find("get-master-addr-by-name") == std::string::npos) {
      return;
    }
    const auto port = std::to_string(port_of(asked++));
    fake_server::write(socket, "*2\r\n$9\r\n127.0.0.1\r\n$" + std::to_string(port.size()) + "\r\n" +
                                   port + "\r\n");
  };
}

/// A sentinel whose view is stale names a replica: the ROLE check refuses it and the sentinels
/// are asked again, a bounded number of times, then connect() says why.
TEST(sentinel, a_node_that_is_not_the_master_is_refused_and_the_sentinels_asked_again) {
  rlock::test::redis_server::options o;
  o.replica_of = dead_port();  // a replica (of nothing that answers): ROLE says "slave"
  rlock::test::redis_server replica(o);
  std::atomic<int> asked{0};
  rlock::test::fake_server stale(fake_sentinel(asked, [&](int) { return replica.port(); }));
  asio::io_context io;
  auto cfg = sentinel_config();
  cfg.sentinel.nodes = {{"127.0.0.1", stale.port()}};
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    EXPECT_EQ(co_await error_of(redis.connect()), rlock::errc::not_master);
  });
  EXPECT_EQ(asked.load(), 6);  // the first answer and five more questions
}

/// After a failover the new master can count a hold of an owner that a lost release should
/// have removed. Here the "failover" is a fake sentinel naming node A, then node B, where that
/// hold was planted. An owner made after the move locks and unlocks: the server says "still
/// held", and the hold nobody has is given back, not renewed for ever.
TEST(sentinel, after_a_move_to_another_node_a_hold_no_caller_has_is_given_back) {
  rlock::test::redis_server a;
  rlock::test::redis_server b;
  std::atomic<int> asked{0};
  rlock::test::fake_server sentinel(
      fake_sentinel(asked, [&](int n) { return n == 0 ? a.port() : b.port(); }));
  asio::io_context io;
  auto cfg = sentinel_config();
  cfg.sentinel.nodes = {{"127.0.0.1", sentinel.port()}};
  cfg.watchdog_timeout = 1500ms;
  rlock::client redis(io.get_executor(), cfg);
  raw_client on_a(a.port());
  raw_client on_b(b.port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("moved-hold", 7);
    // The stale hold on B: this owner's, as a release lost in a failover would leave it.
    on_b.command({"HSET", lock.key(), lock.owner_field(), "1"});
    on_b.command({"PEXPIRE", lock.key(), "60000"});
    // The move: A drops the client, the sentinel now names B.
    on_a.command({"CLIENT", "KILL", "TYPE", "normal"});
    EXPECT_TRUE(co_await poll_until([&] { return redis.stats().reconnects >= 1; }));
    co_await lock.lock();  // the server counts 2 holds, the owner 1
    co_await lock.unlock();
    EXPECT_TRUE(co_await poll_until([&] { return on_b.command_int({"EXISTS", lock.key()}) == 0; }));
    EXPECT_EQ(redis.activity().renewed_locks, 0u);
    EXPECT_GE(redis.stats().given_back, 1u);
    co_await redis.close();
  });
}

TEST(sentinel, settings_that_cannot_work_are_refused_when_the_client_is_made) {
  asio::io_context io;
  auto cfg = sentinel_config();
  cfg.sentinel.master_name.clear();
  EXPECT_EQ(rlock::test::thrown_by([&] { rlock::client c(io.get_executor(), cfg); }),
            rlock::errc::invalid_argument);
  cfg = sentinel_config();
  cfg.sentinel.nodes.push_back({"", 26379});
  EXPECT_EQ(rlock::test::thrown_by([&] { rlock::client c(io.get_executor(), cfg); }),
            rlock::errc::invalid_argument);
  rlock::config sync;
  sync.sync_replicas.replicas = 1;
  sync.sync_replicas.timeout = sync.command_timeout;  // WAIT would outlast the command's bound
  EXPECT_EQ(rlock::test::thrown_by([&] { rlock::client c(io.get_executor(), sync); }),
            rlock::errc::invalid_argument);
  sync.sync_replicas.timeout = 0ms;  // WAIT 0 blocks for ever
  EXPECT_EQ(rlock::test::thrown_by([&] { rlock::client c(io.get_executor(), sync); }),
            rlock::errc::invalid_argument);
  sync.sync_replicas.replicas = -1;
  EXPECT_EQ(rlock::test::thrown_by([&] { rlock::client c(io.get_executor(), sync); }),
            rlock::errc::invalid_argument);
}

/// SENTINEL FAILOVER while a watchdog holder holds a lock and a waiter waits for it: both
/// follow the master with nothing from the user; the holder keeps its lock (it was replicated
/// long before), the waiter is woken by the unlock published on the new master.
TEST(sentinel, a_failover_moves_holder_and_waiter_to_the_new_master) {
  asio::io_context io;
  auto& t = topology();
  // The replica has synced (a fresh topology's may not have yet): the lock survives the move.
  const auto old_master = t.wait_settled();
  const auto cfg = sentinel_config();  // one key prefix for both
  rlock::client holder(io.get_executor(), cfg);
  rlock::client waiter(io.get_executor(), cfg);
  bool acquired = false;
  bool waiting_done = false;
  rlock::test::run(
      io,
      [&]() -> asio::awaitable<void> {
        co_await holder.connect();
        co_await waiter.connect();
        auto h = holder.get_lock("moved");
        co_await h.lock();  // watchdog
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
              auto w = waiter.get_lock("moved");
              acquired = co_await w.try_lock(30s, 10s);
              if (acquired) co_await w.unlock();
              waiting_done = true;
            },
            asio::detached);
        EXPECT_TRUE(co_await poll_until([&] { return waiter.activity().waiters == 1; }));
        t.failover();
        // Off the clients' thread: they must go on renewing and listening meanwhile.
        const auto new_master = co_await off_thread([&] {
          const auto port = t.wait_switched(old_master);
          t.wait_demoted(old_master);
          return port;
        });
        // Both clients are on the new master once they have reconnected there.
        EXPECT_TRUE(co_await poll_until(
            [&] {
              return holder.state() == rlock::connection_state::connected &&
                     waiter.state() == rlock::connection_state::connected &&
                     holder.stats().reconnects >= 1 && waiter.stats().reconnects >= 1;
            },
            20s));
        raw_client raw(new_master);
        EXPECT_EQ(raw.command_int({"EXISTS", h.key()}), 1);
        EXPECT_TRUE(co_await h.is_held());
        EXPECT_FALSE(waiting_done);
        co_await h.unlock();
        EXPECT_TRUE(co_await poll_until([&] { return waiting_done; }, 10s));
        EXPECT_TRUE(acquired);
        co_await holder.close();
        co_await waiter.close();
      },
      60s);
  t.wait_settled();
}

TEST(sentinel, an_election_keeps_its_leader_and_its_observers_order_across_a_failover) {
  asio::io_context io;
  auto& t = topology();
  const auto old_master = t.wait_settled();
  const auto cfg = sentinel_config();
  rlock::client leader_client(io.get_executor(), cfg);
  rlock::client observer_client(io.get_executor(), cfg);
  rlock::test::run(
      io,
      [&]() -> asio::awaitable<void> {
        co_await leader_client.connect();
        co_await observer_client.connect();
        rlock::election leader(leader_client, "moved-election");
        rlock::election view(observer_client, "moved-election");
        auto changes = view.observe();
        const auto term = co_await leader.campaign("before");
        std::vector<rlock::election_change> seen;
        seen.push_back(co_await changes.next());  // elected, or the record read after it
        EXPECT_EQ(seen.back().term, term);
        t.failover();
        co_await off_thread([&] {
          const auto port = t.wait_switched(old_master);
          t.wait_demoted(old_master);
          return port;
        });
        EXPECT_TRUE(co_await poll_until(
            [&] {
              return leader_client.state() == rlock::connection_state::connected &&
                     observer_client.state() == rlock::connection_state::connected &&
                     leader_client.stats().reconnects >= 1 &&
                     observer_client.stats().reconnects >= 1;
            },
            20s));
        // Still the leader on the new master (the replica had its record and lock), and its
        // next change reaches the observer, after whatever the move made it read.
        co_await leader.proclaim("after");
        for (int i = 0; i < 4 && seen.back().value != "after"; ++i) {
          seen.push_back(co_await changes.next());
        }
        EXPECT_EQ(seen.back().value, "after");
        EXPECT_EQ(seen.back().term, term);
        for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_GT(seen[i].seq, seen[i - 1].seq);
        const auto who = co_await view.leader();
        EXPECT_TRUE(who && who->owner == leader.owner() && who->value == "after");
        co_await leader.resign();
        changes.close();
        co_await leader_client.close();
        co_await observer_client.close();
      },
      90s);
  t.wait_settled();
}

// --- replica-synced writes ------------------------------------------------------------------

/// A master and its replica, without sentinels.
struct replicated {
  rlock::test::redis_server master;
  rlock::test::redis_server replica{[this] {
    rlock::test::redis_server::options o;
    o.replica_of = master.port();
    return o;
  }()};
  replicated() {
    // As the master sees it: after a diskless sync a replica is counted by WAIT only once its
    // first REPLCONF ACK has arrived, up to a second after its link is up.
    // A write the replica acknowledges (WAIT) proves it: the test's own WAITs then count it.
    raw_client raw(master.port());
    for (int i = 0; i < 100; ++i) {
      raw.command({"SET", "rlock-test:replicated", std::to_string(i)});
      if (raw.command_int({"WAIT", "1", "100"}) == 1) return;
      std::this_thread::sleep_for(20ms);
    }
    throw std::runtime_error("the replica never caught up with its master");
  }
  ~replicated() { resume_replica(); }  // a failed test must not leave it stopped
  void pause_replica() { ::kill(replica.pid(), SIGSTOP); }
  void resume_replica() { ::kill(replica.pid(), SIGCONT); }

  /// A client config on the master that WAITs for the replica `timeout` after each write.
  rlock::config synced_config(std::chrono::milliseconds timeout) const {
    auto cfg = rlock::test::make_config();
    cfg.port = master.port();
    cfg.sync_replicas.replicas = 1;
    cfg.sync_replicas.timeout = timeout;
    cfg.command_timeout = 10 * timeout;
    return cfg;
  }
};

TEST(sync_replicas, an_acquire_no_replica_acknowledged_fails_and_leaves_the_lock_free) {
  replicated nodes;
  asio::io_context io;
  // WAIT's timeout is what a paused replica costs each call here; long enough that a healthy
  // replica on a loaded CI machine always makes it (200 ms did not, once).
  rlock::client redis(io.get_executor(), nodes.synced_config(1s));
  raw_client raw(nodes.master.port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("synced");
    // Replicated: acquire, renewal (watchdog) and release pass.
    EXPECT_TRUE(co_await lock.try_lock(0ms, 5s));
    co_await lock.unlock();

    nodes.pause_replica();
    const auto code = co_await error_of(lock.try_lock(0ms, 5s));
    EXPECT_EQ(code, rlock::errc::replicas_not_synced);
    EXPECT_NE(lock.last_error().find("replica"), std::string::npos) << lock.last_error();
    EXPECT_EQ(raw.command_int({"EXISTS", lock.key()}), 0);  // given back
    EXPECT_FALSE(co_await lock.is_locked());
    // A re-entry that cannot be synced takes back only itself.
    nodes.resume_replica();
    EXPECT_TRUE(co_await lock.try_lock(0ms, 5s));
    nodes.pause_replica();
    EXPECT_EQ(co_await error_of(lock.try_lock(0ms, 5s)), rlock::errc::replicas_not_synced);
    EXPECT_EQ(co_await lock.hold_count(), 1);
    // An unsynced release is still a release.
    co_await lock.unlock();
    EXPECT_FALSE(co_await lock.is_locked());

    nodes.resume_replica();
    EXPECT_TRUE(co_await lock.try_lock(0ms, 5s));
    co_await lock.unlock();
    co_await redis.close();
  });
}

TEST(sync_replicas, a_renewal_no_replica_acknowledges_ends_in_lost) {
  replicated nodes;
  asio::io_context io;
  auto cfg = nodes.synced_config(300ms);  // below the renewal period, and not tight under load
  cfg.watchdog_timeout = 3s;
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("renewed");
    // Watchdog: renewed every second. The acquire's own WAIT may miss its 300 ms on a loaded
    // machine (the replica answers GETACK late; it was given back): this test is about the
    // renewals, so the acquire is tried again, a bounded number of times.
    std::error_code first;
    for (int i = 0; i < 10; ++i) {
      first = co_await error_of(lock.lock());
      if (first != rlock::errc::replicas_not_synced) break;
    }
    EXPECT_FALSE(first) << first.message();
    RLOCK_CO_ASSERT(!first);
    nodes.pause_replica();
    // Every renewal now runs on the master but is not acknowledged: the holder must stop
    // believing at its lease's end, though the master keeps extending the key.
    co_await lock.lost();
    EXPECT_GE(redis.metrics().renewal_failures, 1u);
    nodes.resume_replica();
    co_await error_of(lock.unlock());
    co_await redis.close();
  });
}

}  // namespace sentinel_test
