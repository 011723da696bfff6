// Faults of a real Redis Cluster (3 masters + 3 replicas) under contending clients: a master
// SIGKILLed (its replica promoted), a master cut from its clients while the cluster still sees
// it, and a master cut from the cluster bus while its clients still reach it. Each history is
// checked like every chaos scenario: no two owners believed they held a lock at once unless a
// failover lost the writes that said otherwise (asynchronous replication: reported as data
// loss, not hidden).
#include "chaos/checker.hpp"
#include "chaos/failover_parts.hpp"
#include "chaos/fault_proxy.hpp"
#include "chaos/history.hpp"
#include "chaos/scenario.hpp"
#include "chaos/workload.hpp"
#include "session/cluster/key_slot.hpp"
#include "support/cluster_topology.hpp"
#include "support/raw_client.hpp"
#include "support/settle.hpp"

#include <fmt/format.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace cluster_chaos_test {

using namespace rlock::chaos;
using namespace std::chrono_literals;
using rlock::test::cluster_topology;
using rlock::test::fault_proxy;
using rlock::test::raw_client;

cluster_topology& topology() {
  static cluster_topology t;
  return t;
}

rlock::config cluster_chaos_config(const std::string& prefix, const std::string& name) {
  auto cfg = chaos_config(0, prefix, name);
  cfg.cluster.nodes = topology().seeds();
  return cfg;
}

TEST(cluster_chaos, sigkill_of_a_master_under_contention_keeps_exclusion) {
  auto& t = topology();
  const std::string prefix = rlock::test::unique_prefix();
  const std::string held_key = prefix + "held";
  const auto slot = rlock::detail::key_slot(held_key);
  const auto old_master = t.owner_of(slot);
  recorder rec;
  std::vector<std::future<history>> running;
  for (int p = 1; p <= 3; ++p) {
    workload_options o;
    o.process = "p" + std::to_string(p);
    o.cfg = cluster_chaos_config(prefix, "chaos-" + o.process);
    // Spread over the shards; "held" shares the killed master with whichever land there.
    o.names = {"alpha", "beta", "gamma", "delta", "held"};
    o.coroutines = 3;
    o.threads = 1;
    o.duration = 8s;
    o.seed = static_cast<std::uint64_t>(p);
    running.push_back(std::async(std::launch::async, [o, &rec] { return run_workload(o, rec); }));
  }
  held_lock held([&](const std::string& name) { return cluster_chaos_config(prefix, name); }, rec);
  ASSERT_TRUE(wait_until([&] { return held.holding(); }, 10s));
  std::this_thread::sleep_for(1s);  // contention under way on every master

  // The canary shares the held lock's slot, so it dies with the same master.
  const std::string canary_key = "rlock-canary:{" + held_key + "}";
  canary writes(old_master, canary_key);
  std::this_thread::sleep_for(50ms);
  const nanos killed = now_ns();
  t.node_on(old_master).kill_hard();
  const auto new_master = t.wait_failover(slot, old_master);
  const auto acked = writes.stop();
  raw_client fresh(new_master);
  const auto kept = fresh.command({"GET", canary_key});
  const std::int64_t survived_count = kept.is_null() ? 0 : std::stoll(kept.str);
  fresh.command({"DEL", canary_key});
  std::printf(
      "cluster failover (SIGKILL of %u, replica %u promoted): canary acknowledged %lld, "
      "new master has %lld\n",
      old_master, new_master, static_cast<long long>(acked),
      static_cast<long long>(survived_count));
  rec.failed_over(survived_count >= acked, killed, killed);

  held.finish();
  const auto v = finish_workloads(running, rec, t.master_ports(), prefix);
  // The killed node comes back as a replica of the one that replaced it (its nodes.conf).
  t.node_on(old_master).restart();
  t.wait_ok();

  EXPECT_TRUE(v.violations.empty()) << v.report();
  EXPECT_TRUE(v.stuck.empty()) << v.report();
  EXPECT_TRUE(v.overruns.empty()) << v.report();
  EXPECT_TRUE(v.leftovers.empty()) << v.report();
}

/// When `owner`'s first acquisition of `lock` after `after` was seen; 0 if none.
nanos first_acquired(const recorder& rec, std::string_view owner, nanos after,
                     std::string_view lock = "held") {
  nanos first = 0;
  for (const auto& a : rec.snapshot().acquisitions) {
    if (a.lock == lock && a.owner == owner && a.acquired > after &&
        (first == 0 || a.acquired < first)) {
      first = a.acquired;
    }
  }
  return first;
}

/// When `owner`'s belief in `lock` ended by lost(); 0 if it never did.
nanos told_lost(const recorder& rec, std::string_view owner, std::string_view lock = "held") {
  for (const auto& a : rec.snapshot().acquisitions) {
    if (a.lock == lock && a.owner == owner && a.end == end_kind::lost) return a.ended;
  }
  return 0;
}

double ms_between(nanos from, nanos to) { return static_cast<double>(to - from) / 1e6; }

TEST(cluster_chaos, a_master_cut_from_its_clients_tells_the_holder_before_its_lease_ends) {
  // The master announces a proxy's port to clients, so the holder reaches it through the proxy;
  // the contender is a client of that one node, connected directly. Black-holing the proxy cuts
  // the holder alone from the master, which the cluster bus still sees: no failover happens,
  // and the holder's lease ends on the master (watchdog 1 s). The holder must be told lost()
  // before then, and the contender gets the lock only after.
  auto& t = topology();
  const std::string prefix = rlock::test::unique_prefix();
  const auto slot = rlock::detail::key_slot(prefix + "held");
  const auto master = t.owner_of(slot);
  fault_proxy clients_path(master);
  t.announce(master, clients_path.port(), 0);
  recorder rec;
  held_lock held(
      [&](const std::string& name) {
        return name == "holder" ? cluster_chaos_config(prefix, name)
                                : chaos_config(master, prefix, name);
      },
      rec);
  ASSERT_TRUE(wait_until([&] { return held.holding(); }, 10s));
  std::this_thread::sleep_for(500ms);  // renewals under way, the contender refused

  const nanos cut = now_ns();
  clients_path.black_hole();
  const bool told = wait_until([&] { return held.lost(); }, 5s);
  const bool taken = wait_until([&] { return first_acquired(rec, "contender", cut) != 0; }, 10s);
  const nanos lost_at = told_lost(rec, "holder");
  const nanos taken_at = first_acquired(rec, "contender", cut);
  std::printf(
      "client-side cut of master %u (cluster bus intact): holder told lost() %.0f ms after the "
      "cut, contender acquired %.0f ms after it (lease 1000 ms)\n",
      master, ms_between(cut, lost_at), ms_between(cut, taken_at));
  clients_path.heal();
  t.announce(master, 0, 0);
  held.finish();
  std::vector<std::future<history>> none;
  const auto v = finish_workloads(none, rec, t.master_ports(), prefix);

  EXPECT_TRUE(told) << "the holder was never told lost()";
  EXPECT_TRUE(taken) << "the contender never got the lock after the lease ended";
  EXPECT_LT(lost_at, taken_at) << "the holder still believed when the contender got the lock";
  EXPECT_TRUE(v.violations.empty()) << v.report();
  EXPECT_TRUE(v.data_loss.empty()) << v.report();
  EXPECT_TRUE(v.stuck.empty()) << v.report();
  EXPECT_TRUE(v.leftovers.empty()) << v.report();
}

TEST(cluster_chaos, a_master_cut_from_the_majority_keeps_acknowledging_until_it_steps_down) {
  // A symmetric partition of one master from the rest of the cluster while every client still
  // reaches it. Every node's bus port is behind a proxy it announces; the master's outgoing
  // connections come from 127.0.0.2 and its replica's from 127.0.0.3 (`bind-source-addr`), so
  // the proxies can cut exactly: the master's bus links both ways, and its replica's
  // replication link (through a proxy the master announces for clients, which the lock
  // clients cross unharmed). The majority fails the master over to its replica after
  // cluster-node-timeout (2 s); until it notices it is in the minority the master keeps
  // acknowledging writes the replica never gets.
  //
  // Two holders on that master: one plain, one with sync_replicas = 1 (each renewal followed by
  // WAIT 1); their contenders plain. The plain one's acknowledged renewals are lost with the
  // partition: any overlap it causes must be explained by the data loss the canary shows. The
  // synced one's renewals go unacknowledged from the cut, so it must be told lost() before anyone
  // else gets its lock.
  auto& t = topology();
  const std::string prefix = rlock::test::unique_prefix();
  const std::string plain = "{held}";  // one slot for both locks, whatever the prefix
  const std::string synced = "{held}:synced";
  const auto slot = rlock::detail::key_slot(prefix + plain);
  ASSERT_EQ(slot, rlock::detail::key_slot(prefix + synced));
  const auto old_master = t.owner_of(slot);
  const auto replica = t.replica_of(old_master);

  t.config_set(old_master, "cluster-announce-ip", "127.0.0.1");
  t.config_set(old_master, "bind-source-addr", "127.0.0.2");
  t.config_set(replica, "cluster-announce-ip", "127.0.0.1");
  t.config_set(replica, "bind-source-addr", "127.0.0.3");
  std::vector<std::unique_ptr<fault_proxy>> bus;
  fault_proxy master_clients(old_master);
  for (std::size_t i = 0; i < t.size(); ++i) {
    auto& n = t.node(i);
    bus.push_back(std::make_unique<fault_proxy>(n.bus_port()));
    t.announce(n.port(), n.port() == old_master ? master_clients.port() : 0, bus.back()->port());
  }
  // The replica keeps its replication connection until told its master again (its port moved).
  {
    const auto r = raw_client(replica).command({"CLUSTER", "REPLICATE", t.node_id(old_master)});
    ASSERT_FALSE(r.is_error()) << r.str;
  }
  // Every node's bus links now cross the proxies, and the replica follows its master's new port.
  rlock::test::settle("partition", "the links did not move behind the proxies", 30s, [&] {
    for (std::size_t i = 0; i < bus.size(); ++i) {
      if (bus[i]->open_connections() + 1 < t.size()) {
        return "node " + std::to_string(t.node(i).port()) + " has " +
               std::to_string(bus[i]->open_connections()) + " bus links through its proxy";
      }
    }
    const auto info = raw_client(replica).command({"INFO", "replication"}).str;
    if (info.find("master_port:" + std::to_string(master_clients.port())) == std::string::npos ||
        info.find("master_link_status:up") == std::string::npos) {
      return "the replica does not replicate through the proxy yet: " + info;
    }
    return std::string();
  });

  recorder rec;
  auto config_of = [&](int replicas) {
    return [&, replicas](const std::string& name) {
      auto cfg = cluster_chaos_config(prefix, name);
      // The contender never waits for replicas: it takes the lock the moment the new master's
      // copy allows, so the synced holder's belief is tested against that.
      cfg.sync_replicas.replicas = name == "holder" ? replicas : 0;
      cfg.sync_replicas.timeout = 200ms;  // below command_timeout (300 ms) and the renewal period
      return cfg;
    };
  };
  held_lock plain_hold(config_of(0), rec, plain);
  held_lock synced_hold(config_of(1), rec, synced);
  ASSERT_TRUE(wait_until([&] { return plain_hold.holding() && synced_hold.holding(); }, 10s));
  std::this_thread::sleep_for(500ms);

  const std::string canary_key = "rlock-canary:{held}";
  canary writes(old_master, canary_key);
  std::this_thread::sleep_for(50ms);
  const nanos cut = now_ns();
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t.node(i).port() == old_master) {
      bus[i]->black_hole();  // the majority's links to it
    } else {
      bus[i]->isolate("127.0.0.2");  // its links to the majority
    }
  }
  master_clients.isolate("127.0.0.3");  // replication
  nanos replaced = 0;
  rlock::test::settle("partition", "the replica was not promoted", 30s, [&] {
    if (t.owner_of(slot, replica) != replica) return std::string("not yet");
    replaced = now_ns();
    return std::string();
  });
  // The clients meet the new master; the old one is still cut off.
  std::this_thread::sleep_for(2s);
  const auto acked = writes.stop();
  raw_client fresh(replica);
  const auto kept = fresh.command({"GET", canary_key});
  const std::int64_t survived_count = kept.is_null() ? 0 : std::stoll(kept.str);
  fresh.command({"DEL", canary_key});
  rec.failed_over(survived_count >= acked, cut, replaced);

  for (auto& b : bus) b->heal();
  master_clients.heal();
  plain_hold.finish();
  synced_hold.finish();
  std::vector<std::future<history>> none;
  const auto v = finish_workloads(none, rec, t.master_ports(), prefix);

  const auto fate = [&](const std::string& lock) {
    const nanos lost_at = told_lost(rec, "holder", lock);
    const nanos taken_at = first_acquired(rec, "contender", cut, lock);
    return fmt::format("{}: holder {}, contender {}", lock,
                       lost_at ? fmt::format("told lost() at +{:.0f} ms", ms_between(cut, lost_at))
                               : std::string("kept it"),
                       taken_at ? fmt::format("acquired at +{:.0f} ms", ms_between(cut, taken_at))
                                : std::string("never acquired it"));
  };
  std::printf(
      "partition of master %u from the majority: replica %u serves the slot at +%.0f ms; canary "
      "acknowledged %lld, new master has %lld\n  %s\n  %s\n",
      old_master, replica, ms_between(cut, replaced), static_cast<long long>(acked),
      static_cast<long long>(survived_count), fate(plain).c_str(), fate(synced).c_str());

  EXPECT_TRUE(v.violations.empty()) << v.report();
  EXPECT_FALSE(v.data_loss.empty()) << "the minority master's acknowledged writes: " << v.report();
  EXPECT_TRUE(v.stuck.empty()) << v.report();
  EXPECT_TRUE(v.overruns.empty()) << v.report();
  EXPECT_TRUE(v.leftovers.empty()) << v.report();
  // The synced holder's belief never outlived what the replica knew.
  const nanos synced_taken = first_acquired(rec, "contender", cut, synced);
  if (synced_taken != 0) {
    const nanos synced_lost = told_lost(rec, "holder", synced);
    EXPECT_NE(synced_lost, 0);
    EXPECT_LT(synced_lost, synced_taken);
  }
}

}  // namespace cluster_chaos_test
