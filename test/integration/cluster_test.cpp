// Redis Cluster against real cluster processes (3 masters + 3 replicas from redis-server
// --cluster-enabled and redis-cli --cluster create): routing by slot, sharded wake-ups across
// shards, hash tags, renewals per slot, a resharding under a held lock, bad input.
#include "resp3/parser.hpp"
#include "rlock/rlock.hpp"
#include "session/cluster/key_slot.hpp"
#include "support/acl_users.hpp"
#include "support/cluster_topology.hpp"
#include "support/fake_server.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"
#include "support/tls_files.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace cluster_test {

namespace asio = boost::asio;
using rlock::detail::key_slot;
using rlock::test::cluster_topology;
using rlock::test::error_of;
using rlock::test::poll_until;
using rlock::test::raw_client;
using rlock::test::run;
using rlock::test::until_asleep;
using namespace std::chrono_literals;

/// The cluster of this test binary, started on first use.
cluster_topology& shared_cluster() {
  static cluster_topology cluster;
  return cluster;
}

rlock::config cluster_config(cluster_topology& c = shared_cluster()) {
  rlock::config cfg;
  cfg.cluster.nodes = c.seeds();
  cfg.key_prefix = rlock::test::unique_prefix();
  return cfg;
}

/// Three names `<stem><i>` whose keys (under `prefix`) live on three different masters.
std::vector<std::string> one_name_per_master(cluster_topology& c, const std::string& prefix,
                                             const std::string& stem) {
  std::vector<std::string> names;
  std::set<std::uint16_t> masters;
  for (int i = 0; names.size() < 3 && i < 1000; ++i) {
    const std::string name = stem + std::to_string(i);
    if (masters.insert(c.owner_of(key_slot(prefix + name))).second) names.push_back(name);
  }
  return names;
}

/// The lock's hold count for `field` on the node that owns its key (0: none).
std::int64_t holds_on_owner(cluster_topology& c, std::string_view key, std::string_view field) {
  raw_client raw(c.owner_of(key_slot(key)));
  const auto v = raw.command({"HGET", key, field});
  return v.is_null() ? 0 : std::stoll(v.str);
}

TEST(cluster, crc16_slots_match_the_servers_cluster_keyslot) {
  raw_client raw(shared_cluster().node(0).port());
  std::mt19937 rng(20261125);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 40);
  std::vector<std::string> keys{"", "{", "}", "{}", "{}x", "x{}", "{a}", "a{b}c{d}", "{{a}}"};
  for (int i = 0; i < 3000; ++i) {
    std::string k;
    const int n = length(rng);
    for (int j = 0; j < n; ++j) {
      // Braces often, so that tags of every shape appear.
      const int b = byte(rng);
      k.push_back(b < 20 ? '{' : b < 40 ? '}' : static_cast<char>(b));
    }
    keys.push_back(std::move(k));
  }
  int checked = 0;
  for (const auto& k : keys) {
    const auto server = raw.command_int({"CLUSTER", "KEYSLOT", k});
    ASSERT_EQ(key_slot(k), server) << "key of " << k.size() << " bytes";
    ++checked;
  }
  EXPECT_EQ(checked, 3009);
}

TEST(cluster, locks_spread_over_every_shard_each_on_its_slots_owner) {
  auto& cluster = shared_cluster();
  asio::io_context io;
  rlock::client redis(io.get_executor(), cluster_config());
  std::vector<rlock::reentrant_lock> locks;
  run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    for (int i = 0; i < 48; ++i) {
      locks.push_back(redis.get_lock("spread-" + std::to_string(i)));
      co_await locks.back().lock();
    }
  });
  std::map<std::uint16_t, int> per_master;
  for (auto& l : locks) {
    const auto key = l.key();
    const auto owner = cluster.owner_of(key_slot(key));
    ++per_master[owner];
    EXPECT_EQ(holds_on_owner(cluster, key, l.owner_field()), 1) << key;
  }
  EXPECT_EQ(per_master.size(), 3u) << "48 names should land on all three masters";
  run(io, [&]() -> asio::awaitable<void> {
    for (auto& l : locks) co_await l.unlock();
  });
  for (auto& l : locks) {
    raw_client raw(cluster.owner_of(key_slot(l.key())));
    EXPECT_EQ(raw.command_int({"EXISTS", l.key()}), 0);
  }
  EXPECT_EQ(redis.stats().lost_locks, 0u);
}

TEST(cluster, hash_tagged_names_share_one_node) {
  auto& cluster = shared_cluster();
  asio::io_context io;
  rlock::client redis(io.get_executor(), cluster_config());
  run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto a = redis.get_lock("{order-7}:items");
    auto b = redis.get_lock("{order-7}:payment");
    co_await a.lock();
    co_await b.lock();
    EXPECT_EQ(key_slot(a.key()), key_slot(b.key()));
    const auto owner = cluster.owner_of(key_slot(a.key()));
    raw_client raw(owner);
    EXPECT_EQ(raw.command_int({"EXISTS", a.key(), b.key()}), 2);
    co_await a.unlock();
    co_await b.unlock();
  });
}

TEST(cluster, waiters_are_woken_across_shards_by_sharded_unlock_messages) {
  auto& cluster = shared_cluster();
  asio::io_context io;
  const auto cfg = cluster_config();
  rlock::client holder(io.get_executor(), cfg);
  rlock::client waiter(io.get_executor(), cfg);
  // One name per master: each wake-up travels on its own node's sharded channel.
  const auto names = one_name_per_master(cluster, cfg.key_prefix, "wake-");
  ASSERT_EQ(names.size(), 3u);
  run(io, [&]() -> asio::awaitable<void> {
    co_await holder.connect();
    co_await waiter.connect();
    std::vector<rlock::reentrant_lock> held;
    for (const auto& n : names) {
      held.push_back(holder.get_lock(n));
      co_await held.back().lock();  // 30 s lease: a waiter woken by its expiry would be late
    }
    int acquired = 0;
    for (const auto& n : names) {
      asio::co_spawn(
          io,
          [&, n]() -> asio::awaitable<void> {
            auto l = waiter.get_lock(n);
            if (co_await l.try_lock(20s, 5s)) ++acquired;
          },
          asio::detached);
    }
    // Every waiter parked on its channel (two attempts each) before the unlocks.
    auto probe = waiter.get_lock(names[0]);
    EXPECT_TRUE(co_await rlock::test::until_asleep(waiter, probe, 6));
    for (const auto& n : names) {
      // Sharded: an SSUBSCRIBE on the master that owns the channel's slot.
      const auto key = cfg.key_prefix + n;
      raw_client raw(cluster.owner_of(key_slot(key)));
      const auto subs =
          raw.command({"PUBSUB", "SHARDNUMSUB", "redisson_lock__channel:{" + key + "}"});
      EXPECT_EQ(rlock::test::describe(subs).find(" 1]") != std::string::npos, true)
          << rlock::test::describe(subs);
    }
    for (auto& l : held) co_await l.unlock();
    EXPECT_TRUE(co_await poll_until([&] { return acquired == 3; }, 15s));
  });
  const auto m = waiter.metrics();
  EXPECT_EQ(m.acquisitions_notification, 3u);
  EXPECT_EQ(m.acquisitions_expiry, 0u);
  EXPECT_EQ(waiter.stats().expiry_wakeups, 0u);
}

TEST(cluster, elections_on_every_shard_hand_over_and_are_observed_by_sharded_messages) {
  auto& cluster = shared_cluster();
  asio::io_context io;
  const auto cfg = cluster_config();
  rlock::client leaders(io.get_executor(), cfg);
  rlock::client followers(io.get_executor(), cfg);
  const auto names = one_name_per_master(cluster, cfg.key_prefix, "elect-");
  ASSERT_EQ(names.size(), 3u);
  run(io, [&]() -> asio::awaitable<void> {
    co_await leaders.connect();
    co_await followers.connect();
    for (const auto& n : names) {
      rlock::election first(leaders, n);
      rlock::election second(followers, n);
      auto changes = second.observe();
      const auto t1 = co_await first.campaign("first");
      std::optional<std::int64_t> t2;
      asio::co_spawn(
          io, [&]() -> asio::awaitable<void> { t2 = co_await second.campaign("second"); },
          asio::detached);
      // The observer hears the first lead (as a message or as the record), then every change.
      auto c = co_await changes.next();
      EXPECT_EQ(c.term, t1);
      co_await first.proclaim("first-2");
      c = co_await changes.next();
      EXPECT_EQ(c.what, rlock::election_change::event::proclaimed);
      EXPECT_EQ(c.value, "first-2");
      co_await first.resign();
      c = co_await changes.next();
      EXPECT_EQ(c.what, rlock::election_change::event::resigned);
      c = co_await changes.next();
      EXPECT_EQ(c.what, rlock::election_change::event::elected);
      EXPECT_EQ(c.value, "second");
      EXPECT_TRUE(co_await poll_until([&] { return t2.has_value(); }, 10s));
      EXPECT_GT(t2.value_or(0), t1);
      const auto who = co_await first.leader();
      EXPECT_TRUE(who && who->value == "second");
      // Sharded: the record and the channel live in the election key's slot.
      const auto key = cfg.key_prefix + n;
      raw_client raw(cluster.owner_of(key_slot(key)));
      EXPECT_EQ(raw.command({"HGET", "rlock_election:{" + key + "}", "value"}).str, "second");
      co_await second.resign();
    }
    co_await leaders.close();
    co_await followers.close();
  });
  EXPECT_EQ(followers.stats().expiry_wakeups, 0u);
}

TEST(cluster, fair_locks_on_every_shard_hand_over_by_sharded_push_in_order) {
  auto& cluster = shared_cluster();
  asio::io_context io;
  const auto cfg = cluster_config();
  rlock::client holder(io.get_executor(), cfg);
  rlock::client first(io.get_executor(), cfg);
  rlock::client second(io.get_executor(), cfg);
  // One name per master: the queue, timeouts, handoff registrations and each waiter's channel
  // share the lock's slot (Redisson's braces), so every script stays on one node.
  const auto names = one_name_per_master(cluster, cfg.key_prefix, "fair-");
  ASSERT_EQ(names.size(), 3u);
  run(io, [&]() -> asio::awaitable<void> {
    co_await holder.connect();
    co_await first.connect();
    co_await second.connect();
    std::vector<rlock::fair_lock> held;
    for (const auto& n : names) {
      held.push_back(holder.get_fair_lock(n));
      co_await held.back().lock();
    }
    std::vector<std::string> order;
    auto wait = [&](rlock::client& c, std::string n, std::string who) -> asio::awaitable<void> {
      auto l = c.get_fair_lock(n);
      if (co_await l.try_lock(20s, 5s)) {
        order.push_back(n + "/" + who + "/" + std::string(rlock::to_string(l.last_wake())));
        co_await l.unlock();
      }
    };
    // Queued in order: every first waiter is in its lock's queue (on that lock's node) before
    // the second ones ask.
    auto queued = [&](std::size_t n) {
      for (const auto& name : names) {
        const auto key = cfg.key_prefix + name;
        raw_client raw(cluster.owner_of(key_slot(key)));
        if (raw.command_int({"LLEN", "redisson_lock_queue:{" + key + "}"}) !=
            static_cast<std::int64_t>(n)) {
          return false;
        }
      }
      return true;
    };
    for (const auto& n : names) asio::co_spawn(io, wait(first, n, "first"), asio::detached);
    EXPECT_TRUE(co_await poll_until([&] { return queued(1); }));
    for (const auto& n : names) asio::co_spawn(io, wait(second, n, "second"), asio::detached);
    EXPECT_TRUE(co_await poll_until([&] { return queued(2); }));
    for (auto& l : held) co_await l.unlock();
    EXPECT_TRUE(co_await poll_until([&] { return order.size() == 6; }, 15s));
    for (const auto& n : names) {
      const auto at = [&](const std::string& who) {
        return std::find(order.begin(), order.end(), n + "/" + who + "/handoff") - order.begin();
      };
      EXPECT_LT(at("first"), at("second")) << n;  // in order, each by push
      EXPECT_LT(at("second"), static_cast<std::ptrdiff_t>(order.size())) << n;
    }
  });
  EXPECT_EQ(first.stats().expiry_wakeups, 0u);
  EXPECT_EQ(second.stats().expiry_wakeups, 0u);
}

TEST(cluster, read_write_locks_on_every_shard_share_readers_wake_them_and_renew_their_holds) {
  auto& cluster = shared_cluster();
  asio::io_context io;
  auto cfg = cluster_config();
  cfg.watchdog_timeout = 900ms;
  rlock::client writer(io.get_executor(), cfg);
  rlock::client readers(io.get_executor(), cfg);
  // One name per master: the hash, its hold timeouts `{<key>}:...` and the channel
  // `redisson_rwlock:{<key>}` share the lock's slot, so every script stays on one node.
  const auto names = one_name_per_master(cluster, cfg.key_prefix, "rw-");
  ASSERT_EQ(names.size(), 3u);
  int reading = 0;
  run(io, [&]() -> asio::awaitable<void> {
    co_await writer.connect();
    co_await readers.connect();
    std::vector<rlock::write_lock> held;
    for (const auto& n : names) {
      held.push_back(writer.get_read_write_lock(n).write_lock());
      co_await held.back().lock();
    }
    // Two readers per lock wait; each write unlock wakes both by its sharded message.
    std::vector<rlock::read_lock> waiting;
    for (const auto& n : names) {
      for (int i = 0; i < 2; ++i) waiting.push_back(readers.get_read_write_lock(n).read_lock());
    }
    for (auto& r : waiting) {
      asio::co_spawn(
          io,
          [&]() -> asio::awaitable<void> {
            if (co_await r.try_lock(20s)) ++reading;
          },
          asio::detached);
    }
    EXPECT_TRUE(co_await poll_until(
        [&] { return readers.stats().acquire_attempts >= 2 * waiting.size(); }));
    for (auto& l : held) co_await l.unlock();
    EXPECT_TRUE(co_await poll_until([&] { return reading == 6; }, 15s));
    // Three leases later the read holds are alive: renewed with their timeout keys, per slot.
    co_await rlock::test::sleep_for(3 * cfg.watchdog_timeout);
    for (auto& r : waiting) {
      EXPECT_TRUE(co_await r.is_held());
      const auto key = std::string(r.key());
      raw_client raw(cluster.owner_of(key_slot(key)));
      EXPECT_GT(raw.command_int({"PTTL", "{" + key + "}:" + std::string(r.owner_field()) +
                                             ":rwlock_timeout:1"}),
                0);
    }
    for (auto& r : waiting) co_await r.unlock();
    for (const auto& n : names) {
      const auto key = cfg.key_prefix + n;
      raw_client raw(cluster.owner_of(key_slot(key)));
      EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
    }
  });
  EXPECT_EQ(reading, 6);
  EXPECT_EQ(readers.stats().expiry_wakeups, 0u);
  EXPECT_EQ(readers.metrics().renewal_failures, 0u);
}

TEST(cluster, waiting_writers_mark_their_locks_slot_on_every_shard_and_enter_before_readers) {
  auto& cluster = shared_cluster();
  asio::io_context io;
  const auto cfg = cluster_config();
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  // One name per master, and one with a hash tag of its own: the marks `{<key>}:rlock_writers`
  // and queue `{<key>}:rlock_writer_queue` (`<key>:…` for a tagged key) share the lock's slot, or
  // the scripts would fail with CROSSSLOT.
  auto names = one_name_per_master(cluster, cfg.key_prefix, "wf-");
  ASSERT_EQ(names.size(), 3u);
  names.push_back("wf-{tag}-x");
  int wrote = 0;
  run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    std::vector<rlock::read_lock> readers;
    std::vector<rlock::write_lock> writers;
    for (const auto& n : names) {
      readers.push_back(a.get_read_write_lock(n).read_lock());
      writers.push_back(b.get_read_write_lock(n).write_lock());
      co_await readers.back().lock();
    }
    for (auto& w : writers) {
      asio::co_spawn(
          io,
          [&]() -> asio::awaitable<void> {
            if (co_await w.try_lock(20s)) ++wrote;
          },
          asio::detached);
    }
    EXPECT_TRUE(
        co_await poll_until([&] { return b.stats().acquire_attempts >= 2 * writers.size(); }));
    for (const auto& n : names) {
      const auto key = cfg.key_prefix + n;
      const auto marks =
          (key.find('{') == std::string::npos ? "{" + key + "}" : key) + ":rlock_writers";
      const auto queue = marks.substr(0, marks.find(":rlock_writers")) + ":rlock_writer_queue";
      EXPECT_EQ(key_slot(marks), key_slot(key)) << marks;
      EXPECT_EQ(key_slot(queue), key_slot(key)) << queue;
      raw_client raw(cluster.owner_of(key_slot(key)));
      EXPECT_EQ(raw.command_int({"ZCARD", marks}), 1) << marks;
      EXPECT_EQ(raw.command_int({"ZCARD", queue}), 1) << queue;
      // An arriving reader waits behind the mark.
      EXPECT_FALSE(co_await b.get_read_write_lock(n).read_lock().try_lock());
    }
    for (auto& r : readers) co_await r.unlock();
    EXPECT_TRUE(co_await poll_until([&] { return wrote == 4; }, 15s));
    for (auto& w : writers) co_await w.unlock();
    for (const auto& n : names) {
      const auto key = cfg.key_prefix + n;
      raw_client raw(cluster.owner_of(key_slot(key)));
      EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
    }
  });
  EXPECT_EQ(wrote, 4);
  EXPECT_EQ(b.stats().expiry_wakeups, 0u);
}

TEST(cluster, a_multi_lock_spans_every_shard_all_or_nothing) {
  auto& cluster = shared_cluster();
  asio::io_context io;
  const auto cfg = cluster_config();
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  const auto names = one_name_per_master(cluster, cfg.key_prefix, "multi-");
  ASSERT_EQ(names.size(), 3u);
  run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    rlock::multi_lock mine(
        {a.get_lock(names[0]), a.get_fair_lock(names[1]), a.get_spin_lock(names[2])});
    rlock::multi_lock theirs(
        {b.get_spin_lock(names[2]), b.get_lock(names[0]), b.get_fair_lock(names[1])});
    co_await mine.lock();
    EXPECT_FALSE(co_await theirs.try_lock(100ms));
    for (const auto& n : names) {
      const auto key = cfg.key_prefix + n;
      raw_client raw(cluster.owner_of(key_slot(key)));
      EXPECT_EQ(raw.command_int({"HLEN", key}), 1) << n;  // ours only: theirs gave back
    }
    co_await mine.unlock();
    EXPECT_TRUE(co_await theirs.try_lock(2s));
    co_await theirs.unlock();
  });
}

/// Members that share a hash slot (a common hash tag) go in one script on its master, each way;
/// members of other slots are scripts of their own. The first round loads the batch script on
/// each master it reaches (a master that has not got it answers NOSCRIPT once, and the batch is
/// sent again there).
TEST(cluster, a_multi_locks_members_that_share_a_slot_are_one_script_there) {
  auto& cluster = shared_cluster();
  asio::io_context io;
  const auto cfg = cluster_config();
  rlock::client c(io.get_executor(), cfg);
  const std::vector<std::string> tags{"g1", "g2", "g3", "g4", "g5", "g6"};
  std::map<std::uint16_t, std::int64_t> groups_on;  // master port -> tags it serves
  std::vector<std::string> names;
  for (const auto& t : tags) {
    ++groups_on[cluster.owner_of(key_slot(t))];
    for (const char* m : {":1", ":2", ":3"}) names.push_back("{" + t + "}" + m);
  }
  ASSERT_GE(groups_on.size(), 2u) << "the tags reach more than one master";
  const auto scripts_run = [&] {
    std::map<std::uint16_t, std::int64_t> n;
    for (const auto& [port, groups] : groups_on) n[port] = raw_client(port).calls_of("evalsha");
    return n;
  };
  run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    std::vector<rlock::lock_handle> members;
    for (const auto& n : names) members.push_back(c.get_lock(n));
    rlock::multi_lock group(members);
    for (int round = 0; round < 3; ++round) {
      const auto before = scripts_run();
      co_await group.lock(10s);  // a lease: no renewals meanwhile
      const auto held = scripts_run();
      for (const auto& n : names) {
        const auto key = cfg.key_prefix + n;
        EXPECT_EQ(raw_client(cluster.owner_of(key_slot(key))).command_int({"HLEN", key}), 1) << n;
      }
      co_await group.unlock();
      const auto after = scripts_run();
      if (round == 0) continue;  // the batch scripts got loaded
      for (const auto& [port, groups] : groups_on) {
        EXPECT_EQ(held.at(port) - before.at(port), groups) << "scripts to take, master " << port;
        EXPECT_EQ(after.at(port) - held.at(port), groups) << "scripts to give back, " << port;
      }
    }
    for (const auto& n : names) {
      const auto key = cfg.key_prefix + n;
      EXPECT_EQ(raw_client(cluster.owner_of(key_slot(key))).command_int({"EXISTS", key}), 0);
    }
  });
}

TEST(cluster, clocked_fenced_tokens_on_every_shard_expire_with_their_counter_in_the_locks_slot) {
  auto& cluster = shared_cluster();
  asio::io_context io;
  auto cfg = cluster_config();
  cfg.fenced_lock.token_idle_ttl = 30s;
  rlock::client c(io.get_executor(), cfg);
  const auto names = one_name_per_master(cluster, cfg.key_prefix, "fenced-");
  ASSERT_EQ(names.size(), 3u);
  run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    for (const auto& n : names) {
      auto lock = c.get_fenced_lock(n);
      const std::int64_t first = co_await lock.lock();
      co_await lock.unlock();
      // The counter lives on the lock's own node (its slot), with the TTL.
      raw_client raw(cluster.owner_of(key_slot(lock.key())));
      const auto ttl = raw.command_int({"PTTL", lock.token_key()});
      EXPECT_GT(ttl, 0) << n;
      EXPECT_LE(ttl, 30'000) << n;
      raw.command({"PEXPIRE", lock.token_key(), "1"});
      EXPECT_TRUE(co_await rlock::test::poll_until([&] {
        return raw.command_int({"EXISTS", lock.token_key()}) == 0;
      }));
      const std::int64_t next = co_await lock.lock();
      EXPECT_GT(next, first) << n;
      co_await lock.unlock();
    }
    co_await c.close();
  });
}

TEST(cluster, semaphores_on_every_shard_wake_their_waiters_by_sharded_message) {
  auto& cluster = shared_cluster();
  asio::io_context io;
  const auto cfg = cluster_config();
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  const auto names = one_name_per_master(cluster, cfg.key_prefix, "sem-");
  ASSERT_EQ(names.size(), 3u);
  int got = 0;
  run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    std::vector<rlock::permit> held;
    for (const auto& n : names) {
      auto sem = a.get_semaphore(n);
      EXPECT_TRUE(co_await sem.try_set_permits(1));
      held.push_back(co_await sem.acquire());
    }
    std::vector<std::optional<rlock::permit>> taken(names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
      asio::co_spawn(
          io,
          [&, i]() -> asio::awaitable<void> {
            taken[i] = co_await b.get_semaphore(names[i]).try_acquire(1, 20s);
            if (taken[i]) ++got;
          },
          asio::detached);
    }
    EXPECT_TRUE(co_await poll_until([&] { return b.stats().acquire_attempts >= 6; }));
    for (auto& p : held) co_await p.unlock();
    EXPECT_TRUE(co_await poll_until([&] { return got == 3; }, 15s));
    for (auto& p : taken) {
      if (p) co_await p->unlock();
    }
  });
  EXPECT_EQ(got, 3);
  EXPECT_EQ(b.stats().expiry_wakeups, 0u);
}

TEST(cluster, renewals_never_span_slots_and_keep_every_lock) {
  auto& cluster = shared_cluster();
  static_cast<void>(cluster);
  asio::io_context io;
  auto cfg = cluster_config();
  cfg.watchdog_timeout = 900ms;  // a renewal round every 300 ms
  rlock::client redis(io.get_executor(), cfg);
  std::vector<rlock::reentrant_lock> locks;
  std::set<std::uint16_t> slots;
  run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    for (int i = 0; i < 40; ++i) {
      locks.push_back(redis.get_lock("renew-" + std::to_string(i)));
      co_await locks.back().lock();
      slots.insert(key_slot(locks.back().key()));
    }
    const auto before = redis.stats().renewal_calls;
    // Three rounds: each makes one call per slot spanned (40 names, about 40 slots).
    EXPECT_TRUE(co_await poll_until(
        [&] { return redis.stats().renewal_calls >= before + 3 * slots.size(); }, 10s));
    for (auto& l : locks) EXPECT_TRUE(co_await l.is_held());
    for (auto& l : locks) co_await l.unlock();
  });
  const auto m = redis.metrics();
  EXPECT_EQ(m.renewal_failures, 0u) << "a CROSSSLOT renewal fails";
  EXPECT_EQ(m.lost_locks, 0u);
}

TEST(cluster, a_deleted_key_is_told_at_push_speed_on_its_master) {
  auto& cluster = shared_cluster();
  asio::io_context io;
  auto cfg = cluster_config();
  cfg.watchdog_timeout = 30s;  // the next round is 10 s away: a lost() within 5 s was pushed
  cfg.track_holds = true;
  rlock::client redis(io.get_executor(), cfg);
  run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    for (const auto& name : one_name_per_master(cluster, cfg.key_prefix, "deposed-")) {
      auto lock = redis.get_lock(name);
      co_await lock.lock();
      bool lost = false;
      asio::steady_timer bell(io, std::chrono::steady_clock::time_point::max());
      lock.async_lost([&](boost::system::error_code ec) {
        lost = !ec;
        bell.cancel();
      });
      raw_client raw(cluster.owner_of(key_slot(lock.key())));
      EXPECT_EQ(raw.command_int({"DEL", lock.key()}), 1);
      co_await rlock::test::wait_until(
          bell, [&] { return lost; }, 5s);
      EXPECT_TRUE(lost) << name;
    }
    EXPECT_EQ(redis.stats().hold_checks, 3u);
    co_await redis.close();
  });
}

TEST(cluster, a_seed_that_is_not_a_cluster_node_fails_connect_clearly) {
  rlock::test::redis_server plain;
  asio::io_context io;
  rlock::config cfg;
  cfg.cluster.nodes = {"redis://127.0.0.1:" + std::to_string(plain.port())};
  rlock::client redis(io.get_executor(), cfg);
  run(io, [&]() -> asio::awaitable<void> {
    try {
      co_await redis.connect();
      ADD_FAILURE() << "connected to a standalone server in cluster mode";
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), rlock::errc::not_a_cluster);
      EXPECT_NE(std::string(e.what()).find("cluster support disabled"), std::string::npos)
          << e.what();
    }
  });
}

TEST(cluster, unreachable_seeds_fail_connect_and_the_next_seed_is_tried) {
  auto& cluster = shared_cluster();
  asio::io_context io;
  rlock::config cfg = cluster_config();
  // A closed port first: connect() goes on to the next seed.
  cfg.cluster.nodes.insert(cfg.cluster.nodes.begin(), "redis://127.0.0.1:1");
  rlock::client good(io.get_executor(), cfg);
  rlock::config dead;
  dead.cluster.nodes = {"redis://127.0.0.1:1"};
  dead.connect_timeout = 1s;
  rlock::client bad(io.get_executor(), dead);
  run(io, [&]() -> asio::awaitable<void> {
    co_await good.connect();
    auto l = good.get_lock("after-a-dead-seed");
    co_await l.lock();
    co_await l.unlock();
    EXPECT_EQ(co_await error_of(bad.connect()), rlock::errc::connect_failed);
  });
  static_cast<void>(cluster);
}

TEST(cluster, bad_seed_urls_and_mixed_modes_are_refused) {
  asio::io_context io;
  rlock::config cfg;
  cfg.cluster.nodes = {"http://127.0.0.1:7000"};
  EXPECT_EQ(rlock::test::thrown_by([&] { rlock::client c(io.get_executor(), cfg); }),
            rlock::errc::invalid_argument);
  cfg.cluster.nodes = {"redis://127.0.0.1:7000", "rediss://127.0.0.1:7001"};
  EXPECT_EQ(rlock::test::thrown_by([&] { rlock::client c(io.get_executor(), cfg); }),
            rlock::errc::invalid_argument);
  cfg.cluster.nodes = {"redis://127.0.0.1:7000"};
  cfg.sentinel.nodes = {{"127.0.0.1", 26379}};
  cfg.sentinel.master_name = "m";
  EXPECT_EQ(rlock::test::thrown_by([&] { rlock::client c(io.get_executor(), cfg); }),
            rlock::errc::invalid_argument);
}

TEST(cluster, uncovered_slots_fail_with_cluster_down_within_the_bound) {
  cluster_topology cluster(3, 0);
  asio::io_context io;
  auto cfg = cluster_config(cluster);
  cfg.command_timeout = 1s;
  rlock::client redis(io.get_executor(), cfg);
  auto lock = redis.get_lock("uncovered");
  const auto slot = key_slot(lock.key());
  const auto owner = cluster.owner_of(slot);
  run(io, [&]() -> asio::awaitable<void> { co_await redis.connect(); });
  {
    raw_client raw(owner);
    ASSERT_FALSE(raw.command({"CLUSTER", "DELSLOTS", std::to_string(slot)}).is_error());
  }
  run(io, [&]() -> asio::awaitable<void> {
    const auto started = std::chrono::steady_clock::now();
    try {
      co_await lock.lock();
      ADD_FAILURE() << "locked a key whose slot nobody serves";
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), rlock::errc::cluster_down) << e.what();
      EXPECT_NE(std::string(e.what()).find("CLUSTERDOWN"), std::string::npos) << e.what();
    }
    // Bounded by command_timeout (1 s), with room for scheduling.
    EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  });
}

TEST(cluster, after_a_master_is_killed_its_keys_are_locked_on_the_promoted_replica) {
  cluster_topology cluster;
  asio::io_context io;
  auto cfg = cluster_config(cluster);
  cfg.command_timeout = 1s;
  rlock::client redis(io.get_executor(), cfg);
  auto lock = redis.get_lock("survivor");
  const auto slot = key_slot(lock.key());
  const auto old_master = cluster.owner_of(slot);
  run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    co_await lock.lock(2s);
    co_await lock.unlock();
  });
  // Map refreshes are counted on every node that stays up: however many requests fail while
  // the master is dead, one refresh runs at a time, at most one per 100 ms.
  std::vector<std::uint16_t> alive;
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    if (cluster.node(i).port() != old_master) alive.push_back(cluster.node(i).port());
  }
  for (const auto port : alive) raw_client(port).command({"CONFIG", "RESETSTAT"});
  const auto killed_at = std::chrono::steady_clock::now();
  cluster.node_on(old_master).kill_hard();
  run(
      io,
      [&]() -> asio::awaitable<void> {
        // 50 more contenders on the dead master's slot (its name as their hash tag) keep
        // failing and retrying meanwhile: a storm of link losses, none of refreshes.
        const std::string tag = "{" + std::string(lock.key()) + "}";
        int running = 50;
        for (int i = 0; i < 50; ++i) {
          asio::co_spawn(
              io,
              [&, i]() -> asio::awaitable<void> {
                auto other = redis.get_lock(tag + std::to_string(i));
                for (int round = 0; round < 1000; ++round) {
                  bool got = false;
                  try {
                    got = co_await other.try_lock(100ms, 1s);
                  } catch (const boost::system::system_error&) {
                    // timeout, connection_lost, cluster_down while the master is dead: again
                  }
                  if (got) {
                    co_await other.unlock();
                    break;
                  }
                }
                --running;
              },
              asio::detached);
        }
        // lock() waits through the failover: its requests follow the slot to the new master.
        co_await lock.lock(2s);
        EXPECT_TRUE(co_await lock.is_held());
        co_await lock.unlock();
        co_await poll_until([&] { return running == 0; }, 30s);
      },
      60s);
  const auto window = std::chrono::steady_clock::now() - killed_at;
  std::int64_t refreshes = 0;
  for (const auto port : alive) {
    refreshes += raw_client(port).calls_of("cluster|shards");
  }
  const auto limit =
      std::chrono::duration_cast<std::chrono::milliseconds>(window).count() / 100 + 2;
  std::printf(
      "map refreshes during the failover: %lld in %lld ms (limit %lld)\n",
      static_cast<long long>(refreshes),
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(window).count()),
      static_cast<long long>(limit));
  EXPECT_GE(refreshes, 1);  // the map was read again: that is how the replica was found
  EXPECT_LE(refreshes, limit);
  const auto new_master = cluster.wait_failover(slot, old_master);
  EXPECT_NE(new_master, old_master);
}

TEST(cluster, over_tls_with_a_least_privilege_user_locks_and_wakes_on_every_shard) {
  // Every node with a TLS port beside its plaintext one and a TLS bus (tls-cluster: without it
  // Redis 7.0 does not announce TLS ports); the clients know only the TLS ports (rediss://
  // seeds) and learn the masters' TLS ports from CLUSTER SHARDS. Their user has the docs'
  // least-privilege line plus what Cluster mode sends.
  auto node_options = cluster_topology::cluster_options();
  node_options.with_tls(rlock::test::tls_files::shared());
  node_options.tls_cluster = true;
  cluster_topology cluster(3, 0, node_options);
  const std::string prefix = "svc:" + rlock::test::unique_prefix() + ":";
  const std::string rules =
      rlock::test::least_privilege_rules(prefix) + std::string(rlock::test::cluster_rules);
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    raw_client admin(cluster.node(i).port());
    rlock::test::set_user(admin, "svc", rules);
    if (::testing::Test::HasFatalFailure()) return;
  }
  rlock::config cfg;
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    cfg.cluster.nodes.push_back("rediss://svc:pw@127.0.0.1:" +
                                std::to_string(cluster.node(i).tls_port()));
  }
  cfg.tls.ca_file = rlock::test::tls_files::shared().path("ca.crt");
  cfg.key_prefix = prefix;
  asio::io_context io;
  rlock::client holder(io.get_executor(), cfg);
  rlock::client waiter(io.get_executor(), cfg);
  run(io, [&]() -> asio::awaitable<void> {
    co_await holder.connect();
    co_await waiter.connect();
    // Names until every master owns one, each contended once: the waiter is woken by the
    // holder's SPUBLISH on that shard, over TLS.
    std::set<std::uint16_t> shards;
    for (int i = 0; i < 64 && shards.size() < 3; ++i) {
      const std::string name = "tls-" + std::to_string(i);
      const auto owner = cluster.owner_of(key_slot(prefix + name));
      if (!shards.insert(owner).second) continue;
      auto held = holder.get_lock(name);
      co_await held.lock(30s);
      const auto attempts = waiter.stats().acquire_attempts;
      bool woken = false;
      asio::co_spawn(
          io,
          [&]() -> asio::awaitable<void> {
            auto l = waiter.get_lock(name);
            woken = co_await l.try_lock(20s, 30s);
            co_await l.unlock();
          },
          asio::detached);
      // Asleep on its channel (its first attempt and the retry once subscribed were refused)
      // before the unlock, so it can only get the lock from the unlock message.
      auto probe = waiter.get_lock(name);
      EXPECT_TRUE(co_await until_asleep(waiter, probe, attempts + 2)) << name;
      co_await held.unlock();
      EXPECT_TRUE(co_await poll_until([&] { return woken; }, 10s)) << name;
    }
    EXPECT_EQ(shards.size(), 3u);
    EXPECT_EQ(waiter.stats().expiry_wakeups, 0u);
    EXPECT_GE(waiter.stats().notified_wakeups, 3u);
    // Outside the user's key patterns: refused with Redis's words, not hidden.
    rlock::config other = cfg;
    other.key_prefix = "other:";
    rlock::client outsider(io.get_executor(), other);
    co_await outsider.connect();
    EXPECT_EQ(co_await error_of(outsider.get_lock("x").try_lock()), rlock::errc::key_not_permitted);
    co_await outsider.close();
    co_await holder.close();
    co_await waiter.close();
  });
}

/// A node that says it serves every slot and then answers every lock command with a MOVED to
/// itself: the router must give up after its redirect limit, not chase it forever.
TEST(cluster, a_node_that_answers_moved_in_a_loop_fails_the_request_within_its_bound) {
  using rlock::test::fake_server;
  std::atomic<int> redirects{0};
  fake_server node([&](fake_server::socket& s, fake_server& self) {
    rlock::detail::resp3::parser parser;
    const std::string port = std::to_string(self.port());
    for (int i = 0; i < 10'000; ++i) {
      const auto bytes = fake_server::read_some(s);
      if (bytes.empty()) return;
      parser.feed(bytes);
      std::error_code ec;
      std::string out;
      while (auto v = parser.next(ec)) {
        const std::string cmd = v->elements.empty() ? "" : v->elements[0].str;
        if (cmd == "HELLO") {
          out += "%2\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$2\r\nid\r\n:7\r\n";
        } else if (cmd == "SCRIPT") {
          out += "$40\r\n" + std::string(40, 'a') + "\r\n";
        } else if (cmd == "CLUSTER") {
          out +=
              "*1\r\n%2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n"
              "%4\r\n$2\r\nid\r\n$4\r\nfake\r\n$4\r\nport\r\n:" +
              port + "\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n";
        } else if (cmd == "PING" || cmd == "CLIENT") {
          out += cmd == "PING" ? "+PONG\r\n" : "+OK\r\n";  // CLIENT TRACKING: handshake
        } else {
          ++redirects;
          out += "-MOVED 42 127.0.0.1:" + port + "\r\n";
        }
      }
      if (ec) return;
      fake_server::write(s, out);
    }
  });
  asio::io_context io;
  rlock::config cfg;
  cfg.cluster.nodes = {"redis://127.0.0.1:" + std::to_string(node.port())};
  cfg.command_timeout = 2s;
  rlock::client redis(io.get_executor(), cfg);
  run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto l = redis.get_lock("chased");
    try {
      co_await l.lock();
      ADD_FAILURE() << "locked on a node that only redirects";
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), rlock::errc::too_many_redirects) << e.what();
      EXPECT_NE(std::string(e.what()).find("MOVED 42"), std::string::npos) << e.what();
    }
  });
  // The first send and five redirects followed: six refusals, then the error.
  EXPECT_EQ(redirects.load(), 6);
}

TEST(cluster, a_resharded_lock_keeps_its_holder_and_renewals_and_wakes_its_waiter) {
  auto& cluster = shared_cluster();
  asio::io_context io;
  auto cfg = cluster_config();
  cfg.watchdog_timeout = 9s;  // renewals every 3 s; a waiter's fallback nap is the lock's PTTL
  rlock::client holder(io.get_executor(), cfg);
  rlock::client waiter(io.get_executor(), cfg);
  auto mine = holder.get_lock("resharded");
  auto theirs = waiter.get_lock("resharded");
  const auto slot = key_slot(mine.key());
  const auto from = cluster.owner_of(slot);
  std::uint16_t to = 0;
  for (const auto p : cluster.master_ports()) {
    if (p != from) to = p;
  }
  bool acquired = false;
  bool released = false;
  run(
      io,
      [&]() -> asio::awaitable<void> {
        co_await holder.connect();
        co_await waiter.connect();
        co_await mine.lock();
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
              acquired = co_await theirs.try_lock(30s, 5s);
              co_await theirs.unlock();
              released = true;
            },
            asio::detached);
        EXPECT_TRUE(co_await rlock::test::until_asleep(waiter, theirs, 2));
        // Move the slot, with the lock's hash, to another master.
        cluster.begin_migration(slot, from, to);
        EXPECT_GE(cluster.move_keys(slot, from, to), 1u);
        cluster.end_migration(slot, from, to);
        EXPECT_EQ(cluster.owner_of(slot, to), to);
        // The holder's renewals follow the slot: a round after the move renews it there.
        const auto calls = holder.stats().renewal_calls;
        EXPECT_TRUE(co_await poll_until([&] { return holder.stats().renewal_calls > calls; }, 10s));
        EXPECT_TRUE(
            co_await poll_until([&] { return holder.metrics().renewal_failures == 0; }, 1s));
        EXPECT_TRUE(co_await mine.is_held());
        {
          raw_client raw(to);
          EXPECT_EQ(raw.command({"HGET", mine.key(), mine.owner_field()}).str, "1");
          EXPECT_GT(raw.command_int({"PTTL", mine.key()}), 0);
        }
        co_await mine.unlock();
        EXPECT_TRUE(co_await poll_until([&] { return acquired; }, 15s));
        // Its unlock too, before the key is checked below (run() ends with this coroutine).
        EXPECT_TRUE(co_await poll_until([&] { return released; }, 15s));
      },
      60s);
  EXPECT_TRUE(acquired);
  EXPECT_EQ(holder.stats().lost_locks, 0u);
  EXPECT_EQ(waiter.stats().expiry_wakeups, 0u) << "the waiter sat out the TTL";
  raw_client raw(to);
  EXPECT_EQ(raw.command_int({"EXISTS", mine.key()}), 0);
}

}  // namespace cluster_test
