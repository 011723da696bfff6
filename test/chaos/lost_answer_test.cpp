// Every operation that changes something, with its answer lost (issue 51): the server runs it,
// the fault proxy holds its answer, the connection is cut. A release-kind call is written again
// on the next connection with the same request id, and its latch answers what the first run
// did without running it again; an acquire is never written again, and the lock asks the server
// whether it ran (reconciled). Each case checks the three things a lost answer could break: the
// request applied once (a change made by another client between the two runs is still there),
// and the caller told the first run's answer.
#include "chaos/fault_proxy.hpp"
#include "rlock/rlock.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <thread>

namespace lost_answer_test {

namespace asio = boost::asio;
using rlock::test::direction;
using rlock::test::poll_until;
using rlock::test::wait_until;
using namespace std::chrono_literals;

/// A client whose connection goes through a fault proxy, and a raw connection beside it, straight
/// to the server, for what another client sees and does.
struct lossy {
  asio::io_context io;
  rlock::config cfg = rlock::test::make_config();
  rlock::test::fault_proxy proxy{cfg.port};
  rlock::test::raw_client raw{cfg.port};
  rlock::client redis{io.get_executor(), through_proxy()};

  rlock::config through_proxy() {
    rlock::config c = cfg;
    c.port = proxy.port();
    return c;
  }

  std::string get(std::string_view key) { return raw.command({"GET", key}).str; }
  std::string hget(std::string_view key, std::string_view field) {
    return raw.command({"HGET", key, field}).str;
  }
  bool exists(std::string_view key) { return raw.command_int({"EXISTS", key}) == 1; }

  /// Runs `op` (an awaitable of its answer as text) with its answer lost: what the server sends
  /// is held until `ran()` sees the first run's effect on the server, `meanwhile()` changes the
  /// server as another client would, then the connection is cut (the held answer is lost with
  /// it) and the proxy heals. The answer the caller was told, or "error: ..." if it failed.
  asio::awaitable<std::string> answer_lost(
      std::function<asio::awaitable<std::string>()> op, std::function<bool()> ran,
      std::function<void()> meanwhile = [] {}) {
    proxy.drop(direction::to_client);
    std::string told;
    bool done = false;
    asio::steady_timer bell(io, std::chrono::steady_clock::time_point::max());
    asio::co_spawn(io, op(), [&](std::exception_ptr e, std::string answer) {
      told = std::move(answer);
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (const boost::system::system_error& error) {
          told = "error: " + error.code().message();
        }
      }
      done = true;
      bell.cancel();
    });
    // Nothing announces that the server ran it: its effect is looked for.
    const bool seen = co_await poll_until(ran, 10s);
    EXPECT_TRUE(seen) << "the first run's effect never showed on the server";
    EXPECT_FALSE(done) << "answered although its answer was held: " << told;
    meanwhile();
    proxy.cut_all();
    proxy.heal();
    co_await wait_until(
        bell, [&] { return done; }, 30s);
    EXPECT_TRUE(done) << "no answer after the reconnect";
    co_return told;
  }
};

std::string text(bool b) { return b ? "true" : "false"; }

// --- the semaphore's admin calls ---------------------------------------------------------------

TEST(lost_answer, try_set_permits_answers_true_once_it_set_the_count) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    auto sem = t.redis.get_semaphore("set");
    const std::string key(sem.key());
    const auto told = co_await t.answer_lost(
        [&]() -> asio::awaitable<std::string> { co_return text(co_await sem.try_set_permits(5)); },
        [&] { return t.exists(key); });
    EXPECT_EQ(told, "true");
    EXPECT_EQ(t.get(key), "5");
    co_await t.redis.close();
  });
}

TEST(lost_answer, add_permits_adds_once_and_answers_the_first_count) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    auto sem = t.redis.get_semaphore("add");
    const std::string key(sem.key());
    EXPECT_TRUE(co_await sem.try_set_permits(5));
    const auto told = co_await t.answer_lost(
        [&]() -> asio::awaitable<std::string> {
          co_return std::to_string(co_await sem.add_permits(3));
        },
        [&] { return t.get(key) == "8"; });
    EXPECT_EQ(told, "8");
    EXPECT_EQ(t.get(key), "8");  // not 11
    co_await t.redis.close();
  });
}

TEST(lost_answer, drain_answers_the_permits_it_took_and_takes_no_later_ones) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    auto sem = t.redis.get_semaphore("drain");
    const std::string key(sem.key());
    EXPECT_TRUE(co_await sem.try_set_permits(5));
    const auto told = co_await t.answer_lost(
        [&]() -> asio::awaitable<std::string> { co_return std::to_string(co_await sem.drain()); },
        [&] { return t.get(key) == "0"; },
        // Another client gives two permits back between the run and the retry.
        [&] {
          t.raw.command({"INCRBY", key, "2"});
        });
    EXPECT_EQ(told, "5");
    EXPECT_EQ(t.get(key), "2");  // the later permits stay
    co_await t.redis.close();
  });
}

TEST(lost_answer, release_of_permits_owned_by_nobody_adds_them_once) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    auto sem = t.redis.get_semaphore("give");
    const std::string key(sem.key());
    EXPECT_TRUE(co_await sem.try_set_permits(1));
    const auto told = co_await t.answer_lost(
        [&]() -> asio::awaitable<std::string> {
          co_await sem.release(2);
          co_return "done";
        },
        [&] { return t.get(key) == "3"; });
    EXPECT_EQ(told, "done");
    EXPECT_EQ(t.get(key), "3");  // not 5
    co_await t.redis.close();
  });
}

TEST(lost_answer, a_permit_released_by_id_answers_true_once_released) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    auto sem = t.redis.get_permit_expirable_semaphore("by-id");
    const std::string key(sem.key());
    EXPECT_TRUE(co_await sem.try_set_permits(1));
    auto held = co_await sem.acquire();
    const std::string id = held.id();
    EXPECT_EQ(t.get(key), "0");
    const auto told = co_await t.answer_lost(
        [&]() -> asio::awaitable<std::string> { co_return text(co_await sem.release(id)); },
        [&] { return t.get(key) == "1"; });
    EXPECT_EQ(told, "true");  // not "false: no such permit"
    EXPECT_EQ(t.get(key), "1");
    co_await t.redis.close();
  });
}

TEST(lost_answer, an_acquisition_of_permits_is_reconciled_and_takes_them_once) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    auto sem = t.redis.get_semaphore("take");
    const std::string key(sem.key());
    EXPECT_TRUE(co_await sem.try_set_permits(5));
    const auto told = co_await t.answer_lost(
        [&]() -> asio::awaitable<std::string> {
          auto p = co_await sem.try_acquire(2, 20s);
          co_return p ? std::to_string(p->count()) : "none";
        },
        [&] { return t.get(key) == "3"; });
    EXPECT_EQ(told, "2");
    EXPECT_EQ(t.get(key), "3");
    co_await t.redis.close();
  });
}

TEST(lost_answer, an_acquisition_answered_after_its_lease_could_end_is_taken_afresh) {
  // The hold the lost attempt made is still in the holds (nothing reclaimed it yet) when the
  // question finds it, but its lease ran out during the outage: the server would give its
  // permits to the next acquirer. Handed out, it would make a believing holder the server does
  // not back; so it is given back and taken again, with a lease that starts now.
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    auto sem = t.redis.get_semaphore("late");
    const std::string key(sem.key());
    const std::string holds = "{" + key + "}:timeout";
    constexpr auto lease = 300ms;
    EXPECT_TRUE(co_await sem.try_set_permits(5));
    const auto server_ms = [&] {
      const auto time = t.raw.command({"TIME"});
      return std::stoll(time.elements.at(0).str) * 1000 +
             std::stoll(time.elements.at(1).str) / 1000;
    };
    std::optional<rlock::permit> held;
    const auto told = co_await t.answer_lost(
        [&]() -> asio::awaitable<std::string> {
          held = co_await sem.try_acquire(1, 20s, lease);
          co_return held ? std::to_string(held->count()) : "none";
        },
        [&] { return t.get(key) == "4"; },
        // The outage outlives the lease (the fault's length, not a synchronisation).
        [&] { std::this_thread::sleep_for(lease + 100ms); });
    EXPECT_EQ(told, "1");
    EXPECT_EQ(t.get(key), "4");  // one permit taken, once: the stale hold came back first
    EXPECT_EQ(t.raw.command_int({"ZCARD", holds}), 1);
    // The hold the caller has ends a lease after its retry, not after the lost attempt.
    if (held) {
      const auto ends = t.raw.command({"ZSCORE", holds, held->owner_field()});
      EXPECT_GT(ends.real, static_cast<double>(server_ms()))
          << "the caller holds a hold that ended";
    }
    if (held) co_await held->unlock();
    EXPECT_EQ(t.get(key), "5");
    co_await t.redis.close();
  });
}

TEST(lost_answer, a_lease_shorter_than_the_round_trip_fails_the_acquisition_and_keeps_nothing) {
  // Every answer comes later than the lease allows after its write: each hold is given back,
  // and lock() fails after a few instead of retrying for ever.
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    auto l = t.redis.get_lock("short");
    const std::string key(l.key());
    t.proxy.set_delay(direction::to_client, 80ms);
    boost::system::error_code code;
    std::string text;
    try {
      co_await l.lock(50ms);
    } catch (const boost::system::system_error& e) {
      code = e.code();
      text = e.what();
    }
    EXPECT_EQ(code, rlock::errc::lock_lost) << text;
    EXPECT_NE(text.find("lease longer than the round trip"), std::string::npos) << text;
    EXPECT_FALSE(co_await l.is_held());
    t.proxy.heal();
    EXPECT_FALSE(t.exists(key)) << "a hold was left behind";
    co_await t.redis.close();
  });
}

// --- the count-down latch ------------------------------------------------------------------------

TEST(lost_answer, try_set_count_answers_true_once_it_set_the_count) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    rlock::count_down_latch latch(t.redis, "set");
    const std::string key(latch.key());
    const auto told = co_await t.answer_lost(
        [&]() -> asio::awaitable<std::string> { co_return text(co_await latch.try_set_count(3)); },
        [&] { return t.exists(key); });
    EXPECT_EQ(told, "true");
    EXPECT_EQ(t.get(key), "3");
    co_await t.redis.close();
  });
}

TEST(lost_answer, remove_answers_true_and_leaves_a_count_set_since) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    rlock::count_down_latch latch(t.redis, "gone");
    const std::string key(latch.key());
    EXPECT_TRUE(co_await latch.try_set_count(3));
    const auto told = co_await t.answer_lost(
        [&]() -> asio::awaitable<std::string> { co_return text(co_await latch.remove()); },
        [&] { return !t.exists(key); },
        // Another client sets a new count between the run and the retry.
        [&] {
          t.raw.command({"SET", key, "7"});
        });
    EXPECT_EQ(told, "true");
    EXPECT_EQ(t.get(key), "7");
    co_await t.redis.close();
  });
}

TEST(lost_answer, count_down_counts_once) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    rlock::count_down_latch latch(t.redis, "down");
    const std::string key(latch.key());
    EXPECT_TRUE(co_await latch.try_set_count(3));
    const auto told = co_await t.answer_lost(
        [&]() -> asio::awaitable<std::string> {
          co_await latch.count_down();
          co_return "done";
        },
        [&] { return t.get(key) == "2"; });
    EXPECT_EQ(told, "done");
    EXPECT_EQ(t.get(key), "2");
    co_await t.redis.close();
  });
}

// --- the locks' releases and force unlocks -------------------------------------------------------

/// A re-entered hold released once with its answer lost: one hold goes, not both.
template <typename Lock>
asio::awaitable<void> release_once(lossy& t, Lock lock) {
  const std::string key(lock.key());
  const std::string field(lock.owner_field());
  co_await lock.lock();
  co_await lock.lock();
  EXPECT_EQ(t.hget(key, field), "2");
  const auto told = co_await t.answer_lost(
      [&]() -> asio::awaitable<std::string> {
        co_await lock.unlock();
        co_return "done";
      },
      [&] { return t.hget(key, field) == "1"; });
  EXPECT_EQ(told, "done");
  EXPECT_EQ(t.hget(key, field), "1") << "released twice";
  EXPECT_EQ(co_await lock.hold_count(), 1);
  co_await lock.unlock();
  EXPECT_FALSE(t.exists(key));
}

/// A force unlock with its answer lost, and another owner taking the lock (`take`, on the raw
/// connection) between the run and the retry: answered true, and the new holder keeps it.
template <typename Lock, typename Take>
asio::awaitable<void> force_once(lossy& t, Lock lock, Take take) {
  const std::string key(lock.key());
  co_await lock.lock();
  const auto told = co_await t.answer_lost(
      [&]() -> asio::awaitable<std::string> { co_return text(co_await lock.force_unlock()); },
      [&] { return !t.exists(key); }, [&] { take(key); });
  EXPECT_EQ(told, "true");
  EXPECT_TRUE(t.exists(key)) << "the retry deleted the lock another owner took since";
}

void take_as_other(rlock::test::raw_client& raw, const std::string& key) {
  raw.command({"HSET", key, "other:1", "1"});
  raw.command({"PEXPIRE", key, "30000"});
}

TEST(lost_answer, a_reentrant_release_releases_one_hold) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    co_await release_once(t, t.redis.get_lock("reentrant"));
    co_await t.redis.close();
  });
}

TEST(lost_answer, a_fair_release_releases_one_hold) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    co_await release_once(t, t.redis.get_fair_lock("fair"));
    co_await t.redis.close();
  });
}

TEST(lost_answer, a_spin_release_releases_one_hold) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    co_await release_once(t, t.redis.get_spin_lock("spin"));
    co_await t.redis.close();
  });
}

TEST(lost_answer, a_read_release_releases_one_hold) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    co_await release_once(t, t.redis.get_read_write_lock("rw-read").read_lock());
    co_await t.redis.close();
  });
}

TEST(lost_answer, a_write_release_releases_one_hold) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    co_await release_once(t, t.redis.get_read_write_lock("rw-write").write_lock());
    co_await t.redis.close();
  });
}

TEST(lost_answer, a_fenced_acquisition_is_reconciled_with_its_own_token) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    auto lock = t.redis.get_fenced_lock("fenced");
    const std::string key(lock.key());
    const std::string counter = lock.token_key();
    const std::string field(lock.owner_field());
    EXPECT_EQ(co_await lock.lock(), 1);
    co_await lock.unlock();
    const auto told = co_await t.answer_lost(
        [&]() -> asio::awaitable<std::string> {
          const auto token = co_await lock.try_lock(20s);
          co_return token ? std::to_string(*token) : "none";
        },
        [&] { return t.hget(key, field) == "1"; });
    EXPECT_EQ(told, "2");
    EXPECT_EQ(t.get(counter), "2");  // one increment: the attempt was not written again
    EXPECT_EQ(t.hget(key, field), "1");
    co_await lock.unlock();
    co_await t.redis.close();
  });
}

TEST(lost_answer, a_force_unlock_deletes_once) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    co_await force_once(t, t.redis.get_lock("force"),
                        [&](const std::string& key) { take_as_other(t.raw, key); });
    co_await t.redis.close();
  });
}

TEST(lost_answer, a_fair_force_unlock_deletes_once) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    co_await force_once(t, t.redis.get_fair_lock("force-fair"),
                        [&](const std::string& key) { take_as_other(t.raw, key); });
    co_await t.redis.close();
  });
}

TEST(lost_answer, a_spin_force_unlock_deletes_once) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    co_await force_once(t, t.redis.get_spin_lock("force-spin"),
                        [&](const std::string& key) { take_as_other(t.raw, key); });
    co_await t.redis.close();
  });
}

TEST(lost_answer, a_write_force_unlock_deletes_once) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    co_await force_once(t, t.redis.get_read_write_lock("force-rw").write_lock(),
                        [&](const std::string& key) {
                          t.raw.command({"HSET", key, "mode", "write", "other:1:write", "1"});
                          t.raw.command({"PEXPIRE", key, "30000"});
                        });
    co_await t.redis.close();
  });
}

// --- elections ---------------------------------------------------------------------------------

TEST(lost_answer, a_campaign_is_reconciled_with_its_own_term_and_announced_once) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    rlock::election e(t.redis, "elect");
    const std::string key(e.key());
    const std::string field(e.owner());
    EXPECT_EQ(co_await e.campaign("first"), 1);
    co_await e.resign();
    const auto told = co_await t.answer_lost(
        [&]() -> asio::awaitable<std::string> {
          const auto term = co_await e.try_campaign("second", 20s);
          co_return term ? std::to_string(*term) : "none";
        },
        [&] { return t.hget(key, field) == "1"; });
    EXPECT_EQ(told, "2");
    EXPECT_EQ(e.term(), 2);
    // Written once: one term taken, one change counted, one hold.
    EXPECT_EQ(t.get("redisson_lock_token:{" + key + "}"), "2");
    EXPECT_EQ(t.hget(e.record_key(), "seq"), "3");  // elected, resigned, elected
    EXPECT_EQ(t.hget(e.record_key(), "value"), "second");
    EXPECT_EQ(t.hget(key, field), "1");
    EXPECT_GE(t.redis.stats().reconciled_acquires, 1u);
    co_await e.resign();
    co_await t.redis.close();
  });
}

TEST(lost_answer, a_proclaim_announces_once_and_a_later_change_stays) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    rlock::election e(t.redis, "proclaim");
    co_await e.campaign("v1");
    const std::string record = e.record_key();
    const auto told = co_await t.answer_lost(
        [&]() -> asio::awaitable<std::string> {
          co_await e.proclaim("v2");
          co_return "proclaimed";
        },
        [&] { return t.hget(record, "value") == "v2"; },
        // Meanwhile the record moves on (as another proclaim of the leader would move it): the
        // retry must not announce v2 over it.
        [&] {
          t.raw.command({"HSET", record, "value", "v3", "seq", "9"});
        });
    EXPECT_EQ(told, "proclaimed");
    EXPECT_EQ(t.hget(record, "value"), "v3");
    EXPECT_EQ(t.hget(record, "seq"), "9");
    co_await e.resign();
    co_await t.redis.close();
  });
}

TEST(lost_answer, a_resignation_resigns_once_and_leaves_the_next_leader_alone) {
  lossy t;
  rlock::test::run(t.io, [&]() -> asio::awaitable<void> {
    co_await t.redis.connect();
    rlock::election e(t.redis, "resign");
    const std::string key(e.key());
    co_await e.campaign("me");
    const auto told = co_await t.answer_lost(
        [&]() -> asio::awaitable<std::string> {
          co_await e.resign();
          co_return "resigned";
        },
        [&] { return !t.exists(key); },
        // Another instance leads before the retry arrives.
        [&] {
          t.raw.command({"HSET", key, "other:1", "1"});
          t.raw.command({"PEXPIRE", key, "30000"});
        });
    EXPECT_EQ(told, "resigned");
    EXPECT_EQ(t.hget(key, "other:1"), "1");         // the retry released nothing
    EXPECT_EQ(t.hget(e.record_key(), "seq"), "2");  // elected, resigned: once
    t.raw.command({"DEL", key});
    co_await t.redis.close();
  });
}

}  // namespace lost_answer_test
