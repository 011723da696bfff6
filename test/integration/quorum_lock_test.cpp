// rlock::quorum_lock (Redlock over independent servers) against real servers, 3 and 5 of them:
// one attempt per node in one round, a majority held and the rest given back, exclusion
// between owners and with Redisson's RedissonRedLock (its scripts, played per node), waiting
// woken by the unlock pushes, reentrance, a minority down, a majority down (an error naming the
// nodes), and a holder told lost() when a majority loses the key. Then rlock::quorum_election
// over it: the record on every node, observers of every node told each change once, a minority
// or a majority down, a lead lost to a majority, the announce script's retries, the blocking form.
#include "rlock/rlock.hpp"
#include "rlock/with_leadership.hpp"
#include "script/scripts.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/redisson_scripts.hpp"
#include "support/run.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace quorum_lock_test {

namespace asio = boost::asio;
namespace resp3 = rlock::detail::resp3;
using rlock::test::error_of;
using rlock::test::wait_until;
using namespace std::chrono_literals;

using rlock::test::redisson_acquire;
using rlock::test::redisson_release;

/// N private servers, a client per server for each of two owners, and a raw client per server.
struct quorum_env {
  explicit quorum_env(std::size_t n, std::chrono::milliseconds watchdog = 30s,
                      std::chrono::milliseconds command_timeout = 500ms) {
    for (std::size_t i = 0; i < n; ++i) {
      servers.push_back(std::make_unique<rlock::test::redis_server>());
      rlock::config cfg;
      cfg.port = servers.back()->port();
      cfg.key_prefix = prefix;
      cfg.watchdog_timeout = watchdog;
      cfg.command_timeout = command_timeout;
      a.push_back(std::make_unique<rlock::client>(io.get_executor(), cfg));
      b.push_back(std::make_unique<rlock::client>(io.get_executor(), cfg));
      raw.push_back(std::make_unique<rlock::test::raw_client>(cfg.port));
    }
  }
  static std::vector<std::reference_wrapper<rlock::client>> refs(
      const std::vector<std::unique_ptr<rlock::client>>& cs) {
    std::vector<std::reference_wrapper<rlock::client>> out;
    for (const auto& c : cs) out.emplace_back(*c);
    return out;
  }
  asio::awaitable<void> connect() {
    for (auto& c : a) co_await c->connect();
    for (auto& c : b) co_await c->connect();
  }
  asio::awaitable<void> close() {
    for (auto& c : a) co_await c->close();
    for (auto& c : b) co_await c->close();
  }
  /// Nodes where `key` exists.
  int holding(const std::string& key) {
    int n = 0;
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (servers[i]->pid() > 0 && raw[i]->command_int({"EXISTS", key}) == 1) ++n;
    }
    return n;
  }
  /// Whether one client subscribed to the lock `name`'s channel on every node.
  bool listening_everywhere(const std::string& name) {
    const std::string channel = "redisson_lock__channel:{" + prefix + name + "}";
    for (auto& r : raw) {
      const auto n = r->command({"PUBSUB", "NUMSUB", channel});
      if (n.elements.size() != 2 || n.elements[1].integer != 1) return false;
    }
    return true;
  }
  std::uint64_t attempts(const std::vector<std::unique_ptr<rlock::client>>& cs) {
    std::uint64_t n = 0;
    for (const auto& c : cs) n += c->stats().acquire_attempts;
    return n;
  }

  std::string prefix = rlock::test::unique_prefix();
  asio::io_context io;
  std::vector<std::unique_ptr<rlock::test::redis_server>> servers;
  std::vector<std::unique_ptr<rlock::client>> a;
  std::vector<std::unique_ptr<rlock::client>> b;
  std::vector<std::unique_ptr<rlock::test::raw_client>> raw;
};

/// An operation spawned beside the test: `ok` once it completed without an error, when its bell
/// rings (for wait_until).
struct beside {
  explicit beside(asio::io_context& io) : bell(io, std::chrono::steady_clock::time_point::max()) {}
  bool ok = false;
  asio::steady_timer bell;
};
template <typename Op>
std::shared_ptr<beside> spawn_beside(asio::io_context& io, Op op) {
  auto b = std::make_shared<beside>(io);
  asio::co_spawn(io, std::move(op), [b](std::exception_ptr e) {
    b->ok = !e;
    b->bell.cancel();
  });
  return b;
}
/// Waits (at most `limit`) until `b` completed without an error; whether it did.
asio::awaitable<bool> completed(std::shared_ptr<beside> b, std::chrono::seconds limit) {
  const auto done = [b] { return b->ok; };
  co_await wait_until(b->bell, done, limit);
  co_return b->ok;
}

/// After the last unlock, which completes once a majority confirmed: at most a minority still
/// has the hold (besides `others` held by another owner), and every node lets it go within the
/// nodes' command_timeout (500 ms here).
asio::awaitable<void> expect_released(quorum_env& env, const std::string& key, int others = 0) {
  const auto n = static_cast<int>(env.servers.size());
  EXPECT_LE(env.holding(key) - others, n - (n / 2 + 1));
  EXPECT_TRUE(co_await rlock::test::poll_until([&] { return env.holding(key) == others; }, 2s))
      << env.holding(key) - others << " node(s) still hold " << key;
}

class quorum_lock : public ::testing::TestWithParam<std::size_t> {};

TEST_P(quorum_lock, takes_every_node_in_one_round_with_redissons_hash_and_releases_them_all) {
  quorum_env env(GetParam());
  rlock::test::run(env.io, [&]() -> asio::awaitable<void> {
    co_await env.connect();
    rlock::quorum_lock q(quorum_env::refs(env.a), "account");
    rlock::quorum_lock other(quorum_env::refs(env.b), "account");
    EXPECT_EQ(q.quorum(), GetParam() / 2 + 1);
    const auto before = std::chrono::steady_clock::now();
    EXPECT_TRUE(co_await q.try_lock());
    // One attempt per node, the nodes' own attempts, in one round.
    EXPECT_EQ(env.attempts(env.a), GetParam());
    EXPECT_TRUE(q.is_held());
    EXPECT_GT(q.valid_until(), before + 29s);
    EXPECT_LE(q.valid_until(), before + 30s);
    const std::string key = env.prefix + "account";
    for (std::size_t i = 0; i < GetParam(); ++i) {
      // Redisson's layout on every node: this node's client uuid, the one owner id.
      const auto fields = env.raw[i]->command({"HGETALL", key});
      RLOCK_CO_ASSERT(fields.elements.size() == 2u);
      const auto probe = env.a[i]->get_lock("probe");
      const std::string_view field = probe.owner_field();
      const auto uuid = std::string(field.substr(0, field.rfind(':')));
      EXPECT_EQ(fields.elements[0].str, uuid + ":" + std::to_string(q.owner_id()));
      EXPECT_EQ(fields.elements[1].str, "1");
    }
    // Another owner is refused, in one attempt per node, and leaves nothing behind.
    EXPECT_FALSE(co_await other.try_lock());
    EXPECT_EQ(env.attempts(env.b), GetParam());
    // Metrics per node: every node granted the holder and refused the other.
    const auto held = q.metrics();
    EXPECT_EQ(held.rounds, 1u);
    EXPECT_EQ(held.rounds_won, 1u);
    EXPECT_TRUE(held.held);
    const auto refused = other.metrics();
    EXPECT_EQ(refused.rounds, 1u);
    EXPECT_EQ(refused.rounds_won, 0u);
    RLOCK_CO_ASSERT(held.nodes.size() == GetParam() && refused.nodes.size() == GetParam());
    for (std::size_t i = 0; i < GetParam(); ++i) {
      const std::string address = "127.0.0.1:" + std::to_string(env.servers[i]->port());
      EXPECT_EQ(held.nodes[i].address, address);
      EXPECT_EQ(held.nodes[i].granted, 1u);
      EXPECT_TRUE(held.nodes[i].holds);
      // Refused, or cancelled once a majority had refused (no vote of its node).
      EXPECT_LE(refused.nodes[i].refused, 1u);
      EXPECT_EQ(refused.nodes[i].failed, 0u);
      EXPECT_FALSE(refused.nodes[i].holds);
      const auto text = rlock::to_prometheus(refused, "rlock", {{"service", "t"}});
      EXPECT_NE(
          text.find("rlock_quorum_node_votes_total{service=\"t\",lock=\"account\",node=\"" +
                    address + "\",vote=\"refused\"} " + std::to_string(refused.nodes[i].refused)),
          std::string::npos)
          << text;
    }
    std::uint64_t refusals = 0;
    for (const auto& n : refused.nodes) refusals += n.refused;
    EXPECT_GE(refusals, q.quorum());
    EXPECT_EQ(rlock::test::thrown_by([&] {
                (void)rlock::to_prometheus(held, "rlock", {{"node", "x"}});
              }),
              rlock::errc::invalid_argument);
    EXPECT_EQ(env.holding(key), static_cast<int>(GetParam()));
    // Reentrant: the nodes keep one hold each until the last unlock.
    EXPECT_TRUE(co_await q.try_lock());
    co_await q.unlock();
    EXPECT_TRUE(q.is_held());
    EXPECT_EQ(env.holding(key), static_cast<int>(GetParam()));
    co_await q.unlock();
    EXPECT_FALSE(q.is_held());
    co_await expect_released(env, key);
    EXPECT_EQ(co_await error_of(q.unlock()), rlock::errc::not_owner);
    EXPECT_EQ(co_await error_of(q.lost()), rlock::errc::not_owner);
    EXPECT_TRUE(co_await other.try_lock(0ms, 5s));
    EXPECT_LE(other.valid_until(), std::chrono::steady_clock::now() + 5s);
    co_await other.unlock();
    co_await env.close();
  });
}

TEST_P(quorum_lock, a_minority_held_elsewhere_is_not_enough_to_exclude_and_a_majority_is) {
  quorum_env env(GetParam());
  rlock::test::run(env.io, [&]() -> asio::awaitable<void> {
    co_await env.connect();
    rlock::quorum_lock q(quorum_env::refs(env.a), "split");
    const std::string key = env.prefix + "split";
    const std::size_t minority = GetParam() - q.quorum();
    // A foreign owner on a minority: a majority is still free.
    for (std::size_t i = 0; i < minority; ++i) {
      env.raw[i]->command({"EVAL", redisson_acquire, "1", key, "30000", "java-uuid:1"});
    }
    EXPECT_TRUE(co_await q.try_lock());
    co_await q.unlock();
    // What it took was given back; the foreign holds stay.
    co_await expect_released(env, key, static_cast<int>(minority));
    // One more node makes the foreign owner a majority: refused, and nothing of ours is left.
    env.raw[minority]->command({"EVAL", redisson_acquire, "1", key, "30000", "java-uuid:1"});
    EXPECT_FALSE(co_await q.try_lock());
    // Told after every grant of the lost round went back (those of attempts it cancelled too).
    EXPECT_EQ(env.holding(key), static_cast<int>(minority + 1));
    for (std::size_t i = minority + 1; i < GetParam(); ++i) {
      EXPECT_EQ(env.raw[i]->command_int({"EXISTS", key}), 0) << "node " << i;
    }
    co_await env.close();
  });
}

TEST_P(quorum_lock, excludes_a_redisson_redlock_and_is_excluded_by_one) {
  // RedissonRedLock is a RedissonMultiLock that may fail on n - (n/2 + 1) members: it walks
  // them one after another with Redisson's acquire, and gives back what it took if it fails.
  quorum_env env(GetParam());
  const std::string key = env.prefix + "shared";
  auto redisson_redlock = [&](std::string_view field) {
    const std::size_t may_fail = GetParam() - (GetParam() / 2 + 1);
    std::size_t failed = 0;
    std::vector<std::size_t> taken;
    for (std::size_t i = 0; i < GetParam(); ++i) {
      const auto r = env.raw[i]->command({"EVAL", redisson_acquire, "1", key, "30000", field});
      if (r.is_null()) {
        taken.push_back(i);
      } else if (++failed > may_fail) {
        for (auto t : taken) {
          env.raw[t]->command({"EVAL", redisson_release, "2", key,
                               "redisson_lock__channel:{" + key + "}", "0", "30000", field});
        }
        return false;
      }
    }
    return true;
  };
  auto redisson_unlock = [&](std::string_view field) {
    for (std::size_t i = 0; i < GetParam(); ++i) {
      env.raw[i]->command({"EVAL", redisson_release, "2", key,
                           "redisson_lock__channel:{" + key + "}", "0", "30000", field});
    }
  };
  rlock::test::run(env.io, [&]() -> asio::awaitable<void> {
    co_await env.connect();
    rlock::quorum_lock q(quorum_env::refs(env.a), "shared");
    EXPECT_TRUE(co_await q.try_lock());
    EXPECT_FALSE(redisson_redlock("java-uuid:7"));
    EXPECT_EQ(env.holding(key), static_cast<int>(GetParam()));
    co_await q.unlock();
    EXPECT_TRUE(redisson_redlock("java-uuid:7"));
    EXPECT_FALSE(co_await q.try_lock());
    redisson_unlock("java-uuid:7");
    // Its unlock published on each node's channel: our waiter, woken by them, takes it.
    EXPECT_TRUE(co_await q.try_lock(10s));
    co_await q.unlock();
    co_await env.close();
  });
}

TEST_P(quorum_lock, a_waiter_is_woken_by_the_unlock_pushes_not_by_a_lease_or_polling) {
  quorum_env env(GetParam());
  rlock::test::run(env.io, [&]() -> asio::awaitable<void> {
    co_await env.connect();
    rlock::quorum_lock holder(quorum_env::refs(env.a), "pushed");
    rlock::quorum_lock waiter(quorum_env::refs(env.b), "pushed");
    EXPECT_TRUE(co_await holder.try_lock(0ms, 60s));
    const auto locking = spawn_beside(env.io, waiter.lock(60s));
    // Listening on every node: each client subscribed to the lock's channel.
    const auto listening = [&] { return env.listening_everywhere("pushed"); };
    RLOCK_CO_ASSERT(co_await rlock::test::poll_until(listening, 10s));
    const auto attempts_asleep = env.attempts(env.b);
    co_await holder.unlock();
    EXPECT_TRUE(co_await completed(locking, 20s));
    // Woken by the pushes, long before the 60 s lease: at most one more round per node's
    // unlock message.
    EXPECT_LE(env.attempts(env.b) - attempts_asleep, GetParam() * GetParam());
    EXPECT_TRUE(waiter.is_held());
    co_await waiter.unlock();
    co_await env.close();
  });
}

TEST_P(quorum_lock, a_minority_down_still_acquires_renews_and_releases) {
  quorum_env env(GetParam(), 1500ms);
  rlock::test::run(env.io, [&]() -> asio::awaitable<void> {
    co_await env.connect();
    for (std::size_t i = 0; i < GetParam() - GetParam() / 2 - 1; ++i) env.servers[i]->kill_hard();
    rlock::quorum_lock q(quorum_env::refs(env.a), "minority");
    EXPECT_TRUE(co_await q.try_lock());
    // Renewed by the live nodes' watchdogs past two leases (a renewal each 500 ms), and still
    // believed.
    const auto renewed = [&] {
      for (std::size_t i = GetParam() - GetParam() / 2 - 1; i < GetParam(); ++i) {
        if (env.a[i]->stats().renewal_calls < 7) return false;
      }
      return true;
    };
    EXPECT_TRUE(co_await rlock::test::poll_until(renewed, 20s));
    EXPECT_TRUE(q.is_held());
    co_await q.unlock();
    co_await env.close();
  });
}

TEST_P(quorum_lock, a_majority_down_fails_within_the_wait_naming_the_nodes) {
  quorum_env env(GetParam());
  rlock::test::run(
      env.io,
      [&]() -> asio::awaitable<void> {
        co_await env.connect();
        std::vector<std::uint16_t> down;
        for (std::size_t i = 0; i < GetParam() / 2 + 1; ++i) {
          down.push_back(env.servers[i]->port());
          env.servers[i]->kill_hard();
        }
        rlock::quorum_lock q(quorum_env::refs(env.a), "majority");
        const auto code = co_await error_of(q.try_lock(1s));
        EXPECT_EQ(code, rlock::errc::quorum_unavailable);
        const auto words = q.last_error();
        for (auto port : down)
          EXPECT_NE(words.find(std::to_string(port)), std::string::npos) << words;
        co_await env.close();
      },
      60s);
}

TEST_P(quorum_lock, a_holder_retakes_a_node_that_lost_the_key_and_is_told_lost_without_a_majority) {
  quorum_env env(GetParam(), 1500ms);
  rlock::test::run(env.io, [&]() -> asio::awaitable<void> {
    co_await env.connect();
    rlock::quorum_lock q(quorum_env::refs(env.a), "deleted");
    const std::string key = env.prefix + "deleted";
    EXPECT_TRUE(co_await q.try_lock());
    // A minority loses the key: taken again after that node's next renewal, still believed.
    env.raw[0]->command({"DEL", key});
    const auto retaken = [&] { return env.raw[0]->command_int({"EXISTS", key}) == 1; };
    EXPECT_TRUE(co_await rlock::test::poll_until(retaken, 10s));
    EXPECT_TRUE(q.is_held());
    // A majority loses it to another owner (an operator's DEL, then a Redisson client): the
    // retakes are refused, lost() completes, and what is left is given back.
    const auto told = spawn_beside(env.io, q.lost());
    for (std::size_t i = 0; i < q.quorum(); ++i) {
      env.raw[i]->command({"DEL", key});
      env.raw[i]->command({"EVAL", redisson_acquire, "1", key, "30000", "java-uuid:3"});
    }
    EXPECT_TRUE(co_await completed(told, 10s));
    EXPECT_FALSE(q.is_held());
    const auto ours_cleared = [&] { return env.holding(key) == static_cast<int>(q.quorum()); };
    EXPECT_TRUE(co_await rlock::test::poll_until(ours_cleared, 10s));
    EXPECT_EQ(co_await error_of(q.unlock()), rlock::errc::not_owner);
    co_await env.close();
  });
}

TEST_P(quorum_lock, a_holder_whose_majority_dies_is_told_lost_and_a_minority_dying_is_not) {
  quorum_env env(GetParam(), 1500ms);
  rlock::test::run(
      env.io,
      [&]() -> asio::awaitable<void> {
        co_await env.connect();
        rlock::quorum_lock q(quorum_env::refs(env.a), "killed");
        EXPECT_TRUE(co_await q.try_lock());
        const auto told = spawn_beside(env.io, q.lost());
        // A minority dies: the others' renewals keep the hold (past two leases of renewals).
        const std::size_t minority = GetParam() - q.quorum();
        for (std::size_t i = 0; i < minority; ++i) env.servers[i]->kill_hard();
        const auto renewed = [&] { return env.a.back()->stats().renewal_calls >= 7; };
        EXPECT_TRUE(co_await rlock::test::poll_until(renewed, 20s));
        EXPECT_FALSE(told->ok);
        EXPECT_TRUE(q.is_held());
        // One more: fewer than a majority can renew, and the holder stops believing (the
        // deadline, validity less its allowance, is quorum_hold's: unit tested).
        env.servers[minority]->kill_hard();
        EXPECT_TRUE(co_await completed(told, 10s));
        EXPECT_FALSE(q.is_held());
        co_await env.close();
      },
      60s);
}

/// Commands clients sent to a node so far (INFO commandstats: scripts and subscriptions).
std::int64_t commands_sent(rlock::test::raw_client& raw) {
  const auto info = raw.command({"INFO", "commandstats"});
  std::int64_t n = 0;
  for (const char* name : {"evalsha", "eval", "subscribe", "unsubscribe", "script|load"}) {
    const std::string tag = std::string("cmdstat_") + name + ":calls=";
    const auto at = info.str.find(tag);
    if (at != std::string::npos) n += std::stoll(info.str.substr(at + tag.size()));
  }
  return n;
}

TEST_P(quorum_lock, a_handoff_to_a_sleeping_waiter_costs_at_most_three_commands_per_node) {
  quorum_env env(GetParam());
  rlock::test::run(env.io, [&]() -> asio::awaitable<void> {
    co_await env.connect();
    rlock::quorum_lock holder(quorum_env::refs(env.a), "handoff");
    rlock::quorum_lock waiter(quorum_env::refs(env.b), "handoff");
    EXPECT_TRUE(co_await holder.try_lock(0ms, 60s));
    const auto locking = spawn_beside(env.io, waiter.lock(60s));
    // Asleep: subscribed on every node, and its retry after subscribing answered (busy).
    const auto asleep = [&] {
      return env.listening_everywhere("handoff") && env.attempts(env.b) >= 2 * GetParam();
    };
    RLOCK_CO_ASSERT(co_await rlock::test::poll_until(asleep, 10s));
    // A question on each of the waiter's connections: its answer comes after everything the
    // server sent before it (the subscriptions' confirmations, the retry's answers).
    for (auto& c : env.b) (void)co_await c->get_lock("handoff").is_locked();
    std::int64_t before = 0;
    for (auto& r : env.raw) before += commands_sent(*r);
    co_await holder.unlock();
    const bool handed_over = co_await completed(locking, 20s);
    RLOCK_CO_ASSERT(handed_over);
    co_await waiter.unlock();
    std::int64_t after = 0;
    for (auto& r : env.raw) after += commands_sent(*r);
    // The holder's N releases, the waiter's winning round (N), its N unsubscribes, and its N
    // releases here: the handoff itself is the first three.
    const auto per_handoff = after - before - static_cast<std::int64_t>(GetParam());
    std::printf("quorum lock, N = %zu: %lld commands per handoff\n", GetParam(),
                static_cast<long long>(per_handoff));
    EXPECT_LE(per_handoff, static_cast<std::int64_t>(3 * GetParam()));
    co_await env.close();
  });
}

/// S4's method: W waiters of one process (owners over the same clients) behind one holder; each
/// takes the lock in turn and lets it go. Every handoff is woken by the unlock pushes (the 60 s
/// leases never run out) and costs at most 3 × N commands, however many wait.
TEST_P(quorum_lock, local_waiters_hand_over_by_push_at_three_commands_per_node_each) {
  quorum_env env(GetParam());
  constexpr int waiters = 6;
  rlock::test::run(
      env.io,
      [&]() -> asio::awaitable<void> {
        co_await env.connect();
        rlock::quorum_lock holder(quorum_env::refs(env.a), "queue");
        EXPECT_TRUE(co_await holder.try_lock(0ms, 60s));
        std::vector<rlock::quorum_lock> locks;
        for (int w = 0; w < waiters; ++w) locks.emplace_back(quorum_env::refs(env.b), "queue");
        auto taken = std::make_shared<int>(0);
        std::vector<std::shared_ptr<beside>> done;
        for (auto& l : locks) {
          done.push_back(spawn_beside(
              env.io,
              [](rlock::quorum_lock mine, std::shared_ptr<int> count) -> asio::awaitable<void> {
                co_await mine.lock(60s);
                ++*count;
                co_await mine.unlock();
              }(l, taken)));
        }
        const auto asleep = [&] {
          return env.listening_everywhere("queue") &&
                 env.attempts(env.b) >= static_cast<std::uint64_t>(2 * waiters) * GetParam();
        };
        RLOCK_CO_ASSERT(co_await rlock::test::poll_until(asleep, 10s));
        for (auto& c : env.b) (void)co_await c->get_lock("queue").is_locked();
        std::int64_t before = 0;
        for (auto& r : env.raw) before += commands_sent(*r);
        co_await holder.unlock();
        for (auto& d : done) EXPECT_TRUE(co_await completed(d, 20s));
        EXPECT_EQ(*taken, waiters);
        std::int64_t after = 0;
        for (auto& r : env.raw) after += commands_sent(*r);
        // Each waiter's winning round and release, the holder's release, and the waiters'
        // unsubscribes (N at the end) are the floor; every other command is a wasted round.
        const auto per_handoff = static_cast<double>(after - before) / static_cast<double>(waiters);
        std::printf("quorum lock, N = %zu, %d local waiters: %.1f commands per handoff\n",
                    GetParam(), waiters, per_handoff);
        EXPECT_LE(per_handoff, 3.0 * static_cast<double>(GetParam()) + 1.0);
        co_await env.close();
      },
      60s);
}

TEST_P(quorum_lock, contenders_on_their_own_clients_never_hold_at_once_and_all_finish) {
  quorum_env env(GetParam());
  constexpr int contenders = 3;
  constexpr int rounds = 8;
  // A third set of clients for the third contender.
  std::vector<std::unique_ptr<rlock::client>> c;
  for (std::size_t i = 0; i < GetParam(); ++i) {
    rlock::config cfg;
    cfg.port = env.servers[i]->port();
    cfg.key_prefix = env.prefix;
    cfg.command_timeout = 500ms;
    c.push_back(std::make_unique<rlock::client>(env.io.get_executor(), cfg));
  }
  rlock::test::run(
      env.io,
      [&]() -> asio::awaitable<void> {
        co_await env.connect();
        for (auto& x : c) co_await x->connect();
        std::vector<rlock::quorum_lock> locks{
            rlock::quorum_lock(quorum_env::refs(env.a), "contended"),
            rlock::quorum_lock(quorum_env::refs(env.b), "contended"),
            rlock::quorum_lock(quorum_env::refs(c), "contended")};
        auto inside = std::make_shared<int>(0);
        auto overlaps = std::make_shared<int>(0);
        auto finished = std::make_shared<int>(0);
        asio::steady_timer bell(env.io, std::chrono::steady_clock::time_point::max());
        for (auto& l : locks) {
          asio::co_spawn(
              env.io,
              [&l, inside, overlaps]() -> asio::awaitable<void> {
                for (int r = 0; r < rounds; ++r) {
                  co_await l.lock(10s);
                  if (++*inside != 1) ++*overlaps;
                  co_await rlock::test::sleep_for(1ms);  // the critical section
                  --*inside;
                  co_await l.unlock();
                }
              },
              [finished, &bell](std::exception_ptr e) {
                EXPECT_FALSE(e);
                ++*finished;
                bell.cancel();
              });
        }
        const auto all_done = [finished] { return *finished == contenders; };
        co_await wait_until(bell, all_done, 60s);
        EXPECT_EQ(*finished, contenders);
        EXPECT_EQ(*overlaps, 0);
        for (auto& x : c) co_await x->close();
        co_await env.close();
      },
      90s);
}

TEST_P(quorum_lock,
       fenced_tokens_increase_whatever_the_majority_and_across_a_node_restarted_empty) {
  quorum_env env(GetParam());
  const std::size_t n = GetParam();
  const std::size_t minority = n - (n / 2 + 1);
  const std::string key = env.prefix + "fenced";
  // The majority a round can get: the nodes `from`, `from + 1`, ... (a minority) are held by a
  // Redisson client meanwhile.
  auto block = [&](std::size_t from) {
    for (std::size_t k = 0; k < minority; ++k) {
      env.raw[(from + k) % n]->command({"EVAL", redisson_acquire, "1", key, "30000", "java:9"});
    }
  };
  auto unblock = [&](std::size_t from) {
    for (std::size_t k = 0; k < minority; ++k) env.raw[(from + k) % n]->command({"DEL", key});
  };
  rlock::test::run(
      env.io,
      [&]() -> asio::awaitable<void> {
        co_await env.connect();
        rlock::quorum_options fenced;
        fenced.fenced = true;
        rlock::quorum_lock a(quorum_env::refs(env.a), "fenced", fenced);
        rlock::quorum_lock b(quorum_env::refs(env.b), "fenced", fenced);
        std::int64_t last = 0;
        std::vector<std::int64_t> tokens;
        auto take = [&](rlock::quorum_lock& l) -> asio::awaitable<void> {
          EXPECT_TRUE(co_await l.try_lock());
          EXPECT_GT(l.token(), last);
          last = l.token();
          tokens.push_back(last);
          EXPECT_TRUE(co_await l.try_lock());  // a re-entry keeps its hold's token
          EXPECT_EQ(l.token(), last);
          co_await l.unlock();
          co_await l.unlock();
          EXPECT_EQ(l.token(), 0);
        };
        // Every node left out of the majority in turn, the owners taking turns.
        for (std::size_t from = 0; from < n; ++from) {
          block(from);
          co_await take(from % 2 == 0 ? a : b);
          unblock(from);
        }
        // Each node restarted without its data between two acquisitions, and then in the
        // second one's majority: it counts 0, the others of that majority do not.
        for (std::size_t i = 0; i < n; ++i) {
          co_await take(a);
          const auto reconnects_a = env.a[i]->stats().reconnects;
          const auto reconnects_b = env.b[i]->stats().reconnects;
          env.raw[i]->command({"SET", env.prefix + "data", "1"});
          env.servers[i]->kill_hard();
          env.servers[i]->restart();
          env.raw[i] = std::make_unique<rlock::test::raw_client>(env.servers[i]->port());
          const auto back = [&] {
            return env.a[i]->stats().reconnects > reconnects_a &&
                   env.b[i]->stats().reconnects > reconnects_b &&
                   env.a[i]->state() == rlock::connection_state::connected &&
                   env.b[i]->state() == rlock::connection_state::connected;
          };
          RLOCK_CO_ASSERT(co_await rlock::test::poll_until(back, 20s));
          // Empty: what it had is gone (a raise still in flight may be written again there: a
          // retry of the same raise, harmless).
          EXPECT_EQ(env.raw[i]->command_int({"EXISTS", env.prefix + "data"}), 0);
          block(i + 1);
          co_await take(b);
          unblock(i + 1);
        }
        EXPECT_EQ(tokens.size(), 3 * n);
        co_await env.close();
      },
      90s);
}

TEST_P(quorum_lock, with_a_restart_delay_a_node_back_from_a_restart_does_not_vote) {
  quorum_env env(GetParam());
  const std::size_t n = GetParam();
  const std::size_t minority = n - (n / 2 + 1);
  const std::string key = env.prefix + "restarted";
  rlock::test::run(
      env.io,
      [&]() -> asio::awaitable<void> {
        co_await env.connect();
        rlock::quorum_options delayed;
        delayed.restart_delay = 60s;
        rlock::quorum_lock plain(quorum_env::refs(env.b), "restarted");
        // Node 0 restarts without its data; both clients of it are back.
        const auto reconnects_a = env.a[0]->stats().reconnects;
        const auto reconnects_b = env.b[0]->stats().reconnects;
        env.servers[0]->kill_hard();
        env.servers[0]->restart();
        env.raw[0] = std::make_unique<rlock::test::raw_client>(env.servers[0]->port());
        const auto back = [&] {
          return env.a[0]->stats().reconnects > reconnects_a &&
                 env.b[0]->stats().reconnects > reconnects_b &&
                 env.a[0]->state() == rlock::connection_state::connected &&
                 env.b[0]->state() == rlock::connection_state::connected;
        };
        RLOCK_CO_ASSERT(co_await rlock::test::poll_until(back, 20s));
        // Made after the restart: the delay is counted from when the client saw the node back,
        // whenever the lock was made.
        rlock::quorum_lock careful(quorum_env::refs(env.a), "restarted", delayed);
        // Another owner holds nodes 1 .. minority: a majority needs node 0.
        for (std::size_t i = 1; i <= minority; ++i) {
          env.raw[i]->command({"EVAL", redisson_acquire, "1", key, "30000", "java:5"});
        }
        EXPECT_FALSE(co_await careful.try_lock());
        EXPECT_EQ(env.raw[0]->command_int({"EXISTS", key}), 0);  // not even asked
        EXPECT_NE(careful.last_error().find("restart_delay"), std::string::npos)
            << careful.last_error();
        // Without the delay node 0 votes, and the majority is had.
        EXPECT_TRUE(co_await plain.try_lock()) << plain.last_error();
        co_await plain.unlock();
        co_await env.close();
      },
      60s);
}

TEST_P(quorum_lock, a_stopped_minority_slows_no_acquire_renewal_release_or_handoff) {
  // Stopped servers (SIGSTOP) answer nothing and close nothing: each request to them waits for
  // its command_timeout, here 20 s. The run's limit is 15 s: anything that waited for a stopped
  // node fails the test.
  quorum_env env(GetParam(), 1500ms, 20s);
  const std::size_t minority = GetParam() - (GetParam() / 2 + 1);
  rlock::test::run(
      env.io,
      [&]() -> asio::awaitable<void> {
        co_await env.connect();
        // A round that needs the stopped node's vote (one granted, one refused while the
        // holder's release is on its way) waits for it until its bound: Redlock's small attempt
        // timeout, here 300 ms, not the 20 s command_timeout.
        rlock::quorum_options bounded;
        bounded.round_timeout = 300ms;
        rlock::quorum_lock holder(quorum_env::refs(env.a), "stopped", bounded);
        rlock::quorum_lock waiter(quorum_env::refs(env.b), "stopped", bounded);
        for (std::size_t i = 0; i < minority; ++i) ::kill(env.servers[i]->pid(), SIGSTOP);
        EXPECT_TRUE(co_await holder.try_lock());
        // Renewed by the majority past two leases, still believed.
        const auto renewed = [&] { return env.a.back()->stats().renewal_calls >= 7; };
        EXPECT_TRUE(co_await rlock::test::poll_until(renewed, 10s));
        EXPECT_TRUE(holder.is_held());
        // A waiter is handed the lock by the majority's unlock pushes.
        const auto locking = spawn_beside(env.io, waiter.lock());
        co_await holder.unlock();
        EXPECT_TRUE(co_await completed(locking, 10s));
        co_await waiter.unlock();
        for (std::size_t i = 0; i < minority; ++i) ::kill(env.servers[i]->pid(), SIGCONT);
        co_await env.close();
      },
      15s);
}

INSTANTIATE_TEST_SUITE_P(nodes, quorum_lock, ::testing::Values(3u, 5u));

TEST(quorum_lock_token_script, writes_only_what_is_higher_and_answers_a_retry_as_its_first_run) {
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  const auto source = rlock::detail::script_table[static_cast<std::size_t>(
                                                      rlock::detail::script::raise_quorum_token)]
                          .source;
  const std::string counter = "rlock_quorum_token:{" + rlock::test::unique_prefix() + "x}";
  auto raise = [&](std::string_view proposal, std::string_view marker) {
    const auto r = raw.command({"EVAL", source, "1", counter, proposal, marker});
    EXPECT_EQ(r.elements.size(), 2u) << resp3::brief(r);
    return std::pair{r.elements.at(0).integer, r.elements.at(1).integer};
  };
  EXPECT_EQ(raise("5", "a:1"), std::pair(std::int64_t{1}, std::int64_t{0}));
  // The same raise written again after a lost answer: "written", and nothing changes.
  EXPECT_EQ(raise("5", "a:1"), std::pair(std::int64_t{1}, std::int64_t{5}));
  // Another raise of the same or a lower proposal: refused, with the count.
  EXPECT_EQ(raise("5", "b:1"), std::pair(std::int64_t{0}, std::int64_t{5}));
  EXPECT_EQ(raise("4", "b:1"), std::pair(std::int64_t{0}, std::int64_t{5}));
  EXPECT_EQ(raise("6", "b:1"), std::pair(std::int64_t{1}, std::int64_t{5}));
  EXPECT_EQ(raw.command({"HGET", counter, "t"}).str, "6");
}

TEST(quorum_lock_arguments, are_checked_when_made) {
  asio::io_context io;
  rlock::config cfg = rlock::test::make_config();
  rlock::client c(io.get_executor(), cfg);
  rlock::client d(io.get_executor(), cfg);
  using refs = std::vector<std::reference_wrapper<rlock::client>>;
  EXPECT_EQ(rlock::test::thrown_by([&] { rlock::quorum_lock q(refs{}, "x"); }),
            rlock::errc::invalid_argument);
  EXPECT_EQ(rlock::test::thrown_by([&] {
              rlock::quorum_lock q(refs{c, c}, "x");
            }),
            rlock::errc::invalid_argument);
  EXPECT_EQ(rlock::test::thrown_by([&] {
              rlock::quorum_lock q(refs{c, d}, "");
            }),
            rlock::errc::invalid_argument);
  rlock::quorum_options bad;
  bad.round_timeout = 0ms;
  EXPECT_EQ(rlock::test::thrown_by([&] {
              rlock::quorum_lock q(refs{c, d}, "x", bad);
            }),
            rlock::errc::invalid_argument);
}

// --- rlock::quorum_election: an election whose lead is this lock (its token the term) ----------

/// Whether `clients` subscribed to the election `name`'s channel on every node.
bool observed_everywhere(quorum_env& env, const std::string& name) {
  const std::string channel = "rlock_election_channel:{" + env.prefix + name + "}";
  for (auto& r : env.raw) {
    const auto n = r->command({"PUBSUB", "NUMSUB", channel});
    if (n.elements.size() != 2 || n.elements[1].integer < 1) return false;
  }
  return true;
}

/// The next change an observer is told, within 5 s (none: not told).
asio::awaitable<std::optional<rlock::election_change>> next_within(rlock::election_observer& o) {
  asio::steady_timer limit(co_await asio::this_coro::executor, 5s);
  asio::cancellation_signal stop;
  limit.async_wait([&](boost::system::error_code ec) {
    if (!ec) stop.emit(asio::cancellation_type::terminal);
  });
  std::optional<rlock::election_change> out;
  try {
    out = co_await o.async_next(asio::bind_cancellation_slot(stop.slot(), asio::use_awaitable));
  } catch (const boost::system::system_error&) {
  }
  limit.cancel();
  co_return out;
}

/// A campaign spawned beside the test (its arguments held by the coroutine, not by a lambda).
asio::awaitable<void> campaign_beside(rlock::quorum_election e, std::string value) {
  (void)co_await e.campaign(std::move(value));
}
/// with_leadership spawned beside the test; the error it ended with in `ended`.
template <typename Job>
asio::awaitable<void> lead_beside(rlock::quorum_election e, Job job, std::error_code* ended) {
  try {
    co_await rlock::with_leadership(std::move(e), "a", std::move(job));
  } catch (const boost::system::system_error& x) {
    *ended = x.code();
  }
}

using event = rlock::election_change::event;

class quorum_election : public ::testing::TestWithParam<std::size_t> {};

TEST_P(quorum_election, leads_on_a_majority_announces_on_every_node_and_hands_over_by_resignation) {
  quorum_env env(GetParam());
  rlock::test::run(env.io, [&]() -> asio::awaitable<void> {
    co_await env.connect();
    rlock::quorum_election a(quorum_env::refs(env.a), "scheduler");
    rlock::quorum_election b(quorum_env::refs(env.b), "scheduler");
    EXPECT_EQ(a.quorum(), GetParam() / 2 + 1);
    EXPECT_EQ(co_await b.leader(), std::nullopt);  // nobody ever led
    auto observer = b.observe();
    EXPECT_TRUE(co_await rlock::test::poll_until(
        [&] { return observed_everywhere(env, "scheduler"); }, 5s));

    const std::int64_t first = co_await a.campaign("10.0.0.1");
    EXPECT_GT(first, 0);
    EXPECT_EQ(a.term(), first);
    EXPECT_TRUE(a.lock().is_held());
    const std::string key = env.prefix + "scheduler";
    const std::string record = "rlock_election:{" + key + "}";
    for (std::size_t i = 0; i < GetParam(); ++i) {
      // Every node keeps the record; the term is the quorum's token.
      EXPECT_EQ(env.raw[i]->command({"HGET", record, "term"}).str, std::to_string(first));
      EXPECT_EQ(env.raw[i]->command({"HGET", record, "value"}).str, "10.0.0.1");
      EXPECT_EQ(env.raw[i]->command({"HGET", record, "seq"}).str, "1");
    }
    const auto who = co_await b.leader();
    RLOCK_CO_ASSERT(who.has_value());
    EXPECT_EQ(who->value, "10.0.0.1");
    EXPECT_EQ(who->term, first);
    EXPECT_EQ(who->seq, 1u);
    // Heard on every node's channel, told once.
    auto told = co_await next_within(observer);
    RLOCK_CO_ASSERT(told.has_value());
    EXPECT_EQ(told->what, event::elected);
    EXPECT_EQ(told->term, first);
    EXPECT_EQ(told->seq, 1u);
    EXPECT_EQ(told->value, "10.0.0.1");

    co_await a.proclaim("10.0.0.2");
    told = co_await next_within(observer);
    RLOCK_CO_ASSERT(told.has_value());
    EXPECT_EQ(told->what, event::proclaimed);  // not a repeat of `elected` from another node
    EXPECT_EQ(told->seq, 2u);
    EXPECT_EQ(told->skipped, 0u);
    EXPECT_EQ(told->value, "10.0.0.2");
    EXPECT_EQ(co_await error_of(b.proclaim("x")), rlock::errc::not_owner);

    // A second candidate waits, woken by the resignation's unlock pushes.
    const auto waiting = spawn_beside(env.io, campaign_beside(b, "10.0.0.3"));
    EXPECT_TRUE(co_await rlock::test::poll_until(
        [&] { return env.listening_everywhere("scheduler"); }, 5s));
    co_await a.resign();
    EXPECT_TRUE(co_await completed(waiting, 10s));
    EXPECT_GT(b.term(), first);  // strictly greater
    told = co_await next_within(observer);
    RLOCK_CO_ASSERT(told.has_value());
    EXPECT_EQ(told->what, event::resigned);
    EXPECT_EQ(told->term, first);
    EXPECT_EQ(told->seq, 3u);
    told = co_await next_within(observer);
    RLOCK_CO_ASSERT(told.has_value());
    EXPECT_EQ(told->what, event::elected);
    EXPECT_EQ(told->term, b.term());
    EXPECT_EQ(told->seq, 4u);  // counted on from the majority's highest
    EXPECT_EQ(told->value, "10.0.0.3");
    EXPECT_EQ(told->skipped, 0u);
    const auto am = a.metrics();
    EXPECT_EQ(am.terms_won, 1u);
    EXPECT_EQ(am.resignations, 1u);
    EXPECT_FALSE(am.leading);
    EXPECT_TRUE(b.metrics().leading);
    co_await b.resign();
    observer.close();
    co_await env.close();
  });
}

TEST_P(quorum_election, a_minority_down_still_elects_and_is_observed_and_a_majority_down_is_told) {
  quorum_env env(GetParam(), 30s, 300ms);
  rlock::test::run(
      env.io,
      [&]() -> asio::awaitable<void> {
        co_await env.connect();
        rlock::quorum_election a(quorum_env::refs(env.a), "minority");
        rlock::quorum_election b(quorum_env::refs(env.b), "minority");
        const std::size_t minority = GetParam() - a.quorum();
        for (std::size_t i = 0; i < minority; ++i) env.servers[i]->kill_hard();
        auto observer = b.observe();
        const std::int64_t term = co_await a.campaign("here");
        EXPECT_GT(term, 0);
        const auto who = co_await b.leader();
        RLOCK_CO_ASSERT(who.has_value());
        EXPECT_EQ(who->term, term);
        EXPECT_EQ(who->value, "here");
        // Told by the live nodes (as the change, or as the record read once subscribed).
        auto told = co_await next_within(observer);
        RLOCK_CO_ASSERT(told.has_value());
        EXPECT_EQ(told->term, term);
        EXPECT_EQ(told->value, "here");
        co_await a.proclaim("there");
        told = co_await next_within(observer);
        RLOCK_CO_ASSERT(told.has_value());
        EXPECT_EQ(told->what, event::proclaimed);
        EXPECT_EQ(told->value, "there");
        co_await a.resign();
        // One more down: no majority answers; a campaign and leader() say so, naming nodes.
        env.servers[minority]->kill_hard();
        EXPECT_EQ(co_await error_of(b.try_campaign("late", 1s)), rlock::errc::quorum_unavailable);
        EXPECT_EQ(co_await error_of(b.leader()), rlock::errc::quorum_unavailable);
        EXPECT_NE(b.last_error().find(std::to_string(env.servers[0]->port())), std::string::npos)
            << b.last_error();
        observer.close();
        co_await env.close();
      },
      60s);
}

TEST_P(quorum_election, a_leader_whose_majority_loses_the_key_is_told_and_the_next_term_is_higher) {
  quorum_env env(GetParam(), 1500ms);
  rlock::test::run(
      env.io,
      [&]() -> asio::awaitable<void> {
        co_await env.connect();
        rlock::quorum_election a(quorum_env::refs(env.a), "taken");
        rlock::quorum_election b(quorum_env::refs(env.b), "taken");
        // The job runs while leading (with_leadership), and is cancelled when the lead is lost.
        std::int64_t first = 0;
        bool cancelled = false;
        std::error_code ended;
        auto job = [&](std::int64_t term) -> asio::awaitable<void> {
          first = term;
          asio::steady_timer forever(env.io, 60s);
          try {
            co_await forever.async_wait(asio::use_awaitable);
          } catch (const boost::system::system_error&) {
            cancelled = true;
            throw;
          }
        };
        const auto told = spawn_beside(env.io, lead_beside(a, job, &ended));
        EXPECT_TRUE(co_await rlock::test::poll_until([&] { return first != 0; }, 5s));
        const std::string key = env.prefix + "taken";
        for (std::size_t i = 0; i < a.quorum(); ++i) {
          env.raw[i]->command({"DEL", key});
          env.raw[i]->command({"EVAL", redisson_acquire, "1", key, "30000", "java-uuid:3"});
        }
        EXPECT_TRUE(co_await completed(told, 10s));
        EXPECT_TRUE(cancelled);
        EXPECT_EQ(ended, rlock::errc::lock_lost);
        EXPECT_FALSE(a.metrics().leading);
        EXPECT_EQ(a.metrics().failovers, 1u);
        EXPECT_EQ(co_await error_of(a.proclaim("still?")), rlock::errc::not_owner);
        for (std::size_t i = 0; i < GetParam(); ++i) env.raw[i]->command({"DEL", key});
        const std::int64_t second = co_await b.campaign("b");
        EXPECT_GT(second, first);
        const auto who = co_await a.leader();
        RLOCK_CO_ASSERT(who.has_value());
        EXPECT_EQ(who->term, second);
        EXPECT_EQ(who->value, "b");
        co_await b.resign();
        co_await env.close();
      },
      60s);
}

INSTANTIATE_TEST_SUITE_P(nodes, quorum_election, ::testing::Values(3u, 5u));

TEST(quorum_election_announce, keeps_the_highest_change_and_publishes_each_once) {
  rlock::test::redis_server server;
  rlock::test::raw_client raw(server.port());
  const auto source =
      rlock::detail::script_table[static_cast<std::size_t>(
                                      rlock::detail::script::quorum_election_announce)]
          .source;
  const std::string record = "rlock_election:{e}";
  const std::string channel = "rlock_election_channel:{e}";
  auto publishes = [&] {
    const auto info = raw.command({"INFO", "commandstats"});
    const std::string tag = "cmdstat_publish:calls=";
    const auto at = info.str.find(tag);
    return at == std::string::npos ? 0 : std::stoll(info.str.substr(at + tag.size()));
  };
  auto announce = [&](std::string_view term, std::string_view seq, std::string_view word,
                      std::string_view value) {
    return raw.command_int(
        {"EVAL", source, "2", record, channel, "u:1", term, seq, word, value, "publish"});
  };
  EXPECT_EQ(announce("4", "1", "elected", "a"), 1);
  EXPECT_EQ(publishes(), 1);
  // The same change written again after a lost answer: kept, published once.
  EXPECT_EQ(announce("4", "1", "elected", "a"), 1);
  EXPECT_EQ(publishes(), 1);
  EXPECT_EQ(announce("4", "2", "proclaimed", "b"), 1);
  EXPECT_EQ(publishes(), 2);
  // Older changes (a lower seq in the term, a lower term) are refused and not published.
  EXPECT_EQ(announce("4", "1", "elected", "a"), 0);
  EXPECT_EQ(announce("3", "9", "proclaimed", "old"), 0);
  EXPECT_EQ(publishes(), 2);
  EXPECT_EQ(raw.command({"HGET", record, "value"}).str, "b");
  // A later term at a lower seq (counted from another majority) is newer.
  EXPECT_EQ(announce("5", "2", "elected", "c"), 1);
  EXPECT_EQ(raw.command({"HGET", record, "owner"}).str, "u:1");
  EXPECT_EQ(announce("5", "3", "resigned", ""), 1);
  EXPECT_EQ(raw.command({"HGET", record, "owner"}).str, "");
  EXPECT_EQ(raw.command({"HGET", record, "term"}).str, "5");
  EXPECT_EQ(publishes(), 4);
}

TEST(quorum_election_blocking, campaigns_reads_and_resigns_from_threads) {
  std::vector<std::unique_ptr<rlock::test::redis_server>> servers;
  std::vector<std::unique_ptr<rlock::blocking::client>> a;
  std::vector<std::unique_ptr<rlock::blocking::client>> b;
  const auto prefix = rlock::test::unique_prefix();
  for (int i = 0; i < 3; ++i) {
    servers.push_back(std::make_unique<rlock::test::redis_server>());
    rlock::config cfg;
    cfg.port = servers.back()->port();
    cfg.key_prefix = prefix;
    a.push_back(std::make_unique<rlock::blocking::client>(cfg));
    b.push_back(std::make_unique<rlock::blocking::client>(cfg));
  }
  auto refs = [](auto& cs) {
    std::vector<std::reference_wrapper<rlock::blocking::client>> out;
    for (auto& c : cs) out.emplace_back(*c);
    return out;
  };
  rlock::blocking::quorum_election first(refs(a), "job");
  rlock::blocking::quorum_election second(refs(b), "job");
  const auto term = first.campaign("one");
  EXPECT_GT(term, 0);
  EXPECT_EQ(second.try_campaign_for("two", 0ms), std::nullopt);
  const auto who = second.leader();
  ASSERT_TRUE(who.has_value());
  EXPECT_EQ(who->value, "one");
  first.proclaim("one'");
  EXPECT_EQ(second.leader()->value, "one'");
  first.resign();
  const auto next = second.try_campaign_for("two", 5s);
  ASSERT_TRUE(next.has_value());
  EXPECT_GT(*next, term);
  // The end of a candidate that leads resigns: the other takes the lead at once.
  {
    rlock::blocking::quorum_election gone(refs(a), "job2");
    (void)gone.campaign("x");
  }
  rlock::blocking::quorum_election after(refs(b), "job2");
  EXPECT_TRUE(after.try_campaign_for("y", 0ms).has_value());
}

}  // namespace quorum_lock_test
