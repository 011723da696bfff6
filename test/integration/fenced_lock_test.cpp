// rlock::fenced_lock (Redisson's RFencedLock) against a real server: tokens that strictly
// increase across acquisitions, re-entries and owners; everything else shared with
// reentrant_lock (release, waiting, watchdog, scoped holds).
#include "rlock/rlock.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

namespace fenced_lock_test {

namespace asio = boost::asio;
using rlock::test::error_of;
using rlock::test::make_config;
using namespace std::chrono_literals;

TEST(fenced_lock, every_acquisition_and_re_entry_gets_a_larger_token) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_fenced_lock("ledger");
    EXPECT_EQ(lock.token(), 0);
    EXPECT_EQ(co_await lock.current_token(), 0);  // no counter yet
    EXPECT_EQ(lock.token_key(), "redisson_lock_token:{" + std::string(lock.key()) + "}");
    const std::int64_t t1 = co_await lock.lock();
    EXPECT_EQ(t1, 1);
    const std::int64_t t2 = co_await lock.lock();  // re-entry: a new token, as Redisson does
    EXPECT_GT(t2, t1);
    const auto t3 = co_await lock.try_lock(0ms, 10s);
    EXPECT_TRUE(t3.has_value());
    if (!t3) co_return;
    EXPECT_GT(*t3, t2);
    EXPECT_EQ(lock.token(), *t3);
    EXPECT_EQ(co_await lock.current_token(), *t3);
    EXPECT_EQ(co_await lock.hold_count(), 3);
    for (int i = 0; i < 3; ++i) co_await lock.unlock();
    EXPECT_FALSE(co_await lock.is_locked());
    // The counter outlives the lock, with no TTL: the next holder continues from it.
    EXPECT_EQ(raw.command_int({"PTTL", lock.token_key()}), -1);
    auto next = redis.get_fenced_lock("ledger");
    EXPECT_EQ(co_await next.lock(), *t3 + 1);
    co_await next.unlock();
    co_await redis.close();
  });
}

TEST(fenced_lock, a_busy_lock_gives_no_token_and_a_woken_waiter_a_larger_one) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto holder = redis.get_fenced_lock("queue");
    auto waiter = redis.get_fenced_lock("queue");
    const auto held = co_await holder.lock();
    EXPECT_EQ(co_await waiter.try_lock(), std::nullopt);
    EXPECT_EQ(co_await waiter.try_lock(20ms), std::nullopt);
    EXPECT_EQ(waiter.token(), 0);
    std::optional<std::int64_t> woken;
    bool done = false;
    const auto attempts = redis.stats().acquire_attempts;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          woken = co_await waiter.try_lock(5s);
          done = true;
        },
        asio::detached);
    // Parked on the channel, so the unlock's notification is what wakes it.
    EXPECT_TRUE(co_await rlock::test::until_asleep(redis, waiter, attempts + 2));
    co_await holder.unlock();
    co_await rlock::test::poll_until([&] { return done; });
    EXPECT_TRUE(woken.has_value());
    EXPECT_GT(woken.value_or(0), held);
    EXPECT_EQ(waiter.last_wake(), rlock::wake_reason::notification);
    co_await waiter.unlock();
    co_await redis.close();
  });
}

TEST(fenced_lock, shares_the_hold_machinery_with_reentrant_locks) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.watchdog_timeout = 600ms;  // renewed every 200 ms
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    // One name, two kinds: they exclude each other like any two owners.
    auto fenced = redis.get_fenced_lock("shared");
    auto plain = redis.get_lock("shared");
    const auto t = co_await fenced.lock();
    EXPECT_FALSE(co_await plain.try_lock());
    // The watchdog keeps it past its lease; its release wakes a plain waiter.
    co_await rlock::test::sleep_for(900ms);
    EXPECT_TRUE(co_await fenced.is_held());
    EXPECT_EQ(co_await error_of(plain.unlock()), rlock::errc::not_owner);
    co_await fenced.unlock();
    EXPECT_TRUE(co_await plain.try_lock());
    co_await plain.unlock();
    EXPECT_EQ(co_await fenced.current_token(), t);  // a plain acquisition takes no token
    // Same owner id, both kinds: one hold count (one hash field), tokens only for the fenced.
    auto f1 = redis.get_fenced_lock("same-owner", 1ULL << 40);
    auto p1 = redis.get_lock("same-owner", 1ULL << 40);
    EXPECT_EQ(f1.owner_field(), p1.owner_field());
    co_await p1.lock(10s);
    EXPECT_EQ(co_await f1.lock(10s), 1);
    EXPECT_EQ(co_await p1.hold_count(), 2);
    co_await f1.unlock();
    co_await p1.unlock();
    EXPECT_FALSE(co_await p1.is_locked());
    // lost(), scoped holds and with_lock are reentrant_lock's; their acquisitions are fenced.
    {
      auto held = co_await fenced.scoped();
      EXPECT_GT(fenced.token(), t);
      raw.command({"DEL", fenced.key()});
      co_await fenced.lost();  // the next renewal finds it gone
      EXPECT_EQ(co_await error_of(held.unlock()), rlock::errc::not_owner);
    }
    const auto before = fenced.token();
    const int result = co_await rlock::with_lock(fenced, [&]() -> asio::awaitable<int> {
      co_return static_cast<int>(fenced.token() - before);
    });
    EXPECT_EQ(result, 1);
    EXPECT_FALSE(co_await fenced.is_locked());
    co_await redis.close();
  });
}

// A fenced lock is its own kind, composed of the shared lock_handle, not a reentrant_lock:
// nothing that takes a reentrant_lock takes it by mistake (its acquisitions return tokens).
static_assert(!std::is_base_of_v<rlock::reentrant_lock, rlock::fenced_lock>);
static_assert(!std::is_convertible_v<rlock::fenced_lock, rlock::reentrant_lock>);
static_assert(std::is_base_of_v<rlock::lock_handle, rlock::fenced_lock>);
static_assert(rlock::owned_lock<rlock::fenced_lock> && rlock::owned_lock<rlock::reentrant_lock>);

TEST(fenced_lock, its_scoped_holds_carry_the_handle_whose_token_they_took) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_fenced_lock("scoped-ledger");
    auto other = redis.get_fenced_lock("scoped-ledger");
    rlock::basic_hold<rlock::fenced_lock> held = co_await lock.try_scoped(0ms, 10s);
    EXPECT_TRUE(held.owns_lock());
    if (!held) co_return;
    const std::int64_t first = held.lock()->token();
    EXPECT_EQ(first, co_await lock.current_token());
    // Busy for another owner: an empty hold, no token taken.
    auto refused = co_await other.try_scoped(50ms);
    EXPECT_FALSE(refused.owns_lock());
    EXPECT_EQ(other.token(), 0);
    co_await held.unlock();
    EXPECT_FALSE(held.owns_lock());
    // The async form with a token; a hold released by its destructor frees the lock.
    {
      auto [ec, h] = co_await other.async_scoped(asio::as_tuple(asio::use_awaitable));
      EXPECT_FALSE(ec);
      EXPECT_TRUE(h.owns_lock());
      EXPECT_GT(other.token(), first);
    }
    // The destructor posted the unlock; the next acquisition waits for it at most briefly.
    EXPECT_TRUE((co_await lock.try_lock(5s)).has_value());
    co_await lock.unlock();
    co_await redis.close();
  });
}

TEST(fenced_lock, bad_input_and_errors_are_reentrant_locks) {
  asio::io_context io;
  auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    EXPECT_THROW((void)redis.get_fenced_lock(""), boost::system::system_error);
    auto lock = redis.get_fenced_lock("typed");
    EXPECT_EQ(co_await error_of(lock.lock(-5ms)), rlock::errc::invalid_argument);
    EXPECT_EQ(co_await error_of(lock.try_lock(-1ms)), rlock::errc::invalid_argument);
    // A counter that is not an integer: Redis's words come back, nothing is held.
    raw.command({"SET", lock.token_key(), "not a number"});
    EXPECT_EQ(co_await error_of(lock.lock()), rlock::errc::server_error);
    EXPECT_NE(lock.last_error().find("not an integer"), std::string::npos) << lock.last_error();
    EXPECT_FALSE(co_await lock.is_locked());
    raw.command({"DEL", lock.token_key()});
    co_await redis.close();
  });
  // The same with clock-bounded tokens (config::fenced_lock), whose script reads the counter.
  cfg.fenced_lock.token_idle_ttl = 10s;
  rlock::client clocked(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await clocked.connect();
    auto lock = clocked.get_fenced_lock("typed-clocked");
    for (const char* bad : {"not a number", "1.5"}) {
      raw.command({"SET", lock.token_key(), bad});
      EXPECT_EQ(co_await error_of(lock.lock()), rlock::errc::server_error) << bad;
      EXPECT_NE(lock.last_error().find("not an integer"), std::string::npos) << lock.last_error();
      EXPECT_FALSE(co_await lock.is_locked());
      EXPECT_EQ(raw.command({"GET", lock.token_key()}).str, bad);  // left as it was
    }
    raw.command({"DEL", lock.token_key()});
    co_await clocked.close();
  });
}

/// The server's clock in microseconds (TIME).
std::int64_t server_micros(rlock::test::raw_client& raw) {
  const auto t = raw.command({"TIME"});
  if (t.elements.size() != 2u) return 0;
  return std::stoll(t.elements[0].str) * 1'000'000 + std::stoll(t.elements[1].str);
}

// Redisson issue #6510: the counters are kept forever. With token_idle_ttl, each is dropped once
// idle, and a token taken after that is still larger than every earlier one.
TEST(fenced_lock, with_a_token_idle_ttl_an_idle_counter_expires_and_tokens_still_grow) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.fenced_lock.token_idle_ttl = 5s;
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_fenced_lock("idle");
    // A counter kept forever before (Redisson's, or this client without the setting).
    raw.command({"SET", lock.token_key(), "41"});
    const std::int64_t before = server_micros(raw);
    const std::int64_t t1 = co_await lock.lock();
    EXPECT_GE(t1, before);                         // the server's clock, above the counter
    const std::int64_t t2 = co_await lock.lock();  // re-entry
    EXPECT_GT(t2, t1);
    EXPECT_EQ(co_await lock.current_token(), t2);
    // The counter lives the TTL from the latest acquisition, held or not.
    const auto held_ttl = raw.command_int({"PTTL", lock.token_key()});
    EXPECT_GT(held_ttl, 0);
    EXPECT_LE(held_ttl, 5000);
    co_await lock.unlock();
    co_await lock.unlock();
    EXPECT_FALSE(co_await lock.is_locked());
    const auto idle_ttl = raw.command_int({"PTTL", lock.token_key()});
    EXPECT_GT(idle_ttl, 0);
    EXPECT_LE(idle_ttl, 5000);
    // Its TTL runs out (brought forward here): the key is gone, and no token goes back.
    raw.command({"PEXPIRE", lock.token_key(), "1"});
    EXPECT_TRUE(co_await rlock::test::poll_until([&] {
      return raw.command_int({"EXISTS", lock.token_key()}) == 0;
    }));
    EXPECT_EQ(co_await lock.current_token(), 0);  // none while idle
    auto next = redis.get_fenced_lock("idle");
    const std::int64_t t3 = co_await next.lock();
    EXPECT_GT(t3, t2);
    EXPECT_EQ(co_await lock.try_lock(0ms), std::nullopt);  // busy: no token spent
    co_await next.unlock();
    const auto t4 = co_await lock.try_lock(0ms);
    EXPECT_TRUE(t4.has_value());
    if (t4) {
      EXPECT_GT(*t4, t3);
    }
    co_await lock.unlock();
    co_await redis.close();
  });
}

TEST(fenced_lock, a_token_idle_ttl_below_a_second_is_refused_and_zero_keeps_redissons_counter) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.fenced_lock.token_idle_ttl = 999ms;
  EXPECT_EQ(rlock::test::thrown_by([&] { rlock::client bad(io.get_executor(), cfg); }),
            rlock::errc::invalid_argument);
  cfg.fenced_lock.token_idle_ttl = -1s;
  EXPECT_EQ(rlock::test::thrown_by([&] { rlock::client bad(io.get_executor(), cfg); }),
            rlock::errc::invalid_argument);
  cfg.fenced_lock.token_idle_ttl = 0ms;
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_fenced_lock("forever");
    EXPECT_EQ(co_await lock.lock(), 1);
    co_await lock.unlock();
    EXPECT_EQ(raw.command_int({"PTTL", lock.token_key()}), -1);  // Redisson's: no TTL
    co_await redis.close();
  });
}

}  // namespace fenced_lock_test
