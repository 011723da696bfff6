// Reentrancy, ownership and queries of rlock::reentrant_lock against a real server.
#include "rlock/rlock.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <regex>

namespace lock_test {

namespace asio = boost::asio;
using rlock::test::error_of;
using rlock::test::make_config;
using namespace std::chrono_literals;

TEST(lock, reentrant_three_levels_with_hold_count) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    for (int level = 1; level <= 3; ++level) {
      co_await lock.lock();
      EXPECT_EQ(co_await lock.hold_count(), level);
    }
    EXPECT_TRUE(co_await lock.is_held());
    for (int level = 2; level >= 0; --level) {
      co_await lock.unlock();
      EXPECT_EQ(co_await lock.hold_count(), level);
    }
    EXPECT_FALSE(co_await lock.is_locked());
    EXPECT_EQ((co_await lock.remaining_ttl()).count(), -2);
    co_await redis.close();
  });
}

TEST(lock, unlock_by_another_handle_is_not_owner) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto mine = redis.get_lock("account");
    auto other = redis.get_lock("account");
    EXPECT_NE(mine.owner_id(), other.owner_id());
    co_await mine.lock();
    EXPECT_EQ(co_await error_of(other.unlock()), rlock::errc::not_owner);
    EXPECT_FALSE(co_await other.try_lock());  // two handles exclude each other
    EXPECT_FALSE(co_await other.is_held());
    EXPECT_EQ(co_await mine.hold_count(), 1);  // the failed unlock changed nothing
    co_await mine.unlock();
    co_await redis.close();
  });
}

TEST(lock, unlock_more_often_than_locked_is_not_owner) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    EXPECT_EQ(co_await error_of(lock.unlock()), rlock::errc::not_owner);  // never locked
    co_await lock.lock();
    co_await lock.lock();
    co_await lock.unlock();
    co_await lock.unlock();
    EXPECT_EQ(co_await error_of(lock.unlock()), rlock::errc::not_owner);
    co_await redis.close();
  });
}

TEST(lock, handles_with_the_same_owner_id_are_one_owner) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto a = redis.get_lock("account", 1ull << 40);
    auto b = redis.get_lock("account", 1ull << 40);
    co_await a.lock();
    EXPECT_TRUE(co_await b.try_lock());  // re-entry, not exclusion
    EXPECT_EQ(co_await a.hold_count(), 2);
    co_await b.unlock();
    co_await a.unlock();
    EXPECT_FALSE(co_await a.is_locked());
    co_await redis.close();
  });
}

TEST(lock, two_clients_exclude_each_other) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client one(io.get_executor(), cfg);
  rlock::client two(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await one.connect();
    co_await two.connect();
    EXPECT_NE(one.id(), two.id());
    auto a = one.get_lock("account");
    auto b = two.get_lock("account", a.owner_id());  // same owner id, other client: other owner
    co_await a.lock();
    EXPECT_FALSE(co_await b.try_lock());
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(co_await b.try_lock(200ms));
    const auto waited = std::chrono::steady_clock::now() - start;
    EXPECT_GE(waited, 150ms);
    EXPECT_LT(waited, 5s);
    co_await a.unlock();
    EXPECT_TRUE(co_await b.try_lock());
    co_await b.unlock();
    co_await one.close();
    co_await two.close();
  });
}

TEST(lock, wire_layout_is_redissons) {
  asio::io_context io;
  auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    EXPECT_TRUE(std::regex_match(
        redis.id(),
        std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
    auto lock = redis.get_lock("account");
    EXPECT_EQ(lock.key(), cfg.key_prefix + "account");
    EXPECT_EQ(lock.owner_field(), redis.id() + ":" + std::to_string(lock.owner_id()));
    co_await lock.lock();
    co_await lock.lock();
    auto type = raw.command({"TYPE", lock.key()});
    EXPECT_EQ(type.str, "hash");
    auto all = raw.command({"HGETALL", lock.key()});
    RLOCK_CO_ASSERT(all.elements.size() == 2u);
    EXPECT_EQ(all.elements[0].str, lock.owner_field());
    EXPECT_EQ(all.elements[1].str, "2");
    const auto pttl = raw.command_int({"PTTL", lock.key()});
    EXPECT_GT(pttl, 25'000);  // the default 30 s watchdog lease
    EXPECT_LE(pttl, 30'000);
    co_await lock.unlock();
    co_await lock.unlock();
    co_await redis.close();
  });
}

TEST(lock, explicit_lease_sets_the_ttl) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    EXPECT_TRUE(co_await lock.try_lock(0ms, 10s));
    const auto ttl = co_await lock.remaining_ttl();
    EXPECT_GT(ttl, 5s);
    EXPECT_LE(ttl, 10s);
    co_await lock.unlock();
    co_await redis.close();
  });
}

TEST(lock, force_unlock_deletes_whoever_holds_it) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto holder = redis.get_lock("account");
    auto admin = redis.get_lock("account");
    EXPECT_FALSE(co_await admin.force_unlock());  // not locked
    co_await holder.lock(10s);
    EXPECT_TRUE(co_await admin.force_unlock());
    EXPECT_FALSE(co_await holder.is_locked());
    EXPECT_EQ(co_await error_of(holder.unlock()), rlock::errc::not_owner);
    co_await redis.close();
  });
}

TEST(lock, noscript_is_recovered_after_script_flush) {
  asio::io_context io;
  auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    co_await lock.lock();
    EXPECT_EQ(raw.command({"SCRIPT", "FLUSH"}).str, "OK");
    // The acquisition keeps no copy of its call to send again: NOSCRIPT ends its attempt unrun,
    // and the next attempt goes right after a SCRIPT LOAD.
    co_await lock.lock();
    EXPECT_EQ(co_await lock.hold_count(), 2);
    raw.command({"SCRIPT", "FLUSH"});
    co_await lock.unlock();  // the release keeps its call: SCRIPT LOAD, then EVALSHA again
    co_await lock.unlock();
    EXPECT_FALSE(co_await lock.is_locked());
    co_await lock.lock();  // the second flush took the acquire script too
    co_await lock.unlock();
    co_await lock.lock();  // loaded again: a plain EVALSHA
    co_await lock.unlock();
    EXPECT_FALSE(co_await lock.is_locked());
    co_await redis.close();
  });
  // Every script call went through EVALSHA; EVAL (which would resend the source, and which
  // the docs' least-privilege ACL user may not run) never.
  auto stats = raw.command({"INFO", "commandstats"}).str;
  EXPECT_NE(stats.find("cmdstat_evalsha:"), std::string::npos);
  EXPECT_EQ(stats.find("cmdstat_eval:"), std::string::npos) << stats;
}

TEST(lock, async_forms_take_any_completion_token) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    auto other = redis.get_lock("account");
    co_await lock.async_lock(std::nullopt, asio::use_awaitable);
    auto [ec, acquired] =
        co_await other.async_try_lock(0ms, std::nullopt, asio::as_tuple(asio::use_awaitable));
    EXPECT_FALSE(ec);
    EXPECT_FALSE(acquired);
    auto [uec] = co_await other.async_unlock(asio::as_tuple(asio::use_awaitable));
    EXPECT_EQ(std::error_code(uec), rlock::errc::not_owner);
    co_await lock.async_unlock(asio::use_awaitable);
    co_await redis.close();
  });
}

}  // namespace lock_test
