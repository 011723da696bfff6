// rlock::multi_lock (Redisson's RedissonMultiLock) against a real server: all or nothing over
// locks of several kinds and clients, one global order (two multi-locks over the same locks in
// different orders never deadlock), release in reverse, a failure or a cancellation part-way
// giving back what was taken, one lost() for the group, and the blocking facade.
#include "rlock/rlock.hpp"
#include "script/script_batch.hpp"
#include "script/scripts.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace multi_lock_test {

namespace asio = boost::asio;
using rlock::test::error_of;
using rlock::test::make_config;
using rlock::test::poll_until;
using rlock::test::wait_until;
using namespace std::chrono_literals;

std::int64_t existing(rlock::test::raw_client& raw, const std::vector<rlock::lock_handle>& ls) {
  std::int64_t n = 0;
  for (const auto& l : ls) n += raw.command_int({"EXISTS", std::string(l.key())});
  return n;
}

/// An operator's DEL of `key` while `watched` (a member or the group) is held, then a bounded
/// wait for watched.lost(): the watchdog's next renewal finds the hash gone. Whether lost()
/// reported it. What the spawned lost() touches is shared: it may end after this returns.
template <typename Watched>
asio::awaitable<bool> deleted_and_lost(rlock::test::raw_client& raw, std::string_view key,
                                       Watched& watched) {
  struct heard {
    explicit heard(asio::any_io_executor ex) : bell(std::move(ex)) {}
    bool lost = false;
    asio::steady_timer bell;
  };
  auto h = std::make_shared<heard>(co_await asio::this_coro::executor);
  asio::co_spawn(h->bell.get_executor(), watched.lost(), [h](std::exception_ptr e) {
    h->lost = !e;
    h->bell.cancel();
  });
  raw.command({"DEL", std::string(key)});
  // Named, not temporaries inside co_await: g++ 12 frees some of those too early (a lambda
  // holding a shared_ptr among them).
  const auto heard_it = [h] { return h->lost; };
  co_await wait_until(h->bell, heard_it, 10s);
  co_return h->lost;
}

TEST(multi_lock, takes_every_member_of_any_kind_or_none_and_releases_in_reverse_order) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client c(io.get_executor(), cfg);
  rlock::client other(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::raw_client events(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    co_await other.connect();
    // Given out of order, taken in the order of their keys: a, b, c.
    std::vector<rlock::lock_handle> members{
        c.get_fair_lock("c"), c.get_read_write_lock("a").write_lock(), c.get_lock("b")};
    rlock::multi_lock m(members);
    RLOCK_CO_ASSERT(m.members().size() == 3u);
    EXPECT_EQ(m.members()[0].name(), "a");
    EXPECT_EQ(m.members()[1].name(), "b");
    EXPECT_EQ(m.members()[2].name(), "c");
    // The middle one is another owner's: none is taken, and a, taken first, is given back.
    auto blocker = other.get_lock("b");
    co_await blocker.lock();
    EXPECT_FALSE(co_await m.try_lock(150ms));
    EXPECT_EQ(existing(raw, {members[0], members[1]}), 0);
    EXPECT_FALSE(co_await m.try_lock());
    EXPECT_EQ(existing(raw, {members[0], members[1]}), 0);
    co_await blocker.unlock();
    // A wait too long to represent is no bound (its deadline once overflowed: UBSan's finding).
    EXPECT_TRUE(co_await m.try_lock(std::chrono::milliseconds::max()));
    EXPECT_EQ(existing(raw, members), 3);
    EXPECT_FALSE(co_await other.get_lock("b").try_lock());
    // Released in reverse order: c, b, a (the server's keyspace events, in order).
    raw.command({"CONFIG", "SET", "notify-keyspace-events", "Kg"});
    events.send({"PSUBSCRIBE", "__keyspace@0__:" + cfg.key_prefix + "*"});
    (void)events.read_push(5s);
    co_await m.unlock();
    std::vector<std::string> deleted;
    for (int i = 0; i < 3; ++i) {
      const auto push = events.read_push(5s);
      RLOCK_CO_ASSERT(push.elements.size() == 4u);
      deleted.push_back(push.elements[2].str.substr(push.elements[2].str.rfind(':') + 1));
    }
    raw.command({"CONFIG", "SET", "notify-keyspace-events", ""});
    EXPECT_EQ(deleted, (std::vector<std::string>{"c", "b", "a"}));
    EXPECT_EQ(existing(raw, members), 0);
    co_await c.close();
    co_await other.close();
  });
}

TEST(multi_lock, two_multi_locks_over_the_same_locks_in_opposite_orders_never_deadlock) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    constexpr int rounds = 40;
    int done = 0;
    asio::steady_timer bell(io);
    auto worker = [&](std::vector<rlock::lock_handle> members) -> asio::awaitable<void> {
      rlock::multi_lock m(std::move(members));
      for (int i = 0; i < rounds; ++i) {
        co_await m.lock();  // no bound: a cycle would hang here
        co_await rlock::test::sleep_for(1ms);
        co_await m.unlock();
      }
      ++done;
      bell.cancel();
    };
    asio::co_spawn(io, worker({a.get_lock("x"), a.get_lock("y"), a.get_lock("z")}), asio::detached);
    asio::co_spawn(io, worker({b.get_lock("z"), b.get_lock("y"), b.get_lock("x")}), asio::detached);
    co_await wait_until(
        bell, [&] { return done == 2; }, 30s);
    EXPECT_EQ(done, 2);
    co_await a.close();
    co_await b.close();
  });
}

TEST(multi_lock, a_failure_or_a_cancellation_part_way_gives_back_what_was_taken) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client one(io.get_executor(), cfg);
  rlock::client two(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await one.connect();
    co_await two.connect();
    // Members on two clients. The last in order is a non-reentrant lock its owner already
    // holds: refused at once, and the two taken before go back.
    auto held = two.get_non_reentrant_lock("p3");
    co_await held.lock();
    std::vector<rlock::lock_handle> members{one.get_lock("p1"), two.get_lock("p2"), held};
    rlock::multi_lock m(members);
    EXPECT_EQ(co_await error_of(m.lock()), rlock::errc::reentry_refused);
    EXPECT_EQ(existing(raw, {members[0], members[1]}), 0);
    EXPECT_EQ(co_await held.hold_count(), 1);
    co_await held.unlock();
    // A lock() waiting on its last member, cancelled: the first two go back, nothing is left.
    auto blocker = one.get_lock("p3");
    co_await blocker.lock();
    rlock::multi_lock waiting({one.get_lock("p1"), two.get_lock("p2"), two.get_lock("p3")});
    asio::cancellation_signal stop;
    std::error_code cancelled;
    bool finished = false;
    asio::steady_timer bell(io);
    asio::co_spawn(io, waiting.lock(),
                   asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr e) {
                     try {
                       if (e) std::rethrow_exception(e);
                     } catch (const boost::system::system_error& err) {
                       cancelled = err.code();
                     }
                     finished = true;
                     bell.cancel();
                   }));
    RLOCK_CO_ASSERT(co_await poll_until([&] {
      return raw.command_int({"EXISTS", std::string(members[1].key())}) == 1;
    }));
    stop.emit(asio::cancellation_type::terminal);
    co_await wait_until(
        bell, [&] { return finished; }, 10s);
    EXPECT_EQ(cancelled, std::errc::operation_canceled);
    EXPECT_EQ(existing(raw, {members[0], members[1]}), 0);
    co_await blocker.unlock();
    // Bad input: no member, one lock twice.
    EXPECT_THROW(rlock::multi_lock(std::vector<rlock::lock_handle>{}), boost::system::system_error);
    EXPECT_THROW(rlock::multi_lock({one.get_lock("d"), two.get_fair_lock("d")}),
                 boost::system::system_error);
    EXPECT_EQ(co_await error_of(m.try_lock(-1ms)), rlock::errc::invalid_argument);
    co_await one.close();
    co_await two.close();
  });
}

TEST(multi_lock, one_lost_for_the_group_when_any_member_is_lost) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.watchdog_timeout = 600ms;
  rlock::client c(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    std::vector<rlock::lock_handle> members{c.get_lock("l1"), c.get_spin_lock("l2"),
                                            c.get_fair_lock("l3")};
    rlock::multi_lock m(members);
    co_await m.lock();
    // The second member's hash goes (an operator's DEL): its next renewal finds it gone.
    EXPECT_TRUE(co_await deleted_and_lost(raw, members[1].key(), m));
    // Unlock releases the others and reports the lost one.
    EXPECT_EQ(co_await error_of(m.unlock()), rlock::errc::not_owner);
    EXPECT_EQ(existing(raw, members), 0);
    // With explicit leases no member is kept by the watchdog: lost() says so at once.
    co_await m.lock(5s);
    EXPECT_EQ(co_await error_of(m.lost()), rlock::errc::not_owner);
    co_await m.unlock();
    co_await c.close();
  });
}

TEST(multi_lock, a_member_lost_while_a_later_one_is_awaited_makes_the_group_start_again) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.watchdog_timeout = 600ms;
  rlock::client c(io.get_executor(), cfg);
  rlock::client other(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    co_await other.connect();
    auto blocker = other.get_lock("g2");
    co_await blocker.lock();
    std::vector<rlock::lock_handle> members{c.get_lock("g1"), c.get_lock("g2")};
    rlock::multi_lock m(members);
    bool done = false;
    std::exception_ptr failure;
    asio::steady_timer bell(io);
    asio::co_spawn(io, m.lock(), [&](std::exception_ptr e) {
      failure = e;
      done = true;
      bell.cancel();
    });
    // g1 is taken and the group waits for g2; then g1's hash goes (an operator's DEL) and its
    // watchdog reports it lost, all before g2 comes free.
    RLOCK_CO_ASSERT(co_await poll_until([&] {
      return raw.command_int({"EXISTS", std::string(members[0].key())}) == 1;
    }));
    // The server took it; the client knows once the attempt's answer is in. A question on the
    // same connection is answered after it (lost() asked before would find no watchdog hold).
    (void)co_await members[0].is_locked();
    RLOCK_CO_ASSERT(co_await deleted_and_lost(raw, members[0].key(), members[0]));
    EXPECT_FALSE(done);
    co_await blocker.unlock();
    co_await wait_until(
        bell, [&] { return done; }, 10s);
    RLOCK_CO_ASSERT(done);
    EXPECT_EQ(failure, nullptr);
    // The group holds both: g1 was taken again, not handed out as held while it was gone.
    EXPECT_EQ(co_await members[0].hold_count(), 1);
    EXPECT_EQ(co_await members[1].hold_count(), 1);
    co_await m.unlock();
    EXPECT_EQ(existing(raw, members), 0);
    co_await c.close();
    co_await other.close();
  });
}

TEST(multi_lock, with_lock_runs_work_under_every_member_and_cancels_it_when_one_is_lost) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.watchdog_timeout = 600ms;
  rlock::client c(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    std::vector<rlock::lock_handle> members{c.get_lock("w1"), c.get_fair_lock("w2")};
    rlock::multi_lock m(members);
    // Named awaitables, not temporaries inside co_await: g++ 12 destroys some temporaries of a
    // co_await expression twice (the by-value multi_lock would lose a reference).
    auto counted = rlock::with_lock(m, [&]() -> asio::awaitable<int> {
      EXPECT_EQ(existing(raw, members), 2);
      co_return 42;
    });
    const int sum = co_await std::move(counted);
    EXPECT_EQ(sum, 42);
    EXPECT_EQ(existing(raw, members), 0);
    // A member deleted under the work: the work is cancelled, lock_lost, the other released.
    bool cancelled = false;
    const std::string first_key(members[0].key());
    auto doomed = rlock::with_lock(m, [&]() -> asio::awaitable<void> {
      raw.command({"DEL", first_key});
      try {
        co_await rlock::test::sleep_for(30s);
      } catch (...) {  // Asio's operation_aborted (boost::system::system_error)
        cancelled = true;
        throw;
      }
    });
    const auto lost = co_await error_of(std::move(doomed));
    EXPECT_EQ(lost, rlock::errc::lock_lost);
    EXPECT_TRUE(cancelled);
    EXPECT_EQ(existing(raw, members), 0);
    co_await c.close();
  });
}

TEST(multi_lock, the_blocking_facade_is_lockable_over_locks_of_any_kinds) {
  rlock::blocking::client c(make_config());
  auto a = c.get_lock("ba");
  auto b = c.get<rlock::fair_lock>("bb");
  rlock::blocking::multi_lock m(b, a);
  {
    std::unique_lock both(m);
    std::thread other([&] {
      auto theirs_a = c.get_lock("ba");
      auto theirs_b = c.get<rlock::fair_lock>("bb");
      rlock::blocking::multi_lock mine(theirs_a, theirs_b);
      EXPECT_FALSE(mine.try_lock_for(50ms));
      // Its first member in key order (ba) is the main thread's: nothing is taken.
      EXPECT_FALSE(theirs_a.is_held());
    });
    other.join();
  }
  EXPECT_FALSE(a.is_locked());
  EXPECT_FALSE(b.is_locked());
}

// --- batches: the members' scripts in one call per node ----------------------------------------

/// Every script runs inside its batch script (script_batch.hpp) as it runs alone: the batch of
/// each compiles on a real server, and a batch of the acquire script answers each call as three
/// EVALSHAs would (taken, busy with the holder's TTL, a key of the wrong type's error) while the
/// calls around an error still run.
TEST(multi_lock, every_script_runs_in_a_batch_as_it_runs_alone) {
  namespace rd = rlock::detail;
  const auto cfg = make_config();
  rlock::test::raw_client raw(cfg.port);
  for (std::size_t i = 0; i < rd::script_count; ++i) {
    const auto s = static_cast<rd::script>(i);
    const auto sha = raw.command({"SCRIPT", "LOAD", rd::batch_source(s)});
    EXPECT_EQ(sha.str.size(), 40u) << "script " << i << ": " << sha.str;
  }
  const auto sha = raw.command({"SCRIPT", "LOAD", rd::batch_source(rd::script::acquire)}).str;
  ASSERT_EQ(raw.command({"DEL", "batch:a", "batch:b", "batch:c"}).type, rd::resp3::type::number);
  raw.command_int({"HSET", "batch:b", "other:1", "1"});
  raw.command_int({"PEXPIRE", "batch:b", "20000"});
  raw.command({"SET", "batch:c", "not a hash"});
  // KEYS a b c; ARGV: 3 calls, (1 key, 2 args) each, then each call's lease and field.
  const auto r =
      raw.command({"EVALSHA", sha, "3", "batch:a", "batch:b", "batch:c", "3", "1", "2", "1", "2",
                   "1", "2", "30000", "me:1", "30000", "me:1", "30000", "me:1"});
  auto replies = rd::split_batch_reply(rd::resp3::value(r), 3);
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_FALSE(replies[0].ec);
  EXPECT_TRUE(replies[0].value.is_null()) << "taken: nil, as Redisson's script answers";
  EXPECT_FALSE(replies[1].ec);
  EXPECT_GT(replies[1].value.integer, 0) << "busy: the holder's TTL";
  EXPECT_EQ(replies[2].ec, rlock::errc::server_error);
  EXPECT_NE(replies[2].value.str.find("WRONGTYPE"), std::string::npos) << replies[2].value.str;
  EXPECT_EQ(raw.command({"HGET", "batch:a", "me:1"}).str, "1");
  EXPECT_TRUE(raw.command({"HGET", "batch:b", "me:1"}).is_null());
}

/// A multi-lock of ten on one server is one script call to take them and one to give them back
/// (INFO commandstats), and a flushed script cache (SCRIPT FLUSH) costs a reload, not a failure.
TEST(multi_lock, ten_members_on_one_server_are_one_script_call_each_way) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client c(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    std::vector<rlock::lock_handle> members;
    for (int i = 0; i < 10; ++i) members.push_back(c.get_lock("batched-" + std::to_string(i)));
    rlock::multi_lock group(members);
    co_await group.lock(10s);  // the batch scripts get loaded
    co_await group.unlock();
    for (int round = 0; round < 2; ++round) {
      // The second round after a SCRIPT FLUSH: each batch is refused once (NOSCRIPT), loaded
      // again and run.
      const std::int64_t expected = round == 0 ? 1 : 2;
      const auto before = raw.calls_of("evalsha");
      co_await group.lock(10s);  // a lease: no renewals meanwhile
      EXPECT_EQ(raw.calls_of("evalsha") - before, expected) << "scripts run to take ten members";
      EXPECT_EQ(existing(raw, members), 10);
      const auto held = raw.calls_of("evalsha");
      co_await group.unlock();
      EXPECT_EQ(raw.calls_of("evalsha") - held, expected) << "scripts run to give them back";
      EXPECT_EQ(existing(raw, members), 0);
      raw.command({"SCRIPT", "FLUSH"});
    }
    co_await c.close();
  });
}

}  // namespace multi_lock_test
