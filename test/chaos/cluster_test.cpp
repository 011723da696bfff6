// A master SIGKILLed under contention on a real Redis Cluster (3 masters + 3 replicas): its
// replica is promoted, the clients follow the slot map, and the history is checked like every
// chaos scenario: no two owners believed they held a lock at once unless the failover lost the
// writes that said otherwise (asynchronous replication: reported as data loss, not hidden).
#include "chaos/checker.hpp"
#include "chaos/failover_parts.hpp"
#include "chaos/history.hpp"
#include "chaos/scenario.hpp"
#include "chaos/workload.hpp"
#include "session/key_slot.hpp"
#include "support/cluster_topology.hpp"
#include "support/raw_client.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <future>
#include <thread>
#include <vector>

namespace {

using namespace rlock::chaos;
using namespace std::chrono_literals;
using rlock::test::cluster_topology;
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

}  // namespace
