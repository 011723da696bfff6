// rlockctl driven as an operator drives it: separate processes against this suite's server,
// judged by their output and exit codes (docs/operations/rlockctl.md).
#include "session/cluster/key_slot.hpp"
#include "support/child_process.hpp"
#include "support/cluster_topology.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/sentinel_topology.hpp"
#include "support/tls_files.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <memory>
#include <poll.h>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace rlockctl_test {

using namespace std::chrono_literals;
using rlock::test::child_process;
using rlock::test::run_process;

std::string url() {
  return "redis://127.0.0.1:" + std::to_string(rlock::test::shared_server().port());
}

std::vector<std::string> cmd(std::initializer_list<std::string> args) {
  std::vector<std::string> v{RLOCKCTL, "--url", url()};
  v.insert(v.end(), args);
  return v;
}

std::vector<boost::json::object> json_lines(const std::string& text) {
  std::vector<boost::json::object> objects;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) objects.push_back(boost::json::parse(line).as_object());
  }
  return objects;
}

std::string str(const boost::json::object& o, const char* key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

rlock::test::raw_client& redis() {
  static rlock::test::raw_client c(rlock::test::shared_server().port());
  return c;
}

// A lock as Redisson (or rlock) leaves it: a hash of owner field → hold count, with a TTL.
void plant_lock(const std::string& key, const std::string& owner, int count) {
  redis().command({"HSET", key, owner, std::to_string(count)});
  redis().command({"PEXPIRE", key, "60000"});
}

constexpr auto bound = 20s;

TEST(rlockctl, help_has_examples_and_exit_codes) {
  const auto r = run_process({RLOCKCTL, "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Examples:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rlockctl hold orders:42"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos) << r.out;
  for (const char* sub : {"status", "list", "hold", "unlock", "watch", "bench"}) {
    EXPECT_NE(r.out.find(sub), std::string::npos) << sub;
  }
}

TEST(rlockctl, usage_and_connection_errors_exit_2) {
  EXPECT_EQ(run_process({RLOCKCTL}).code, 2);
  EXPECT_EQ(run_process(cmd({"hold"})).code, 2);                       // NAME missing
  EXPECT_EQ(run_process(cmd({"hold", "x", "--lease", "0"})).code, 2);  // out of range
  EXPECT_EQ(run_process(cmd({"hold", "x", "--lease", "5", "--watchdog"})).code, 2);
  // With --json a usage error is a JSON line on stderr too, wherever the flag stands.
  for (const auto& args : {cmd({"--json", "hold"}), cmd({"hold", "x", "--lease", "0", "--json"})}) {
    const auto usage = run_process(args);
    EXPECT_EQ(usage.code, 2);
    EXPECT_EQ(usage.err.rfind("{\"error\":\"usage\",\"message\":", 0), 0u) << usage.err;
  }
  const auto bad_url = run_process({RLOCKCTL, "--url", "http://nope", "status", "x"});
  EXPECT_EQ(bad_url.code, 2);
  EXPECT_FALSE(bad_url.err.empty());
  // Port 1 on loopback: nothing listens there.
  const auto down = run_process({RLOCKCTL, "--url", "redis://127.0.0.1:1", "status", "x"});
  EXPECT_EQ(down.code, 2);
  EXPECT_NE(down.err.find("cannot connect"), std::string::npos) << down.err;
}

TEST(rlockctl, talks_tls_with_a_private_ca) {
  rlock::test::redis_server::options opts;
  const auto& files = rlock::test::tls_files::shared();
  opts.with_tls(files);
  rlock::test::redis_server tls_server(opts);
  const std::string url = "rediss://127.0.0.1:" + std::to_string(tls_server.tls_port());
  const auto ok =
      run_process({RLOCKCTL, "--url", url, "--tls-ca", files.path("ca.crt"), "status", "t:free"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("t:free: free"), std::string::npos) << ok.out;
  // The system's trust store does not know the test CA: refused, and said why.
  const auto untrusted = run_process({RLOCKCTL, "--url", url, "status", "t:free"});
  EXPECT_EQ(untrusted.code, 2);
  EXPECT_NE(untrusted.err.find("certificate"), std::string::npos) << untrusted.err;
  // TLS options without rediss:// are a usage error.
  EXPECT_EQ(run_process(cmd({"--tls-ca", files.path("ca.crt"), "status", "x"})).code, 2);
}

TEST(rlockctl, finds_the_master_through_sentinel) {
  rlock::test::sentinel_topology topology;
  const auto master = topology.master_port();
  rlock::test::raw_client raw(master);
  raw.command({"HSET", "sn:held", "0b4f8d2e-1111-4222-8333-944455556666:3", "1"});
  const auto sentinel = "127.0.0.1:" + std::to_string(topology.sentinels().front().port);
  const auto r = run_process({RLOCKCTL, "--sentinel", sentinel, "--master-name",
                              topology.master_name(), "status", "sn:held"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("sn:held: held by 0b4f8d2e-1111-4222-8333-944455556666:3"),
            std::string::npos)
      << r.out;
  // Each without the other, or a sentinel without a port, is a usage error.
  EXPECT_EQ(run_process({RLOCKCTL, "--sentinel", sentinel, "status", "x"}).code, 2);
  EXPECT_EQ(
      run_process({RLOCKCTL, "--sentinel", "127.0.0.1", "--master-name", "m", "status", "x"}).code,
      2);
}

TEST(rlockctl, finds_locks_on_the_cluster_node_that_owns_them_and_lists_every_master) {
  rlock::test::cluster_topology cluster(3, 0);
  // Locks on every master (Redisson's layout, planted on each key's owner), a fenced one.
  const std::string owner = "0b4f8d2e-1111-4222-8333-944455556666:5";
  std::set<std::uint16_t> masters;
  std::vector<std::string> names;
  for (int i = 0; i < 200 && names.size() < 6; ++i) {
    const std::string name = "cl:" + std::to_string(i);
    const auto port = cluster.owner_of(rlock::detail::key_slot(name));
    if (masters.count(port) != 0 && names.size() >= 3) continue;
    masters.insert(port);
    rlock::test::raw_client raw(port);
    raw.command({"HSET", name, owner, "1"});
    raw.command({"PEXPIRE", name, "60000"});
    names.push_back(name);
  }
  ASSERT_EQ(masters.size(), 3u);
  // One seed is enough: the tool learns the slot map from it.
  const auto seed = "127.0.0.1:" + std::to_string(cluster.node(1).port());
  const auto status =
      run_process({RLOCKCTL, "--cluster", seed, "status", names[0], names[1], names[2], "cl:free"});
  ASSERT_EQ(status.code, 0) << status.err;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(status.out.find(names[i] + ": held by " + owner), std::string::npos) << status.out;
  }
  EXPECT_NE(status.out.find("cl:free: free"), std::string::npos) << status.out;
  const auto list = run_process({RLOCKCTL, "--cluster", seed, "list", "cl:*"});
  ASSERT_EQ(list.code, 0) << list.err;
  for (const auto& name : names) {
    EXPECT_NE(list.out.find(name + ": held by"), std::string::npos) << list.out;
  }
  EXPECT_NE(list.out.find(std::to_string(names.size()) + " lock(s) held"), std::string::npos)
      << list.out;
  // hold and unlock go through the client API, routed like any client's.
  const auto hold =
      run_process({RLOCKCTL, "--cluster", seed, "hold", "cl:held-by-tool", "--for", "0.1"});
  EXPECT_EQ(hold.code, 0) << hold.err;
  const auto unlock = run_process({RLOCKCTL, "--cluster", seed, "unlock", names[0], "--force"});
  EXPECT_EQ(unlock.code, 0) << unlock.err;
  rlock::test::raw_client raw(cluster.owner_of(rlock::detail::key_slot(names[0])));
  EXPECT_EQ(raw.command_int({"EXISTS", names[0]}), 0);
  // A seed without a port, or with --sentinel: usage errors; watch says it cannot yet.
  EXPECT_EQ(run_process({RLOCKCTL, "--cluster", "127.0.0.1", "status", "x"}).code, 2);
  const auto watch = run_process({RLOCKCTL, "--cluster", seed, "watch", "x"});
  EXPECT_EQ(watch.code, 2);
  EXPECT_NE(watch.err.find("--cluster"), std::string::npos) << watch.err;
}

TEST(rlockctl, status_tells_free_held_fenced_and_not_a_lock) {
  plant_lock("st:held", "0b4f8d2e-1111-4222-8333-944455556666:7", 2);
  plant_lock("st:fenced", "0b4f8d2e-1111-4222-8333-944455556666:9", 1);
  redis().command({"SET", "redisson_lock_token:{st:fenced}", "41"});
  redis().command({"SET", "st:string", "x"});
  redis().command({"HSET", "st:hash", "colour", "blue"});

  const auto r =
      run_process(cmd({"status", "st:free", "st:held", "st:fenced", "st:string", "st:hash"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("st:free: free"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("st:held: held by 0b4f8d2e-1111-4222-8333-944455556666:7 (count 2)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("fenced (last token 41)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("st:string: not a lock (the key is a string)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("st:hash: not a lock"), std::string::npos) << r.out;

  const auto j = run_process(cmd({"--json", "status", "st:held", "st:fenced", "st:free"}));
  ASSERT_EQ(j.code, 0) << j.err;
  const auto objects = json_lines(j.out);
  ASSERT_EQ(objects.size(), 3U) << j.out;
  EXPECT_EQ(str(objects[0], "state"), "held");
  EXPECT_EQ(str(objects[0], "kind"), "reentrant");
  const auto& holders = objects[0].at("holders").as_array();
  ASSERT_EQ(holders.size(), 1U);
  EXPECT_EQ(holders[0].at("count").to_number<std::int64_t>(), 2);
  EXPECT_GT(objects[0].at("ttl_ms").to_number<std::int64_t>(), 0);
  EXPECT_LE(objects[0].at("ttl_ms").to_number<std::int64_t>(), 60000);
  EXPECT_EQ(objects[0].at("subscribers").to_number<std::int64_t>(), 0);
  EXPECT_EQ(str(objects[1], "kind"), "fenced");
  EXPECT_EQ(objects[1].at("token").to_number<std::int64_t>(), 41);
  EXPECT_EQ(str(objects[2], "state"), "free");
}

TEST(rlockctl, status_over_a_quorum_shows_each_node_and_whether_a_majority_holds) {
  rlock::test::redis_server one;
  rlock::test::redis_server two;
  rlock::test::redis_server three;
  std::vector<std::unique_ptr<rlock::test::raw_client>> raw;
  for (const auto* s : {&one, &two, &three}) {
    raw.push_back(std::make_unique<rlock::test::raw_client>(s->port()));
  }
  // A quorum lock's owner 7 on two nodes (each node's client has its own uuid), another owner on
  // the third.
  raw[0]->command({"HSET", "q:held", "0b4f8d2e-1111-4222-8333-944455556666:7", "1"});
  raw[1]->command({"HSET", "q:held", "5d2e9a10-2222-4333-8444-a55566667777:7", "1"});
  raw[2]->command({"HSET", "q:held", "77aa0c31-3333-4444-8555-b66677778888:3", "1"});
  raw[0]->command({"HSET", "q:split", "0b4f8d2e-1111-4222-8333-944455556666:7", "1"});
  auto quorum = [&](std::initializer_list<std::string> args) {
    std::vector<std::string> v{RLOCKCTL};
    v.insert(v.end(), args);
    v.insert(v.end(), {"status", "--quorum", "redis://127.0.0.1:" + std::to_string(one.port()),
                       "--quorum", "redis://127.0.0.1:" + std::to_string(two.port()), "--quorum",
                       "redis://127.0.0.1:" + std::to_string(three.port())});
    return v;
  };
  auto held = quorum({});
  held.insert(held.end(), {"q:held", "q:split"});
  const auto r = run_process(held);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("q:held @ redis://127.0.0.1:" + std::to_string(one.port()) +
                       ": held by 0b4f8d2e-1111-4222-8333-944455556666:7 (count 1)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("q:held: a quorum holds it: owner id 7 on 2 of 3 nodes (majority 2)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("q:split: no quorum holds it: held on 1 of 3 nodes"), std::string::npos)
      << r.out;
  // A node down is named; the others still count.
  three.kill_hard();
  auto json = quorum({"--json"});
  json.emplace_back("q:held");
  const auto j = run_process(json);
  ASSERT_EQ(j.code, 0) << j.err;
  const auto objects = json_lines(j.out);
  ASSERT_EQ(objects.size(), 4U) << j.out;
  EXPECT_EQ(str(objects[2], "state"), "unreachable");
  const auto& q = objects[3].at("quorum").as_object();
  EXPECT_TRUE(q.at("quorum_holds").as_bool());
  EXPECT_EQ(q.at("held_on").to_number<std::int64_t>(), 2);
  EXPECT_EQ(q.at("majority").to_number<std::int64_t>(), 2);
  EXPECT_EQ(str(q, "owner_id"), "7");
}

TEST(rlockctl, status_and_watch_show_a_fair_locks_queue) {
  // A fair lock as Redisson's scripts leave it: a holder, and two waiters in the queue with
  // their deadlines, the first registered for rlock's handoff by push.
  plant_lock("st:fair", "0b4f8d2e-1111-4222-8333-944455556666:1", 1);
  const auto now = redis().command({"TIME"});
  ASSERT_EQ(now.elements.size(), 2u);
  const auto in = [&](std::int64_t ms) {
    return std::to_string(std::stoll(now.elements[0].str) * 1000 + ms);
  };
  redis().command({"RPUSH", "redisson_lock_queue:{st:fair}", "a:2", "b:3"});
  redis().command(
      {"ZADD", "redisson_lock_timeout:{st:fair}", in(60'000), "a:2", in(120'000), "b:3"});
  redis().command({"HSET", "rlock_fair_handoff:{st:fair}", "a:2", "30000:60000:7"});
  const auto r = run_process(cmd({"status", "st:fair"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(", fair, queue: a:2 (by push, deadline in "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("b:3 (deadline in "), std::string::npos) << r.out;
  const auto j = run_process(cmd({"--json", "status", "st:fair"}));
  ASSERT_EQ(j.code, 0) << j.err;
  const auto objects = json_lines(j.out);
  ASSERT_EQ(objects.size(), 1U) << j.out;
  EXPECT_EQ(str(objects[0], "kind"), "fair");
  EXPECT_EQ(objects[0].at("queue").as_array().size(), 2U);

  // watch: who joins the queue and who leaves it (list events, class 'l').
  redis().command({"CONFIG", "SET", "notify-keyspace-events", "Khgxl"});
  child_process watch(cmd({"--json", "watch", "st:fair"}));
  ASSERT_TRUE(watch.wait_for_output("\"watching\"", bound)) << watch.out() << watch.err();
  redis().command({"RPUSH", "redisson_lock_queue:{st:fair}", "c:4"});
  EXPECT_TRUE(watch.wait_for_output("\"queued\"", bound)) << watch.out();
  redis().command({"LPOP", "redisson_lock_queue:{st:fair}"});
  EXPECT_TRUE(watch.wait_for_output("\"left-queue\"", bound)) << watch.out();
  watch.signal(SIGINT);
  EXPECT_EQ(watch.wait(bound), 0) << watch.err();
  redis().command({"CONFIG", "SET", "notify-keyspace-events", ""});
  bool joined = false;
  bool left = false;
  for (const auto& o : json_lines(watch.out())) {
    if (str(o, "event") == "queued") joined = joined || str(o, "owner") == "c:4";
    if (str(o, "event") == "left-queue") left = left || str(o, "owner") == "a:2";
  }
  EXPECT_TRUE(joined) << watch.out();
  EXPECT_TRUE(left) << watch.out();
}

TEST(rlockctl, leader_tells_who_leads_an_election_and_watch_shows_its_changes) {
  // An election as rlock::election leaves it: Redisson's lock hash and counter, and the record.
  const std::string owner = "0b4f8d2e-1111-4222-8333-944455556666:9";
  plant_lock("el:sched", owner, 1);
  redis().command({"SET", "redisson_lock_token:{el:sched}", "5"});
  const auto now = redis().command({"TIME"});
  ASSERT_EQ(now.elements.size(), 2u);
  const auto since = std::to_string(std::stoll(now.elements[0].str) * 1000 - 2'000);
  redis().command({"HSET", "rlock_election:{el:sched}", "owner", owner, "term", "5", "value",
                   "10.0.0.7:8080", "since", since, "seq", "3"});
  const auto r = run_process(cmd({"leader", "el:sched", "el:nobody"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("el:sched: led by 10.0.0.7:8080 (owner " + owner + "), term 5, since "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("el:nobody: no leader"), std::string::npos) << r.out;
  const auto j = run_process(cmd({"--json", "leader", "el:sched"}));
  ASSERT_EQ(j.code, 0) << j.err;
  const auto objects = json_lines(j.out);
  ASSERT_EQ(objects.size(), 1U) << j.out;
  EXPECT_EQ(str(objects[0], "leader"), "10.0.0.7:8080");
  EXPECT_EQ(objects[0].at("term").as_int64(), 5);
  EXPECT_GE(objects[0].at("led_for_ms").as_int64(), 1'000);

  // leader --watch: the state as it is, then each change as the channel tells it.
  child_process follow(cmd({"--json", "leader", "el:sched", "--watch"}));
  ASSERT_TRUE(follow.wait_for_output("\"event\":\"now\"", bound)) << follow.out() << follow.err();
  // watch: the lock's events and, for an election, its changes of leader.
  child_process watch(cmd({"--json", "watch", "el:sched"}));
  ASSERT_TRUE(watch.wait_for_output("\"watching\"", bound)) << watch.out() << watch.err();
  redis().command({"PUBLISH", "rlock_election_channel:{el:sched}", "4:5:proclaimed:10.0.0.7:9090"});
  EXPECT_TRUE(follow.wait_for_output("\"proclaimed\"", bound)) << follow.out();
  EXPECT_TRUE(watch.wait_for_output("\"leader-proclaimed\"", bound)) << watch.out();
  follow.signal(SIGINT);
  watch.signal(SIGINT);
  EXPECT_EQ(follow.wait(bound), 0) << follow.err();
  EXPECT_EQ(watch.wait(bound), 0) << watch.err();
  bool told = false;
  for (const auto& o : json_lines(follow.out())) {
    if (str(o, "event") == "proclaimed") told = str(o, "value") == "10.0.0.7:9090";
  }
  EXPECT_TRUE(told) << follow.out();
  for (const auto k : {"el:sched", "redisson_lock_token:{el:sched}", "rlock_election:{el:sched}"}) {
    redis().command({"DEL", k});
  }
}

TEST(rlockctl, hold_takes_a_fair_lock_and_a_second_hold_waits_its_turn_in_the_queue) {
  child_process a(cmd({"--json", "hold", "q:fair", "--kind", "fair"}));
  ASSERT_TRUE(a.wait_for_output("\"acquired\"", bound)) << a.out() << a.err();
  EXPECT_EQ(str(json_lines(a.out()).front(), "kind"), "fair");
  child_process b(cmd({"--json", "hold", "q:fair", "--kind", "fair", "--wait", "20000"}));
  // B waits in the fair queue, which status shows.
  bool queued = false;
  for (int i = 0; i < 2000 && !queued; ++i) {
    queued = redis().command_int({"LLEN", "redisson_lock_queue:{q:fair}"}) == 1;
    if (!queued) ::poll(nullptr, 0, 10);
  }
  ASSERT_TRUE(queued);
  const auto st = run_process(cmd({"status", "q:fair"}));
  EXPECT_NE(st.out.find(", fair, queue: "), std::string::npos) << st.out;
  a.signal(SIGINT);
  EXPECT_EQ(a.wait(bound), 0) << a.out() << a.err();
  ASSERT_TRUE(b.wait_for_output("\"acquired\"", bound)) << b.out() << b.err();
  b.signal(SIGINT);
  EXPECT_EQ(b.wait(bound), 0) << b.out() << b.err();
  // A kind it does not know is a usage error.
  EXPECT_EQ(run_process(cmd({"hold", "q:x", "--kind", "mutex"})).code, 2);
  EXPECT_EQ(run_process(cmd({"hold", "q:x", "--kind", "fair", "--fenced"})).code, 2);
}

TEST(rlockctl, a_fair_waiter_killed_at_the_head_holds_what_a_push_hands_it_only_for_the_claim) {
  // Redisson issue #6150's rlock form: a waiter process SIGKILLed at the head of the queue is
  // made the holder by the release's handoff by push. It gets config::fair_lock::handoff_claim
  // (2 s) on the server, not a 30 s watchdog lease, and the next waiter takes the lock then.
  child_process a(cmd({"--json", "hold", "q:dead-head", "--kind", "fair"}));
  ASSERT_TRUE(a.wait_for_output("\"acquired\"", bound)) << a.out() << a.err();
  child_process b(cmd({"--json", "hold", "q:dead-head", "--kind", "fair"}));
  bool registered = false;
  for (int i = 0; i < 2000 && !registered; ++i) {
    registered = redis().command_int({"HLEN", "rlock_fair_handoff:{q:dead-head}"}) == 1;
    if (!registered) ::poll(nullptr, 0, 10);
  }
  ASSERT_TRUE(registered);
  const auto field = redis().command({"LINDEX", "redisson_lock_queue:{q:dead-head}", "0"}).str;
  b.signal(SIGKILL);
  EXPECT_FALSE(b.wait(bound).has_value());  // killed, no exit code
  a.signal(SIGINT);
  EXPECT_EQ(a.wait(bound), 0) << a.out() << a.err();
  // The dead waiter holds it, for the claim only.
  EXPECT_EQ(redis().command({"HGET", "q:dead-head", field}).str, "1");
  const auto ttl = redis().command_int({"PTTL", "q:dead-head"});
  EXPECT_GT(ttl, 0);
  EXPECT_LE(ttl, 2000);
  // The next waiter takes it when the claim ends.
  child_process c(cmd({"--json", "hold", "q:dead-head", "--kind", "fair", "--wait", "20000"}));
  ASSERT_TRUE(c.wait_for_output("\"acquired\"", bound)) << c.out() << c.err();
  c.signal(SIGINT);
  EXPECT_EQ(c.wait(bound), 0) << c.out() << c.err();
}

TEST(rlockctl, two_read_holds_share_a_read_write_lock_which_status_shows_and_a_write_hold_waits) {
  child_process a(cmd({"--json", "hold", "q:rw", "--kind", "read"}));
  ASSERT_TRUE(a.wait_for_output("\"acquired\"", bound)) << a.out() << a.err();
  child_process b(cmd({"--json", "hold", "q:rw", "--kind", "read"}));
  ASSERT_TRUE(b.wait_for_output("\"acquired\"", bound)) << b.out() << b.err();
  const auto st = run_process(cmd({"--json", "status", "q:rw"}));
  ASSERT_EQ(st.code, 0) << st.err;
  const auto objects = json_lines(st.out);
  ASSERT_EQ(objects.size(), 1U) << st.out;
  EXPECT_EQ(str(objects[0], "kind"), "read-write");
  EXPECT_EQ(str(objects[0], "mode"), "read");
  const auto& holders = objects[0].at("holders").as_array();
  ASSERT_EQ(holders.size(), 2U) << st.out;
  for (const auto& h : holders) EXPECT_EQ(h.as_object().at("role").as_string(), "read");
  // A writer waits for both readers.
  child_process w(cmd({"--json", "hold", "q:rw", "--kind", "write", "--wait", "20000"}));
  bool waiting = false;
  for (int i = 0; i < 2000 && !waiting; ++i) {
    const auto n = redis().command({"PUBSUB", "NUMSUB", "redisson_rwlock:{q:rw}"});
    waiting = n.elements.size() == 2 && n.elements[1].integer == 1;
    if (!waiting) ::poll(nullptr, 0, 10);
  }
  ASSERT_TRUE(waiting);
  const auto text = run_process(cmd({"status", "q:rw"}));
  EXPECT_NE(text.out.find("read count 1"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("1 subscriber(s), read-write (mode read)"), std::string::npos)
      << text.out;
  // Its mark and place (writers first): status names the writer new readers wait behind.
  EXPECT_NE(text.out.find(", waiting writers: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" (mark lapses in "), std::string::npos) << text.out;
  const auto waited = json_lines(run_process(cmd({"--json", "status", "q:rw"})).out);
  ASSERT_EQ(waited.size(), 1U);
  ASSERT_EQ(waited[0].at("waiting_writers").as_array().size(), 1U);
  a.signal(SIGINT);
  EXPECT_EQ(a.wait(bound), 0) << a.out() << a.err();
  // One reader left: the writer still waits (a reader's unlock that leaves readers wakes
  // nobody).
  const auto one = run_process(cmd({"status", "q:rw"}));
  EXPECT_NE(one.out.find("read-write (mode read)"), std::string::npos) << one.out;
  EXPECT_EQ(w.out().find("\"acquired\""), std::string::npos) << w.out();
  b.signal(SIGINT);
  EXPECT_EQ(b.wait(bound), 0) << b.out() << b.err();
  ASSERT_TRUE(w.wait_for_output("\"acquired\"", bound)) << w.out() << w.err();
  w.signal(SIGINT);
  EXPECT_EQ(w.wait(bound), 0) << w.out() << w.err();
}

TEST(rlockctl, status_and_watch_show_a_semaphores_permits_and_holds) {
  // A semaphore of 3 with one hold of 2, as rlock's scripts leave it.
  const auto now = redis().command({"TIME"});
  ASSERT_EQ(now.elements.size(), 2u);
  const auto in = [&](std::int64_t ms) {
    return std::to_string(std::stoll(now.elements[0].str) * 1000 + ms);
  };
  redis().command({"SET", "st:sem", "1"});
  redis().command({"SET", "rlock_semaphore_total:{st:sem}", "3"});
  redis().command({"ZADD", "{st:sem}:timeout", in(60'000), "a:7"});
  redis().command({"HSET", "rlock_semaphore_permits:{st:sem}", "a:7", "2"});
  const auto r = run_process(cmd({"status", "st:sem"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("st:sem: semaphore, 1 permit(s) available of 3, held by a:7 (2 permits"),
            std::string::npos)
      << r.out;
  const auto j = run_process(cmd({"--json", "status", "st:sem"}));
  const auto objects = json_lines(j.out);
  ASSERT_EQ(objects.size(), 1U) << j.out;
  EXPECT_EQ(str(objects[0], "kind"), "semaphore");
  EXPECT_EQ(objects[0].at("available").as_int64(), 1);
  // watch: a change of the count (string events, class '$').
  redis().command({"CONFIG", "SET", "notify-keyspace-events", "Khgxl$z"});
  child_process watch(cmd({"--json", "watch", "st:sem"}));
  ASSERT_TRUE(watch.wait_for_output("\"watching\"", bound)) << watch.out() << watch.err();
  redis().command({"INCRBY", "st:sem", "2"});
  // The event, not the "permits" field every semaphore line carries.
  EXPECT_TRUE(watch.wait_for_output("\"event\":\"permits\"", bound)) << watch.out();
  watch.signal(SIGINT);
  EXPECT_EQ(watch.wait(bound), 0) << watch.err();
  redis().command({"CONFIG", "SET", "notify-keyspace-events", ""});
  EXPECT_NE(watch.out().find("\"available\":3"), std::string::npos) << watch.out();
  redis().command({"DEL", "st:sem", "rlock_semaphore_total:{st:sem}", "{st:sem}:timeout",
                   "rlock_semaphore_permits:{st:sem}"});
}

TEST(rlockctl, status_shows_a_count_down_latch_with_waiters) {
  // Redisson's RCountDownLatch: a count, and a waiter on its channel.
  redis().command({"SET", "st:gate", "2"});
  rlock::test::raw_client waiter(rlock::test::shared_server().port());
  waiter.send({"SUBSCRIBE", "redisson_countdownlatch__channel__{st:gate}"});
  (void)waiter.read_push(bound);  // the confirmation
  const auto r = run_process(cmd({"status", "st:gate"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("st:gate: count-down latch, count 2, 1 waiter(s)"), std::string::npos)
      << r.out;
  const auto j = run_process(cmd({"--json", "status", "st:gate"}));
  const auto objects = json_lines(j.out);
  ASSERT_EQ(objects.size(), 1U) << j.out;
  EXPECT_EQ(str(objects[0], "kind"), "count-down-latch");
  EXPECT_EQ(objects[0].at("count").as_int64(), 2);
  redis().command({"DEL", "st:gate"});
}

TEST(rlockctl, list_pages_through_locks_only) {
  for (int i = 0; i < 25; ++i) plant_lock("ls:a:" + std::to_string(i), "u:" + std::to_string(i), 1);
  redis().command({"HSET", "ls:a:not-a-lock", "colour", "blue"});
  redis().command({"SET", "ls:a:string", "x"});
  plant_lock("ls:b:0", "u:1", 1);

  // A page of 3 keys per SCAN call: the 25 locks come over many calls.
  const auto r = run_process(cmd({"--json", "list", "ls:a:*", "--page", "3"}));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto objects = json_lines(r.out);
  EXPECT_EQ(objects.size(), 25U) << r.out;
  for (const auto& o : objects) {
    EXPECT_EQ(str(o, "state"), "held");
    EXPECT_EQ(str(o, "lock").rfind("ls:a:", 0), 0U) << str(o, "lock");
    EXPECT_NE(str(o, "lock"), "ls:a:not-a-lock");
  }
  const auto limited = run_process(cmd({"--json", "list", "ls:*", "--limit", "5"}));
  ASSERT_EQ(limited.code, 0) << limited.err;
  EXPECT_EQ(json_lines(limited.out).size(), 5U);
  const auto text = run_process(cmd({"list", "ls:b:*"}));
  EXPECT_NE(text.out.find("ls:b:0: held by u:1 (count 1)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("1 lock(s) held"), std::string::npos) << text.out;
}

TEST(rlockctl, prefix_is_applied_to_names) {
  plant_lock("svc1:pref", "u:3", 1);
  const auto r = run_process(cmd({"--prefix", "svc1:", "status", "pref"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("pref: held by u:3"), std::string::npos) << r.out;
}

TEST(rlockctl, hold_for_a_time_releases_and_exits_0) {
  const auto r = run_process(cmd({"hold", "h:timed", "--for", "0.2"}));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("h:timed: acquired by"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("h:timed: released by"), std::string::npos) << r.out;
  EXPECT_EQ(redis().command_int({"EXISTS", "h:timed"}), 0);
}

TEST(rlockctl, hold_fenced_prints_the_token) {
  redis().command({"SET", "redisson_lock_token:{h:fenced}", "6"});
  const auto text = run_process(cmd({"hold", "h:fenced", "--fenced", "--for", "0.1"}));
  EXPECT_EQ(text.code, 0) << text.out << text.err;
  EXPECT_NE(text.out.find("(watchdog, token 7)"), std::string::npos) << text.out;
  const auto j = run_process(
      cmd({"--json", "hold", "h:fenced", "--fenced", "--lease", "5000", "--for", "0.1"}));
  EXPECT_EQ(j.code, 0) << j.out << j.err;
  const auto objects = json_lines(j.out);
  ASSERT_GE(objects.size(), 1U) << j.out;
  EXPECT_EQ(str(objects[0], "event"), "acquired");
  EXPECT_EQ(objects[0].at("token").as_int64(), 8);
  EXPECT_EQ(redis().command_int({"EXISTS", "h:fenced"}), 0);
  EXPECT_EQ(redis().command({"GET", "redisson_lock_token:{h:fenced}"}).str, "8");
}

TEST(rlockctl, hold_interrupted_releases_and_exits_0) {
  child_process p(cmd({"hold", "h:ctrl-c", "--watchdog"}));
  ASSERT_TRUE(p.wait_for_output("acquired", bound)) << p.out() << p.err();
  EXPECT_EQ(redis().command_int({"EXISTS", "h:ctrl-c"}), 1);
  p.signal(SIGINT);
  EXPECT_EQ(p.wait(bound), 0) << p.out() << p.err();
  EXPECT_NE(p.out().find("released by"), std::string::npos) << p.out();
  EXPECT_EQ(redis().command_int({"EXISTS", "h:ctrl-c"}), 0);
}

TEST(rlockctl, hold_not_acquired_within_wait_exits_1) {
  plant_lock("h:busy", "u:1", 1);
  const auto r = run_process(cmd({"--json", "hold", "h:busy", "--wait", "100"}));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const auto objects = json_lines(r.out);
  ASSERT_EQ(objects.size(), 1U) << r.out;
  EXPECT_EQ(str(objects[0], "event"), "not-acquired");
  // The holder is untouched.
  EXPECT_EQ(redis().command({"HGET", "h:busy", "u:1"}).str, "1");
}

TEST(rlockctl, hold_interrupted_while_waiting_exits_1_and_takes_nothing) {
  plant_lock("h:waited", "u:1", 1);
  child_process p(cmd({"hold", "h:waited"}));
  // Waiting: subscribed to the lock's unlock channel.
  bool waits = false;
  for (int i = 0; i < 2000 && !waits; ++i) {
    const auto n = redis().command({"PUBSUB", "NUMSUB", "redisson_lock__channel:{h:waited}"});
    waits = n.elements.size() == 2 && n.elements[1].integer == 1;
    if (!waits) ::poll(nullptr, 0, 10);
  }
  ASSERT_TRUE(waits) << p.err();
  p.signal(SIGINT);
  EXPECT_EQ(p.wait(bound), 1) << p.out() << p.err();
  EXPECT_NE(p.out().find("interrupted before it was acquired"), std::string::npos) << p.out();
  const auto holders = redis().command({"HGETALL", "h:waited"});
  EXPECT_EQ(holders.elements.size(), 2U);  // u:1 alone, untouched
}

TEST(rlockctl, lease_running_out_while_held_exits_3) {
  const auto r = run_process(cmd({"hold", "h:short", "--lease", "300", "--for", "30"}));
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("lease ran out while held"), std::string::npos) << r.out;
}

TEST(rlockctl, force_unlocked_while_held_is_lost_exit_3) {
  child_process p(cmd({"hold", "h:stolen"}));
  ASSERT_TRUE(p.wait_for_output("acquired", bound)) << p.out() << p.err();
  const auto force = run_process(cmd({"unlock", "h:stolen", "--force"}));
  EXPECT_EQ(force.code, 0) << force.err;
  EXPECT_NE(force.out.find("h:stolen: force-unlocked"), std::string::npos) << force.out;
  p.signal(SIGINT);
  EXPECT_EQ(p.wait(bound), 3) << p.out() << p.err();
  EXPECT_NE(p.out().find("lost while held"), std::string::npos) << p.out();
}

TEST(rlockctl, unlock_refuses_without_force) {
  plant_lock("u:kept", "u:1", 1);
  const auto r = run_process(cmd({"unlock", "u:kept"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_EQ(redis().command_int({"EXISTS", "u:kept"}), 1);
  const auto forced = run_process(cmd({"--json", "unlock", "u:kept", "--force"}));
  EXPECT_EQ(forced.code, 0) << forced.err;
  EXPECT_EQ(redis().command_int({"EXISTS", "u:kept"}), 0);
  const auto again = run_process(cmd({"unlock", "u:kept", "--force"}));
  EXPECT_EQ(again.code, 0);
  EXPECT_NE(again.out.find("was not locked"), std::string::npos) << again.out;
}

/// The story as the watch tells it: (event, first holder) per line; renewals (the watchdog's,
/// every lease / 3 of a hold that a loaded machine keeps longer) are left out.
std::vector<std::pair<std::string, std::string>> story_of(const std::string& out) {
  std::vector<std::pair<std::string, std::string>> story;
  for (const auto& o : json_lines(out)) {
    if (str(o, "event") == "renewed") continue;
    std::string who;
    if (const auto* hs = o.if_contains("holders"); hs != nullptr && !hs->as_array().empty()) {
      who = str(hs->as_array()[0].as_object(), "owner");
    }
    story.emplace_back(str(o, "event"), who);
  }
  return story;
}

/// Each hold is let go only once the watch has told it was taken (its line names the holder):
/// the story does not depend on how the processes are scheduled.
TEST(rlockctl, two_holds_contend_and_watch_sees_the_handoff) {
  redis().command({"CONFIG", "SET", "notify-keyspace-events", "Khgx"});
  child_process watch(cmd({"--json", "watch", "handoff"}));
  ASSERT_TRUE(watch.wait_for_output("\"watching\"", bound)) << watch.out() << watch.err();

  child_process a(cmd({"--json", "hold", "handoff"}));
  ASSERT_TRUE(a.wait_for_output("\"acquired\"", bound)) << a.out() << a.err();
  const std::string owner_a = str(json_lines(a.out()).front(), "owner");
  ASSERT_FALSE(owner_a.empty());
  ASSERT_TRUE(watch.wait_for_output("\"" + owner_a + "\"", bound)) << watch.out();
  child_process b(cmd({"--json", "hold", "handoff", "--wait", "60000"}));
  // B waits on the unlock channel: it is subscribed there, beside the watcher.
  bool b_waits = false;
  for (int i = 0; i < 2000 && !b_waits; ++i) {
    const auto n = redis().command({"PUBSUB", "NUMSUB", "redisson_lock__channel:{handoff}"});
    b_waits = n.elements.size() == 2 && n.elements[1].integer >= 2;
    if (!b_waits) ::poll(nullptr, 0, 10);
  }
  ASSERT_TRUE(b_waits);
  EXPECT_EQ(b.out().find("acquired"), std::string::npos);

  a.signal(SIGINT);
  EXPECT_EQ(a.wait(bound), 0) << a.out() << a.err();
  ASSERT_TRUE(b.wait_for_output("\"acquired\"", bound)) << b.out() << b.err();
  const std::string owner_b = str(json_lines(b.out()).front(), "owner");
  ASSERT_NE(owner_a, owner_b);
  ASSERT_TRUE(watch.wait_for_output("\"" + owner_b + "\"", bound)) << watch.out();
  b.signal(SIGINT);
  EXPECT_EQ(b.wait(bound), 0) << b.out() << b.err();

  // Both releases: A's, then B's.
  EXPECT_TRUE(watch.wait_for_output("\"released\"", bound, 2)) << watch.out();
  watch.signal(SIGINT);
  EXPECT_EQ(watch.wait(bound), 0) << watch.err();

  const auto story = story_of(watch.out());
  const std::vector<std::pair<std::string, std::string>> expected = {{"watching", ""},
                                                                     {"locked", owner_a},
                                                                     {"released", ""},
                                                                     {"locked", owner_b},
                                                                     {"released", ""}};
  ASSERT_EQ(story.size(), expected.size()) << watch.out();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(story[i].first, expected[i].first) << i << "\n" << watch.out();
    EXPECT_EQ(story[i].second, expected[i].second) << i << "\n" << watch.out();
  }
}

/// A hold taken and released while the watch could not read (stopped, as a loaded machine may
/// leave it): its HINCRBY is told as a take, never as a release, and its deletion as the release.
TEST(rlockctl, watch_tells_a_hold_it_could_not_read_as_taken_then_released) {
  redis().command({"CONFIG", "SET", "notify-keyspace-events", "Khgx"});
  child_process watch(cmd({"--json", "watch", "unread"}));
  ASSERT_TRUE(watch.wait_for_output("\"watching\"", bound)) << watch.out() << watch.err();
  watch.signal(SIGSTOP);
  const auto held = run_process(cmd({"hold", "unread", "--for", "0"}));
  watch.signal(SIGCONT);
  EXPECT_EQ(held.code, 0) << held.err;
  EXPECT_TRUE(watch.wait_for_output("\"released\"", bound)) << watch.out();
  watch.signal(SIGINT);
  EXPECT_EQ(watch.wait(bound), 0) << watch.err();
  const auto story = story_of(watch.out());
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"watching", ""}, {"locked", ""}, {"released", ""}};
  EXPECT_EQ(story, expected) << watch.out();
  const auto lines = json_lines(watch.out());
  ASSERT_EQ(lines.size(), 3U) << watch.out();
  EXPECT_EQ(str(lines[1], "detail"), "taken and released before it could be read") << watch.out();
  EXPECT_EQ(str(lines[2], "detail"), "released (its holder was not read in time)") << watch.out();
  for (const auto& o : json_lines(watch.out())) {
    EXPECT_FALSE(str(o, "cause") == "hincrby" && str(o, "event") == "released") << watch.out();
  }
}

TEST(rlockctl, watch_says_when_keyspace_notifications_are_off) {
  redis().command({"CONFIG", "SET", "notify-keyspace-events", ""});
  child_process watch(cmd({"watch", "quiet"}));
  ASSERT_TRUE(watch.wait_for_output("watching quiet: free", bound)) << watch.out() << watch.err();
  EXPECT_NE(watch.err().find("CONFIG SET notify-keyspace-events Khgx"), std::string::npos)
      << watch.err();
  // Releases still come through the unlock channel.
  const auto held = run_process(cmd({"hold", "quiet", "--for", "0"}));
  EXPECT_EQ(held.code, 0) << held.err;
  EXPECT_TRUE(watch.wait_for_output("quiet: locked and released", bound)) << watch.out();
  watch.signal(SIGINT);
  EXPECT_EQ(watch.wait(bound), 0);
  // The server's configuration was left as it was.
  const auto flags = redis().command({"CONFIG", "GET", "notify-keyspace-events"});
  ASSERT_EQ(flags.elements.size(), 2U);
  EXPECT_EQ(flags.elements[1].str, "");
}

TEST(rlockctl, watch_reconnects_and_goes_on) {
  rlock::test::redis_server own;
  const std::string own_url = "redis://127.0.0.1:" + std::to_string(own.port());
  child_process watch({RLOCKCTL, "--url", own_url, "watch", "survivor"});
  ASSERT_TRUE(watch.wait_for_output("watching survivor: free", bound)) << watch.err();
  own.kill_hard();
  own.restart();
  // The watch reconnects and subscribes again (the restarted server has no notifications on:
  // the unlock channel is what it hears).
  // A connection per look: the watch's handshake kills the connection id it had before the
  // restart (the session's fence), which on a restarted server may name one of ours.
  bool resubscribed = false;
  for (int i = 0; i < 2000 && !resubscribed; ++i) {
    try {
      rlock::test::raw_client look(own.port());
      const auto n = look.command({"PUBSUB", "NUMSUB", "redisson_lock__channel:{survivor}"});
      resubscribed = n.elements.size() == 2 && n.elements[1].integer == 1;
    } catch (const std::exception&) {
      resubscribed = false;
    }
    if (!resubscribed) ::poll(nullptr, 0, 10);
  }
  ASSERT_TRUE(resubscribed) << watch.err();
  const auto held = run_process({RLOCKCTL, "--url", own_url, "hold", "survivor", "--for", "0"});
  EXPECT_EQ(held.code, 0) << held.err;
  EXPECT_TRUE(watch.wait_for_output("survivor: locked and released", bound))
      << watch.out() << watch.err();
  EXPECT_NE(watch.err().find("connection lost"), std::string::npos) << watch.err();
  watch.signal(SIGINT);
  EXPECT_EQ(watch.wait(bound), 0);
}

TEST(rlockctl, bench_measures_s1_and_s3_without_overlap) {
  const auto r = run_process(cmd({"--json", "bench", "--seconds", "0.3", "--contenders", "3"}));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto objects = json_lines(r.out);
  ASSERT_EQ(objects.size(), 2U) << r.out;
  EXPECT_EQ(str(objects[0], "scenario"), "S1");
  EXPECT_GT(objects[0].at("pairs").to_number<std::uint64_t>(), 0U);
  EXPECT_EQ(str(objects[1], "scenario"), "S3");
  EXPECT_GT(objects[1].at("acquisitions").to_number<std::uint64_t>(), 0U);
  EXPECT_EQ(objects[1].at("overlaps").to_number<std::uint64_t>(), 0U);
  // The progress bar (not a terminal here: a line per quarter).
  EXPECT_NE(r.err.find("S1 100%"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("S3 100%"), std::string::npos) << r.err;
}

}  // namespace rlockctl_test
