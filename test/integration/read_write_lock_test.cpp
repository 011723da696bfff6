// rlock::read_write_lock (Redisson's RReadWriteLock) against a real server: readers share it and
// writers exclude everyone, a write unlock wakes every waiting reader and the last read unlock a
// writer, a writer downgrades and a reader is refused the upgrade, read holds keep their own
// timeout keys (renewed by the watchdog), and the fault cases (a cancelled waiter, a waiter
// whose connection is killed, an answer that comes after its caller gave up). Redisson's side is
// in interop_test.cpp.
#include "rlock/rlock.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

namespace read_write_lock_test {

namespace asio = boost::asio;
using rlock::test::error_of;
using rlock::test::make_config;
using rlock::test::poll_until;
using rlock::test::wait_until;
using namespace std::chrono_literals;

/// Redisson's per-hold timeout key of read hold `n` of `field`.
std::string hold_timeout(std::string_view key, std::string_view field, int n) {
  return "{" + std::string(key) + "}:" + std::string(field) +
         ":rwlock_timeout:" + std::to_string(n);
}

std::string rw_channel(std::string_view key) {
  return "redisson_rwlock:{" + std::string(key) + "}";
}

/// The waiting writers' marks (rw_priority::writers): a zset, write field -> server ms.
std::string writer_marks(std::string_view key) {
  return "{" + std::string(key) + "}:rlock_writers";
}

/// The waiting writers' queue (rw_priority::writers): a zset, write field -> when it queued.
std::string writer_queue(std::string_view key) {
  return "{" + std::string(key) + "}:rlock_writer_queue";
}

/// Starts `lock.try_lock(wait)` beside the test: `took` gets its answer, then `bell` rings (for
/// wait_until). `lock` and `took` must outlive it.
template <typename Lock>
void try_lock_aside(asio::io_context& io, Lock& lock, std::chrono::milliseconds wait, bool& took,
                    asio::steady_timer& bell) {
  asio::co_spawn(
      io,
      [&lock, wait, &took, &bell]() -> asio::awaitable<void> {
        took = co_await lock.try_lock(wait);
        bell.cancel();
      },
      asio::detached);
}

/// The server's clock in ms, as the scripts read it.
std::int64_t server_ms(rlock::test::raw_client& raw) {
  const auto t = raw.command({"TIME"});
  return std::stoll(t.elements.at(0).str) * 1000 + std::stoll(t.elements.at(1).str) / 1000;
}

TEST(read_write_lock, readers_share_it_and_a_writer_excludes_them_both_ways) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto first = a.get_read_write_lock("shared");
    auto second = b.get_read_write_lock("shared");
    auto writer = a.get_read_write_lock("shared");
    auto r1 = first.read_lock();
    auto r2 = second.read_lock();
    const auto key = std::string(r1.key());
    EXPECT_TRUE(co_await r1.try_lock());
    EXPECT_TRUE(co_await r2.try_lock());
    EXPECT_TRUE(co_await r2.try_lock(5s, 60s));  // a second read hold, with its own lease
    EXPECT_EQ(raw.command({"HGET", key, "mode"}).str, "read");
    EXPECT_EQ(raw.command({"HGET", key, std::string(r2.owner_field())}).str, "2");
    // One timeout key per read hold, each with its own lease; the hash lives as long as the
    // longest.
    EXPECT_GT(raw.command_int({"PTTL", hold_timeout(key, r1.owner_field(), 1)}), 0);
    EXPECT_GT(raw.command_int({"PTTL", hold_timeout(key, r2.owner_field(), 2)}), 40'000);
    EXPECT_GT(raw.command_int({"PTTL", key}), 40'000);
    // A writer of another owner is excluded while anyone reads.
    EXPECT_FALSE(co_await writer.write_lock().try_lock());
    EXPECT_FALSE(co_await writer.write_lock().try_lock(100ms));
    EXPECT_TRUE(co_await r1.is_held());
    EXPECT_EQ(co_await r2.hold_count(), 2);
    co_await r2.unlock();
    co_await r2.unlock();
    EXPECT_EQ(raw.command_int({"EXISTS", hold_timeout(key, r2.owner_field(), 1),
                               hold_timeout(key, r2.owner_field(), 2)}),
              0);
    EXPECT_EQ(co_await error_of(r2.unlock()), rlock::errc::not_owner);
    co_await r1.unlock();
    EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
    // A writer excludes readers and other writers, and re-enters.
    auto w = writer.write_lock();
    co_await w.lock();
    co_await w.lock();
    EXPECT_EQ(raw.command({"HGET", key, "mode"}).str, "write");
    EXPECT_EQ(raw.command({"HGET", key, std::string(w.owner_field())}).str, "2");
    EXPECT_TRUE(std::string(w.owner_field()).ends_with(":write"));
    EXPECT_FALSE(co_await r1.try_lock());
    EXPECT_FALSE(co_await second.write_lock().try_lock());
    co_await w.unlock();
    EXPECT_FALSE(co_await r1.try_lock());
    co_await w.unlock();
    EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
    EXPECT_TRUE(co_await r1.try_lock());
    co_await r1.unlock();
    co_await a.close();
    co_await b.close();
  });
}

TEST(read_write_lock, a_write_unlock_wakes_every_waiting_reader_and_the_last_read_unlock_a_writer) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client holder_client(io.get_executor(), cfg);
  rlock::client readers_client(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await holder_client.connect();
    co_await readers_client.connect();
    auto w = holder_client.get_read_write_lock("wake").write_lock();
    co_await w.lock();
    constexpr int readers = 3;
    std::vector<rlock::read_lock> waiting;
    for (int i = 0; i < readers; ++i) {
      waiting.push_back(readers_client.get_read_write_lock("wake").read_lock());
    }
    int reading = 0;
    asio::steady_timer bell(io);
    for (auto& r : waiting) {
      asio::co_spawn(
          io,
          [&]() -> asio::awaitable<void> {
            co_await r.lock();
            ++reading;
            bell.cancel();
          },
          asio::detached);
    }
    // Each made its attempt and its retry after the subscription, and sleeps on the channel.
    const bool asleep = co_await poll_until([&] {
      return readers_client.stats().acquire_attempts >= 2 * readers &&
             raw.command({"PUBSUB", "NUMSUB", rw_channel(w.key())}).elements.at(1).integer == 1;
    });
    RLOCK_CO_ASSERT(asleep);
    const auto attempts_before = readers_client.stats().acquire_attempts;
    co_await w.unlock();
    co_await wait_until(
        bell, [&] { return reading == readers; }, 10s);
    EXPECT_EQ(reading, readers);
    // Woken by the one message, each took it with one attempt: no storm, no retry.
    EXPECT_EQ(readers_client.stats().acquire_attempts - attempts_before,
              static_cast<std::uint64_t>(readers));
    for (auto& r : waiting) EXPECT_EQ(r.last_wake(), rlock::wake_reason::notification);
    EXPECT_EQ(readers_client.stats().expiry_wakeups, 0u);
    // A writer waits for every reader; the last read unlock wakes it.
    bool wrote = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await w.lock();
          wrote = true;
          bell.cancel();
        },
        asio::detached);
    RLOCK_CO_ASSERT(
        co_await poll_until([&] { return holder_client.stats().acquire_attempts >= 3; }));
    for (int i = 0; i + 1 < readers; ++i) co_await waiting[static_cast<std::size_t>(i)].unlock();
    EXPECT_FALSE(wrote);
    co_await waiting.back().unlock();
    co_await wait_until(
        bell, [&] { return wrote; }, 10s);
    EXPECT_TRUE(wrote);
    EXPECT_EQ(w.last_wake(), rlock::wake_reason::notification);
    co_await w.unlock();
    co_await holder_client.close();
    co_await readers_client.close();
  });
}

TEST(read_write_lock, a_writer_may_downgrade_and_a_reader_is_refused_the_upgrade_at_once) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client c(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    auto rw = c.get_read_write_lock("grade");
    auto other = c.get_read_write_lock("grade");
    const auto key = std::string(rw.read_lock().key());
    co_await rw.write_lock().lock();
    co_await rw.read_lock().lock();  // the writer reads too
    EXPECT_FALSE(co_await other.read_lock().try_lock());
    co_await rw.write_lock().unlock();
    // Still read by its owner: the lock is in read mode, shared with other readers, closed to
    // writers.
    EXPECT_EQ(raw.command({"HGET", key, "mode"}).str, "read");
    EXPECT_GT(raw.command_int({"PTTL", key}), 0);
    EXPECT_TRUE(co_await other.read_lock().try_lock());
    co_await other.read_lock().unlock();
    EXPECT_FALSE(co_await c.get_read_write_lock("grade").write_lock().try_lock());
    // A reader asking for the write half would wait for itself: refused at once, even with a
    // wait, with Redis's words; its read hold stays.
    const auto before = std::chrono::steady_clock::now();
    EXPECT_EQ(co_await error_of(rw.write_lock().try_lock(5s)), rlock::errc::upgrade_refused);
    EXPECT_LT(std::chrono::steady_clock::now() - before, 2s);
    EXPECT_NE(rw.write_lock().last_error().find("WRITE_AFTER_READ"), std::string::npos)
        << rw.write_lock().last_error();
    EXPECT_EQ(co_await error_of(rw.write_lock().lock()), rlock::errc::upgrade_refused);
    EXPECT_EQ(co_await rw.read_lock().hold_count(), 1);
    co_await rw.read_lock().unlock();
    EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
    // Once it no longer reads, it writes.
    EXPECT_TRUE(co_await rw.write_lock().try_lock());
    co_await rw.write_lock().unlock();
    co_await c.close();
  });
}

TEST(read_write_lock, read_holds_are_renewed_by_the_watchdog_with_their_timeout_keys) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.watchdog_timeout = 600ms;
  rlock::client c(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    auto rw = c.get_read_write_lock("renewed");
    auto r = rw.read_lock();
    const auto key = std::string(r.key());
    co_await r.lock();
    co_await r.lock();
    EXPECT_EQ(co_await error_of(rw.write_lock().try_lock()), rlock::errc::upgrade_refused);
    // Three leases long: alive only if the watchdog renewed the hash and both hold keys.
    co_await rlock::test::sleep_for(3 * cfg.watchdog_timeout);
    EXPECT_TRUE(co_await r.is_held());
    EXPECT_GT(raw.command_int({"PTTL", hold_timeout(key, r.owner_field(), 1)}), 0);
    EXPECT_GT(raw.command_int({"PTTL", hold_timeout(key, r.owner_field(), 2)}), 0);
    EXPECT_GE(c.stats().renewal_calls, 2u);
    co_await r.unlock();
    co_await r.unlock();
    EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
    co_await c.close();
  });
}

TEST(read_write_lock, a_cancelled_or_killed_waiter_leaves_nothing_and_a_late_answer_is_given_back) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.health_check_interval = 200ms;
  cfg.reconnect.backoff_initial = 10ms;
  auto waiter_cfg = cfg;
  waiter_cfg.client_name = "rw-killed";
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), waiter_cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto w = a.get_read_write_lock("faults").write_lock();
    const auto key = std::string(w.key());
    co_await w.lock();
    // A waiting reader cancelled: no hold, no subscription left.
    asio::cancellation_signal stop;
    std::error_code cancelled;
    bool done = false;
    asio::steady_timer bell(io);
    auto reader = b.get_read_write_lock("faults").read_lock();
    asio::co_spawn(io, reader.lock(),
                   asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr e) {
                     try {
                       if (e) std::rethrow_exception(e);
                     } catch (const boost::system::system_error& err) {
                       cancelled = err.code();
                     }
                     done = true;
                     bell.cancel();
                   }));
    RLOCK_CO_ASSERT(co_await poll_until([&] { return b.stats().acquire_attempts >= 2; }));
    stop.emit(asio::cancellation_type::terminal);
    co_await wait_until(
        bell, [&] { return done; }, 10s);
    EXPECT_EQ(cancelled, std::errc::operation_canceled);
    RLOCK_CO_ASSERT(co_await poll_until([&] {
      return raw.command({"PUBSUB", "NUMSUB", rw_channel(key)}).elements.at(1).integer == 0;
    }));
    // A waiting reader whose connection is killed comes back and reads after the writer.
    bool got = false;
    try_lock_aside(io, reader, 10s, got, bell);
    RLOCK_CO_ASSERT(co_await poll_until([&] { return b.stats().acquire_attempts >= 4; }));
    EXPECT_EQ(rlock::test::kill_client(raw, "rw-killed"), 1);
    RLOCK_CO_ASSERT(co_await poll_until([&] { return b.stats().reconnects >= 1; }));
    co_await w.unlock();
    co_await wait_until(
        bell, [&] { return got; }, 10s);
    EXPECT_TRUE(got);
    EXPECT_EQ(co_await reader.hold_count(), 1);
    co_await reader.unlock();
    EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
    co_await a.close();
    co_await b.close();
  });
}

TEST(read_write_lock, a_read_answered_after_its_caller_gave_up_is_given_back_with_its_timeout_key) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.command_timeout = 300ms;
  cfg.health_check_interval = 0ms;  // the pause must not look like a dead connection
  rlock::client c(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    auto r = c.get_read_write_lock("late").read_lock();
    const auto key = std::string(r.key());
    raw.command({"CLIENT", "PAUSE", "700"});
    EXPECT_EQ(co_await error_of(r.try_lock(200ms)), rlock::errc::timeout);
    (void)raw.command({"PING"});  // answered when the pause ends
    (void)co_await r.is_locked();
    EXPECT_FALSE(co_await r.is_locked());
    EXPECT_GE(c.stats().given_back, 1u);
    EXPECT_EQ(raw.command_int({"EXISTS", key, hold_timeout(key, r.owner_field(), 1)}), 0);
    co_await c.close();
  });
}

TEST(read_write_lock, the_blocking_facade_is_a_shared_mutex_for_threads) {
  rlock::blocking::client c(make_config());
  auto rw = c.get_read_write_lock("blocking-rw");
  {
    std::shared_lock mine(rw);
    // Another thread reads at the same time, and cannot write.
    std::thread other([&] {
      auto theirs = c.get_read_write_lock("blocking-rw");
      {
        std::shared_lock shared(theirs, std::try_to_lock);
        EXPECT_TRUE(shared.owns_lock());
      }
      std::unique_lock exclusive(theirs, std::defer_lock);
      EXPECT_FALSE(exclusive.try_lock_for(50ms));
    });
    other.join();
    // This thread reads: its write would wait for itself.
    EXPECT_EQ(rlock::test::thrown_by([&] { rw.lock(); }), rlock::errc::upgrade_refused);
  }
  {
    std::unique_lock exclusive(rw);
    std::thread other([&] {
      auto theirs = c.get_read_write_lock("blocking-rw");
      EXPECT_FALSE(theirs.try_lock_shared_for(50ms));
    });
    other.join();
    std::shared_lock downgrade(rw);  // the writer may read
    EXPECT_TRUE(rw.read().is_held());
  }
  EXPECT_FALSE(rw.read().is_locked());
}

TEST(read_write_lock,
     a_waiting_writer_keeps_arriving_readers_out_and_enters_when_the_readers_leave) {
  asio::io_context io;
  const auto cfg = make_config();
  ASSERT_EQ(cfg.read_write_lock.priority, rlock::rw_priority::writers);  // the default
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto reader = a.get_read_write_lock("wf").read_lock();
    auto late = b.get_read_write_lock("wf").read_lock();
    auto writer = b.get_read_write_lock("wf").write_lock();
    const auto key = std::string(reader.key());
    co_await reader.lock();
    bool wrote = false;
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await writer.lock();
          wrote = true;
          bell.cancel();
        },
        asio::detached);
    // Its refused attempt left its mark, with the mark's lease.
    RLOCK_CO_ASSERT(co_await poll_until([&] {
      return raw.command_int({"ZCARD", writer_marks(key)}) == 1;
    }));
    const auto ttl = raw.command_int({"PTTL", writer_marks(key)});
    EXPECT_GT(ttl, 0);
    EXPECT_LE(ttl, cfg.read_write_lock.writer_mark_lease.count());
    // A reader that arrives now does not enter, waiting or not; under Redisson's rule it would.
    EXPECT_FALSE(co_await late.try_lock());
    EXPECT_FALSE(co_await late.try_lock(150ms));
    EXPECT_FALSE(wrote);
    // The reader already in re-enters (its holds are its own), and a handle that opted out
    // enters: it ignores the marks, as Redisson's readers do.
    EXPECT_TRUE(co_await reader.try_lock());
    auto redissons_rule = a.get_read_write_lock("wf", rlock::rw_priority::readers).read_lock();
    EXPECT_TRUE(co_await redissons_rule.try_lock());
    co_await redissons_rule.unlock();
    co_await reader.unlock();
    EXPECT_FALSE(wrote);
    // The last read unlock lets the writer in, woken by its message; its mark goes with it.
    co_await reader.unlock();
    co_await wait_until(
        bell, [&] { return wrote; }, 10s);
    RLOCK_CO_ASSERT(wrote);
    EXPECT_EQ(writer.last_wake(), rlock::wake_reason::notification);
    EXPECT_EQ(raw.command_int({"EXISTS", writer_marks(key)}), 0);
    // The writer downgrades while another writer waits: its own read is no arriving reader.
    auto other_writer = a.get_read_write_lock("wf").write_lock();
    EXPECT_FALSE(co_await other_writer.try_lock(100ms));
    // Taken back on giving up, with its place (the leave is written after the caller is told).
    EXPECT_TRUE(co_await poll_until([&] {
      return raw.command_int({"EXISTS", writer_marks(key), writer_queue(key)}) == 0;
    }));
    auto own_read = b.get_read_write_lock("wf", writer.owner_id()).read_lock();
    EXPECT_TRUE(co_await own_read.try_lock());
    co_await writer.unlock();
    co_await own_read.unlock();
    EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
    EXPECT_TRUE(co_await late.try_lock());
    co_await late.unlock();
    co_await a.close();
    co_await b.close();
  });
}

TEST(read_write_lock, under_redissons_rule_readers_that_keep_arriving_pass_a_waiting_writer) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.read_write_lock.priority = rlock::rw_priority::readers;  // for the whole client
  rlock::client a(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    auto first = a.get_read_write_lock("rf").read_lock();
    auto second = a.get_read_write_lock("rf").read_lock();
    auto writer = a.get_read_write_lock("rf").write_lock();
    const auto key = std::string(first.key());
    co_await first.lock();
    // The writer waits, leaving no mark; readers keep entering past it, each overlapping the
    // last, so the lock is never free for it.
    bool wrote = false;
    bool done = false;
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          try {
            wrote = co_await writer.try_lock(600ms);
          } catch (const boost::system::system_error&) {
            // A loaded machine's late answer: timeout, which is not acquired either.
          }
          done = true;
          bell.cancel();
        },
        asio::detached);
    RLOCK_CO_ASSERT(co_await poll_until([&] { return a.stats().acquire_attempts >= 2; }));
    rlock::read_lock* holding = &first;
    rlock::read_lock* next = &second;
    for (int i = 0; i < 200 && !done; ++i) {  // bounded: the writer gives up after 600 ms
      EXPECT_TRUE(co_await next->try_lock());
      co_await holding->unlock();
      std::swap(holding, next);
      co_await rlock::test::sleep_for(5ms);
    }
    co_await wait_until(
        bell, [&] { return done; }, 10s);
    RLOCK_CO_ASSERT(done);
    EXPECT_FALSE(wrote);
    EXPECT_FALSE(co_await writer.is_held());
    EXPECT_EQ(raw.command_int({"EXISTS", writer_marks(key)}), 0);
    co_await holding->unlock();
    co_await a.close();
  });
}

TEST(read_write_lock, a_writer_that_gives_up_lets_the_readers_it_held_back_in_at_once) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.read_write_lock.writer_mark_lease = 60s;  // only the leave can let them in in time
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto reader = a.get_read_write_lock("gu").read_lock();
    auto writer = a.get_read_write_lock("gu").write_lock();
    auto held_back = b.get_read_write_lock("gu").read_lock();
    const auto key = std::string(reader.key());
    co_await reader.lock();
    bool gave_up = false;
    bool read = false;
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          gave_up = !(co_await writer.try_lock(400ms));
          bell.cancel();
        },
        asio::detached);
    RLOCK_CO_ASSERT(co_await poll_until([&] {
      return raw.command_int({"ZCARD", writer_marks(key)}) == 1;
    }));
    try_lock_aside(io, held_back, 20s, read, bell);
    co_await wait_until(
        bell, [&] { return read || gave_up; }, 10s);
    RLOCK_CO_ASSERT(gave_up);
    // The writer took its mark back and told the readers: the one held back enters on that
    // message, not at the end of the mark's minute.
    co_await wait_until(
        bell, [&] { return read; }, 10s);
    RLOCK_CO_ASSERT(read);
    EXPECT_EQ(held_back.last_wake(), rlock::wake_reason::notification);
    EXPECT_EQ(raw.command_int({"EXISTS", writer_marks(key)}), 0);
    co_await held_back.unlock();
    co_await reader.unlock();
    co_await a.close();
    co_await b.close();
  });
}

TEST(read_write_lock, a_writer_that_gives_up_behind_another_wakes_nobody) {
  // Its leave can let nobody in: readers still wait behind the first writer's mark, and the lock
  // is not the first writer's to take while a reader holds it. No message, no wasted attempts.
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::client c(io.get_executor(), cfg);
  rlock::client d(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    co_await c.connect();
    co_await d.connect();
    auto reader = a.get_read_write_lock("behind").read_lock();
    auto first = b.get_read_write_lock("behind").write_lock();
    auto second = c.get_read_write_lock("behind").write_lock();
    auto held_back = d.get_read_write_lock("behind").read_lock();
    const auto key = std::string(reader.key());
    co_await reader.lock();
    bool wrote = false;
    bool gave_up = false;
    bool read = false;
    asio::steady_timer bell(io);
    try_lock_aside(io, first, 20s, wrote, bell);
    RLOCK_CO_ASSERT(co_await poll_until([&] {
      return raw.command_int({"ZCARD", writer_queue(key)}) == 1;
    }));
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          gave_up = !(co_await second.try_lock(300ms));
          bell.cancel();
        },
        asio::detached);
    RLOCK_CO_ASSERT(co_await poll_until([&] {
      return raw.command_int({"ZCARD", writer_queue(key)}) == 2;
    }));
    try_lock_aside(io, held_back, 20s, read, bell);
    rlock::lock_handle probe = d.get_lock("probe");
    RLOCK_CO_ASSERT(co_await rlock::test::until_asleep(d, probe, 2));
    const auto attempts = d.stats().acquire_attempts;
    // The second writer gives up: its mark and place go, the first writer's stay.
    co_await wait_until(
        bell, [&] { return gave_up; }, 10s);
    RLOCK_CO_ASSERT(gave_up);
    RLOCK_CO_ASSERT(co_await poll_until([&] {
      return raw.command_int({"ZCARD", writer_marks(key)}) == 1;
    }));
    // A message published by the leave would reach d before this answer, and wake its reader.
    (void)co_await probe.is_locked();
    EXPECT_EQ(d.stats().acquire_attempts, attempts);
    EXPECT_FALSE(read);
    // The reader leaves: the first writer goes, then the reader held back.
    co_await reader.unlock();
    co_await wait_until(
        bell, [&] { return wrote; }, 10s);
    RLOCK_CO_ASSERT(wrote);
    co_await first.unlock();
    co_await wait_until(
        bell, [&] { return read; }, 10s);
    EXPECT_TRUE(read);
    co_await held_back.unlock();
    EXPECT_EQ(raw.command_int({"EXISTS", key, writer_marks(key), writer_queue(key)}), 0);
    co_await a.close();
    co_await b.close();
    co_await c.close();
    co_await d.close();
  });
}

TEST(read_write_lock, a_mark_its_writer_no_longer_renews_holds_readers_back_until_its_lease_ends) {
  // What a writer that died (or was cut off) leaves: a mark nobody renews. A reader is answered
  // the time to the mark's end and enters then, without any message.
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client a(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    auto reader = a.get_read_write_lock("dead").read_lock();
    const auto key = std::string(reader.key());
    const auto ends = server_ms(raw) + 700;
    raw.command({"ZADD", writer_marks(key), std::to_string(ends), "gone-uuid:1:write"});
    raw.command({"PEXPIRE", writer_marks(key), "10000"});
    EXPECT_FALSE(co_await reader.try_lock());
    EXPECT_TRUE(co_await reader.try_lock(10s));
    EXPECT_GE(server_ms(raw), ends);
    EXPECT_EQ(reader.last_wake(), rlock::wake_reason::expiry);
    // An expired mark is no mark: the next writer's attempt sweeps it.
    co_await reader.unlock();
    auto writer = a.get_read_write_lock("dead").write_lock();
    co_await writer.lock();
    co_await writer.unlock();
    EXPECT_EQ(raw.command_int({"ZCARD", writer_marks(key)}), 1);  // nobody waited: nothing swept
    EXPECT_TRUE(co_await reader.try_lock());
    co_await reader.unlock();
    co_await a.close();
  });
}

TEST(read_write_lock, the_last_read_unlock_wakes_a_waiting_writer_before_an_older_waiting_reader) {
  // One client, a reader asleep before a writer on the lock's one channel. The last read unlock
  // publishes "0", which wakes one waiter per client: it must be the writer (the reader would
  // only find the writer's mark, and the writer would sleep to its next look).
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto holder = a.get_read_write_lock("order").read_lock();
    auto reader = b.get_read_write_lock("order").read_lock();
    auto writer = b.get_read_write_lock("order").write_lock();
    const auto key = std::string(holder.key());
    co_await holder.lock();
    // A writer of another process marks the lock: the reader waits behind it.
    raw.command(
        {"ZADD", writer_marks(key), std::to_string(server_ms(raw) + 60'000), "elsewhere:1:write"});
    bool read = false;
    bool wrote = false;
    asio::steady_timer bell(io);
    try_lock_aside(io, reader, 20s, read, bell);
    rlock::lock_handle probe = b.get_lock("probe");
    RLOCK_CO_ASSERT(co_await rlock::test::until_asleep(b, probe, 2));
    try_lock_aside(io, writer, 20s, wrote, bell);
    // Both asleep on the channel, the reader first (each made its attempt and its retry).
    RLOCK_CO_ASSERT(co_await rlock::test::until_asleep(b, probe, 4));
    EXPECT_EQ(raw.command_int({"ZCARD", writer_marks(key)}), 2);
    raw.command({"ZREM", writer_marks(key), "elsewhere:1:write"});  // that writer went
    const auto attempts = b.stats().acquire_attempts;
    co_await holder.unlock();
    co_await wait_until(
        bell, [&] { return wrote; }, 10s);
    RLOCK_CO_ASSERT(wrote);
    EXPECT_EQ(writer.last_wake(), rlock::wake_reason::notification);
    EXPECT_EQ(b.stats().acquire_attempts, attempts + 1);  // the writer's alone
    EXPECT_FALSE(read);
    co_await writer.unlock();
    co_await wait_until(
        bell, [&] { return read; }, 10s);
    EXPECT_TRUE(read);
    co_await reader.unlock();
    EXPECT_EQ(raw.command_int({"EXISTS", key, writer_marks(key)}), 0);
    co_await a.close();
    co_await b.close();
  });
}

TEST(read_write_lock, waiting_writers_of_different_clients_take_the_lock_in_the_order_they_came) {
  // Each client hears every unlock message and its waiting writer tries at once: without the
  // queue the first to answer wins, and a writer can lose every race (F1: writer p99 1.1 s at
  // 50 ms holds). Here the writer that queued first is the slowest: its client's io_context is
  // paused while the lock is freed. The others still wait for it, then go in their order.
  constexpr std::size_t writers = 5;
  asio::io_context io;
  asio::io_context slow_io;  // writer 0's, run by hand, then on its own thread
  const auto cfg = make_config();
  rlock::client holder_client(io.get_executor(), cfg);
  std::vector<std::unique_ptr<rlock::client>> clients;
  clients.push_back(std::make_unique<rlock::client>(slow_io.get_executor(), cfg));
  for (std::size_t i = 1; i < writers; ++i) {
    clients.push_back(std::make_unique<rlock::client>(io.get_executor(), cfg));
  }
  rlock::test::raw_client raw(cfg.port);
  std::mutex m;
  std::vector<std::size_t> order;  // under m
  std::atomic<std::size_t> finished{0};
  asio::steady_timer bell(io);
  auto writer_of = [&](std::size_t i) -> asio::awaitable<void> {
    if (i == 0) co_await clients[0]->connect();
    auto writer = clients[i]->get_read_write_lock("queue").write_lock();
    if (co_await writer.try_lock(20s)) {
      {
        std::lock_guard<std::mutex> g(m);
        order.push_back(i);
      }
      co_await writer.unlock();  // publishes "1": every later writer tries at once
    }
    ++finished;
    asio::post(io, [&] { bell.cancel(); });
  };
  auto taken = [&] {
    std::lock_guard<std::mutex> g(m);
    return order.size();
  };
  std::thread slow_thread;
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await holder_client.connect();
    for (std::size_t i = 1; i < writers; ++i) co_await clients[i]->connect();
    auto holder = holder_client.get_read_write_lock("queue").write_lock();
    const auto key = std::string(holder.key());
    co_await holder.lock();
    // Writer 0 queues first and falls asleep on its channel (its attempt and its retry).
    asio::co_spawn(slow_io, writer_of(0), asio::detached);
    for (int round = 0; round < 2500 && clients[0]->stats().acquire_attempts < 2; ++round) {
      slow_io.run_for(2ms);
    }
    RLOCK_CO_ASSERT(clients[0]->stats().acquire_attempts == 2);
    RLOCK_CO_ASSERT(raw.command_int({"ZCARD", writer_queue(key)}) == 1);
    for (std::size_t i = 1; i < writers; ++i) {
      asio::co_spawn(io, writer_of(i), asio::detached);
      const auto queued = static_cast<std::int64_t>(i + 1);
      RLOCK_CO_ASSERT(co_await poll_until([&] {
        return raw.command_int({"ZCARD", writer_queue(key)}) == queued &&
               clients[i]->stats().acquire_attempts >= 2;
      }));
    }
    // The lock is freed while writer 0's client cannot answer: the others, woken, try and are
    // told it is writer 0's turn.
    co_await holder.unlock();
    RLOCK_CO_ASSERT(co_await poll_until([&] {
      for (std::size_t i = 1; i < writers; ++i) {
        if (clients[i]->stats().acquire_attempts < 3) return false;
      }
      return true;
    }));
    EXPECT_EQ(taken(), 0u);
    EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
    // Writer 0's client wakes: it goes first, then the others in the order they queued.
    slow_thread = std::thread([&] { slow_io.run(); });
    co_await wait_until(
        bell, [&] { return finished == writers; }, 30s);
    RLOCK_CO_ASSERT(finished == writers);
    {
      std::lock_guard<std::mutex> g(m);
      EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 3, 4}));
    }
    // Each writer took its mark and its place with the lock: nothing is left.
    EXPECT_EQ(raw.command_int({"EXISTS", key, writer_marks(key), writer_queue(key)}), 0);
    co_await holder_client.close();
    for (std::size_t i = 1; i < writers; ++i) co_await clients[i]->close();
    asio::co_spawn(slow_io, clients[0]->close(), asio::use_future).wait();
  });
  if (slow_thread.joinable()) {
    slow_io.stop();
    slow_thread.join();
  }
}

TEST(read_write_lock,
     no_writer_passes_a_queued_one_and_a_queued_writer_that_died_is_passed_at_its_marks_end) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client a(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    auto writer = a.get_read_write_lock("dead-queued").write_lock();
    auto reader = a.get_read_write_lock("dead-queued").read_lock();
    const auto key = std::string(writer.key());
    // A writer of another process queued first, then stopped: its mark ends in 700 ms. One
    // queued earlier still, whose mark already lapsed, is no writer at all.
    const auto now = server_ms(raw);
    const auto ends = now + 700;
    raw.command({"ZADD", writer_marks(key), std::to_string(ends), "gone:1:write",
                 std::to_string(now - 1), "long-gone:1:write"});
    raw.command({"ZADD", writer_queue(key), std::to_string(now - 2000), "long-gone:1:write",
                 std::to_string(now - 1000), "gone:1:write"});
    // The lock is free, but it is that writer's turn: no single attempt takes it, no reader
    // enters.
    EXPECT_FALSE(co_await writer.try_lock());
    EXPECT_FALSE(co_await reader.try_lock());
    EXPECT_EQ(raw.command_int({"ZCARD", writer_queue(key)}), 1);  // the lapsed one was dropped
    EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
    // A waiting writer queues behind it and is answered the time to its mark's end: it enters
    // then, without any message.
    EXPECT_TRUE(co_await writer.try_lock(10s));
    EXPECT_GE(server_ms(raw), ends);
    EXPECT_EQ(writer.last_wake(), rlock::wake_reason::expiry);
    EXPECT_EQ(raw.command_int({"ZCARD", writer_queue(key)}), 0);
    co_await writer.unlock();
    co_await a.close();
  });
}

TEST(read_write_lock, a_priority_that_is_no_rw_priority_is_refused_with_its_value) {
  asio::io_context io;
  auto cfg = make_config();
  rlock::client a(io.get_executor(), cfg);
  EXPECT_EQ(rlock::test::thrown_by(
                [&] { (void)a.get_read_write_lock("x", static_cast<rlock::rw_priority>(7)); }),
            rlock::errc::invalid_argument);
  cfg.read_write_lock.writer_mark_lease = 99ms;
  EXPECT_EQ(rlock::test::thrown_by([&] { rlock::client bad(io.get_executor(), cfg); }),
            rlock::errc::invalid_argument);
}

}  // namespace read_write_lock_test
