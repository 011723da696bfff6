// rlock::semaphore (Redisson's RSemaphore) and rlock::permit_expirable_semaphore
// (RPermitExpirableSemaphore) against a real server: permits counted and shared, holds given
// back once, bad input refused with Redis's words, a release waking as many waiters as permits,
// a dead holder's permits coming back at its lease, the watchdog keeping a hold, the fault cases
// (a cancelled waiter, a waiter whose connection is killed, an answer after its caller gave up),
// permits released by id from another process, and the blocking facade. Redisson's side is in
// semaphore_interop_test.cpp.
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
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace semaphore_test {

namespace asio = boost::asio;
using rlock::test::error_of;
using rlock::test::make_config;
using rlock::test::poll_until;
using rlock::test::wait_until;
using namespace std::chrono_literals;

std::string holds_of(std::string_view key) { return "{" + std::string(key) + "}:timeout"; }

TEST(semaphore, permits_are_counted_held_given_back_once_and_bad_input_is_refused) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client c(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    auto sem = c.get_semaphore("pool");
    const auto key = std::string(sem.key());
    EXPECT_TRUE(co_await sem.try_set_permits(3));
    EXPECT_FALSE(co_await sem.try_set_permits(5));  // set already
    EXPECT_EQ(co_await sem.available(), 3);
    auto two = co_await sem.acquire(2);
    EXPECT_EQ(two.count(), 2u);
    EXPECT_EQ(co_await sem.available(), 1);
    EXPECT_EQ(raw.command({"GET", key}).str, "1");  // Redisson's counter
    EXPECT_EQ(raw.command_int({"ZCARD", holds_of(key)}), 1);
    EXPECT_FALSE(co_await sem.try_acquire(2));
    EXPECT_FALSE(co_await sem.try_acquire(2, 100ms));
    auto one = co_await sem.try_acquire(1);
    RLOCK_CO_ASSERT(one.has_value());
    EXPECT_EQ(co_await sem.available(), 0);
    co_await two.unlock();
    EXPECT_EQ(co_await sem.available(), 2);
    EXPECT_EQ(co_await error_of(two.unlock()), rlock::errc::not_owner);  // given back once
    EXPECT_EQ(co_await sem.available(), 2);
    co_await one->unlock();
    EXPECT_EQ(raw.command_int({"EXISTS", holds_of(key)}), 0);
    // Redisson's ownerless operations.
    co_await sem.release(2);
    EXPECT_EQ(co_await sem.available(), 5);
    EXPECT_EQ(co_await sem.add_permits(-1), 4);
    EXPECT_EQ(co_await sem.drain(), 4);
    EXPECT_EQ(co_await sem.available(), 0);
    co_await sem.release(3);
    // The release and the drain moved the counter alone (3 available, total 2): the total no
    // longer adds up, so an acquisition above it is not refused; it fits, and it is taken.
    auto three = co_await sem.try_acquire(3, 5s);
    RLOCK_CO_ASSERT(three.has_value());
    co_await three->unlock();
    // Bad input: no permits.
    EXPECT_EQ(co_await error_of(sem.acquire(0)), rlock::errc::invalid_argument);
    EXPECT_EQ(co_await error_of(sem.release(0)), rlock::errc::invalid_argument);
    EXPECT_EQ(co_await error_of(sem.try_acquire(0)), rlock::errc::invalid_argument);
    // More than a total that adds up (counter + holds): refused at once, even with a wait,
    // with a hold out too; add_permits moves the total and the refusal with it.
    auto fixed = c.get_semaphore("fixed");
    EXPECT_TRUE(co_await fixed.try_set_permits(2));
    auto held = co_await fixed.acquire(1);
    try {
      (void)co_await fixed.try_acquire(3, 5s);
      ADD_FAILURE() << "no refusal";
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), rlock::errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("PERMITS_EXCEED_TOTAL"), std::string::npos) << e.what();
    }
    EXPECT_EQ(co_await fixed.add_permits(1), 2);
    EXPECT_FALSE(co_await fixed.try_acquire(3));  // fits the total of 3 now: not refused
    EXPECT_EQ(co_await error_of(fixed.try_acquire(4)), rlock::errc::invalid_argument);
    co_await held.unlock();
    co_await c.close();
  });
}

TEST(semaphore, a_release_wakes_as_many_waiters_as_it_frees_permits_each_with_one_attempt) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client holder(io.get_executor(), cfg);
  rlock::client waiters(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await holder.connect();
    co_await waiters.connect();
    auto sem = holder.get_semaphore("wake");
    EXPECT_TRUE(co_await sem.try_set_permits(2));
    auto all = co_await sem.acquire(2);
    int got = 0;
    std::vector<rlock::permit> taken;
    asio::steady_timer bell(io);
    auto theirs = waiters.get_semaphore("wake");
    for (int i = 0; i < 3; ++i) {
      asio::co_spawn(
          io,
          [&]() -> asio::awaitable<void> {
            taken.push_back(co_await theirs.acquire(1));
            ++got;
            bell.cancel();
          },
          asio::detached);
    }
    // Each made its attempt and its retry once subscribed, and sleeps.
    RLOCK_CO_ASSERT(co_await poll_until([&] { return waiters.stats().acquire_attempts >= 6; }));
    const auto before = waiters.stats().acquire_attempts;
    co_await all.unlock();  // two permits back: "2" on redisson_sc:{wake}
    co_await wait_until(
        bell, [&] { return got == 2; }, 10s);
    EXPECT_EQ(got, 2);
    EXPECT_EQ(waiters.stats().acquire_attempts - before, 2u);  // no storm: two woken, two tries
    // The third sleeps on; a release of one wakes it.
    co_await taken.front().unlock();
    co_await wait_until(
        bell, [&] { return got == 3; }, 10s);
    EXPECT_EQ(got, 3);
    for (std::size_t i = 1; i < taken.size(); ++i) co_await taken[i].unlock();
    EXPECT_EQ(co_await sem.available(), 2);
    co_await holder.close();
    co_await waiters.close();
  });
}

TEST(semaphore, a_dead_holders_permits_come_back_at_its_lease_and_the_watchdog_keeps_a_live_one) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.watchdog_timeout = 600ms;
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto sem = a.get_semaphore("dead");
    EXPECT_TRUE(co_await sem.try_set_permits(1));
    // A holder with a 300 ms lease that never releases (its process "dies": the client closes).
    (void)co_await sem.acquire(1, 300ms);
    co_await a.close();
    // Another process waits: its attempt learns when the hold ends, and takes the permit then.
    auto theirs = b.get_semaphore("dead");
    auto p = co_await theirs.try_acquire(1, 5s);
    RLOCK_CO_ASSERT(p.has_value());
    // Kept by the watchdog (no lease) past three leases.
    co_await rlock::test::sleep_for(3 * cfg.watchdog_timeout);
    EXPECT_TRUE(co_await p->is_held());
    EXPECT_EQ(co_await theirs.available(), 0);
    co_await p->unlock();
    EXPECT_EQ(co_await theirs.available(), 1);
    co_await b.close();
  });
}

TEST(semaphore,
     a_hold_scored_before_the_epoch_is_reclaimed_not_waited_for_a_millisecond_at_a_time) {
  // A hold whose expiry is a negative score (a foreign writer's, or a clock gone wrong) ended
  // long ago. Reclaiming only scores from 0 up once left it: every attempt answered "1 ms more"
  // and the waiter asked a thousand times a second until its wait ran out.
  asio::io_context io;
  auto cfg = make_config();
  rlock::client c(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    auto sem = c.get_semaphore("before-epoch");
    const auto key = std::string(sem.key());
    EXPECT_TRUE(co_await sem.try_set_permits(1));
    EXPECT_EQ(co_await sem.drain(), 1);
    raw.command({"ZADD", holds_of(key), "-5", std::string(16, 'x')});
    auto p = co_await sem.try_acquire(1, 2s);
    RLOCK_CO_ASSERT(p.has_value());
    EXPECT_TRUE(raw.command({"ZSCORE", holds_of(key), std::string(16, 'x')}).is_null());
    EXPECT_LE(c.stats().acquire_attempts, 2u);
    co_await p->unlock();
    co_await c.close();
  });
}

TEST(semaphore, a_cancelled_or_killed_waiter_and_a_late_answer_leave_no_permit_taken) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.health_check_interval = 200ms;
  cfg.reconnect.backoff_initial = 10ms;
  auto waiter_cfg = cfg;
  waiter_cfg.client_name = "sem-killed";
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), waiter_cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto sem = a.get_semaphore("faults");
    EXPECT_TRUE(co_await sem.try_set_permits(1));
    auto held = co_await sem.acquire(1);
    auto theirs = b.get_semaphore("faults");
    // Cancelled while waiting.
    asio::cancellation_signal stop;
    std::error_code cancelled;
    bool done = false;
    asio::steady_timer bell(io);
    asio::co_spawn(io, theirs.async_acquire(1, asio::use_awaitable),
                   asio::bind_cancellation_slot(
                       stop.slot(), [&](std::exception_ptr e, std::optional<rlock::permit>) {
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
    // Killed while waiting: it comes back and takes the permit once it is released.
    std::optional<rlock::permit> got;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          got = co_await theirs.try_acquire(1, 10s);
          bell.cancel();
        },
        asio::detached);
    RLOCK_CO_ASSERT(co_await poll_until([&] { return b.stats().acquire_attempts >= 4; }));
    EXPECT_EQ(rlock::test::kill_client(raw, "sem-killed"), 1);
    RLOCK_CO_ASSERT(co_await poll_until([&] { return b.stats().reconnects >= 1; }));
    co_await held.unlock();
    co_await wait_until(
        bell, [&] { return got.has_value(); }, 10s);
    RLOCK_CO_ASSERT(got.has_value());
    co_await got->unlock();
    EXPECT_EQ(co_await sem.available(), 1);
    co_await a.close();
    co_await b.close();
  });
}

TEST(semaphore, an_acquisition_answered_after_its_caller_gave_up_is_given_back) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.command_timeout = 300ms;
  cfg.health_check_interval = 0ms;  // the pause must not look like a dead connection
  rlock::client c(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    auto sem = c.get_semaphore("late");
    EXPECT_TRUE(co_await sem.try_set_permits(2));
    raw.command({"CLIENT", "PAUSE", "700"});
    EXPECT_EQ(co_await error_of(sem.try_acquire(2, 200ms)), rlock::errc::timeout);
    (void)raw.command({"PING"});  // answered when the pause ends
    (void)co_await sem.available();
    EXPECT_EQ(co_await sem.available(), 2);
    EXPECT_GE(c.stats().given_back, 1u);
    EXPECT_EQ(raw.command_int({"EXISTS", holds_of(sem.key())}), 0);
    co_await c.close();
  });
}

TEST(permit_expirable_semaphore, permits_have_ids_any_process_releases_and_leases_end) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto sem = a.get_permit_expirable_semaphore("leases");
    const auto key = std::string(sem.key());
    EXPECT_TRUE(co_await sem.try_set_permits(2));
    auto p = co_await sem.acquire(10s);
    // Redisson's form: 32 lowercase hex digits shown, their 16 bytes in `{<key>}:timeout`
    // with its expiry.
    EXPECT_EQ(p.id().size(), 32u) << p.id();
    EXPECT_EQ(p.id().find_first_not_of("0123456789abcdef"), std::string::npos) << p.id();
    EXPECT_EQ(p.owner_field().size(), 16u);
    EXPECT_FALSE(raw.command({"ZSCORE", holds_of(key), p.owner_field()}).is_null());
    // Not an id: refused with what to give instead.
    try {
      (void)co_await sem.release("not-an-id");
      ADD_FAILURE() << "no refusal";
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), rlock::errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("32 hex digits"), std::string::npos) << e.what();
    }
    // Another process releases it by id (Redisson's tryRelease), once.
    auto theirs = b.get_permit_expirable_semaphore("leases");
    EXPECT_TRUE(co_await theirs.release(p.id()));
    EXPECT_FALSE(co_await theirs.release(p.id()));
    EXPECT_EQ(co_await error_of(p.unlock()), rlock::errc::not_owner);
    EXPECT_EQ(co_await sem.available(), 2);
    // A short lease: the permit comes back by itself.
    auto brief = co_await sem.acquire(200ms);
    auto other = co_await sem.acquire(10s);
    EXPECT_FALSE(co_await theirs.try_acquire());
    auto after = co_await theirs.try_acquire(3s);  // woken when the brief one's lease ends
    RLOCK_CO_ASSERT(after.has_value());
    co_await after->unlock();
    co_await other.unlock();
    EXPECT_EQ(co_await sem.available(), 2);
    co_await a.close();
    co_await b.close();
  });
}

TEST(semaphore, with_permits_runs_work_holding_them_and_gives_them_back) {
  asio::io_context io;
  rlock::client c(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    auto sem = c.get_semaphore("with");
    EXPECT_TRUE(co_await sem.try_set_permits(3));
    // Named awaitables (g++ 12 and temporaries inside co_await: see multi_lock_test).
    auto counting = rlock::with_permits(
        sem, 2, [&]() -> asio::awaitable<std::int64_t> { co_return co_await sem.available(); });
    const auto seen = co_await std::move(counting);
    EXPECT_EQ(seen, 1);
    EXPECT_EQ(co_await sem.available(), 3);
    // The work's failure is rethrown after the permits are back.
    auto failing = rlock::with_permits(sem, 3, []() -> asio::awaitable<void> {
      rlock::throw_error(rlock::errc::invalid_argument, "the work failed");
      co_return;
    });
    const auto failed = co_await error_of(std::move(failing));
    EXPECT_EQ(failed, rlock::errc::invalid_argument);
    EXPECT_EQ(co_await sem.available(), 3);
    co_await c.close();
  });
}

TEST(semaphore, the_blocking_facade_has_counting_semaphores_shape) {
  rlock::blocking::client c(make_config());
  auto sem = c.get_semaphore("blocking-sem");
  EXPECT_TRUE(sem.try_set_permits(2));
  sem.acquire();
  EXPECT_TRUE(sem.try_acquire());
  EXPECT_EQ(sem.available(), 0);
  std::thread other([&] {
    auto theirs = c.get_semaphore("blocking-sem");
    EXPECT_FALSE(theirs.try_acquire_for(50ms));
    EXPECT_EQ(rlock::test::thrown_by([&] { theirs.release(); }), rlock::errc::not_owner);
    // Released from this thread: std::counting_semaphore's release may come from anywhere.
    sem.release();
  });
  other.join();
  EXPECT_EQ(sem.available(), 1);
  sem.release();
  EXPECT_EQ(sem.available(), 2);
}

}  // namespace semaphore_test
