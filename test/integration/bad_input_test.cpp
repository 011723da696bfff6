// Arguments at and past their limits: odd lock names, non-positive leases, negative waits,
// malformed URLs and unreachable servers.
#include "rlock/rlock.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>

namespace bad_input_test {

namespace asio = boost::asio;
using rlock::test::error_of;
using rlock::test::make_config;
using rlock::test::thrown_by;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

/// Locks `name` with one owner and checks: the key is exactly prefix + name in Redis, a second
/// owner is excluded, and unlock frees it for the second owner.
asio::awaitable<void> check_name_works(rlock::client& redis, rlock::test::raw_client& raw,
                                       const std::string& name) {
  const std::string key = redis.get_config().key_prefix + name;
  auto first = redis.get_lock(name);
  auto second = redis.get_lock(name);
  EXPECT_EQ(first.name(), name);
  EXPECT_EQ(first.key(), key);
  EXPECT_EQ(first.key().size(), redis.get_config().key_prefix.size() + name.size());

  co_await first.lock();
  EXPECT_EQ(raw.command_int({"EXISTS", key}), 1);
  EXPECT_EQ(raw.command_int({"HEXISTS", key, first.owner_field()}), 1);
  EXPECT_FALSE(co_await second.try_lock());
  EXPECT_FALSE(co_await second.try_lock(100ms));
  co_await first.lock();  // re-entry
  EXPECT_EQ(co_await first.hold_count(), 2);
  co_await first.unlock();
  co_await first.unlock();
  EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
  EXPECT_TRUE(co_await second.try_lock());
  EXPECT_FALSE(co_await first.try_lock());
  co_await second.unlock();
  EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
}

TEST(bad_input, empty_name_is_invalid_argument) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  EXPECT_EQ(thrown_by([&] { (void)redis.get_lock(""); }), rlock::errc::invalid_argument);
  EXPECT_EQ(thrown_by([&] { (void)redis.get_lock("", 1ull << 40); }),
            rlock::errc::invalid_argument);
}

TEST(bad_input, ten_kilobyte_name) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  std::string name;
  for (int i = 0; name.size() < 10 * 1024; ++i) name += std::to_string(i) + ",";
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    co_await check_name_works(redis, raw, name);
    co_await redis.close();
  });
}

TEST(bad_input, name_with_spaces) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    co_await check_name_works(redis, raw, "my account  lock \t\r\n end ");
    co_await redis.close();
  });
}

TEST(bad_input, name_with_braces) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    co_await check_name_works(redis, raw, "{");
    co_await check_name_works(redis, raw, "orders{eu}:42");
    co_await redis.close();
  });
}

TEST(bad_input, name_with_embedded_nul) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  const std::string name("ab\0cd", 5);
  ASSERT_EQ(name.size(), 5u);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    co_await check_name_works(redis, raw, name);
    // Not truncated at the NUL: "ab" is another lock.
    auto full = redis.get_lock(name);
    auto truncated = redis.get_lock("ab");
    co_await full.lock();
    EXPECT_EQ(raw.command_int({"EXISTS", cfg.key_prefix + "ab"}), 0);
    EXPECT_TRUE(co_await truncated.try_lock());
    co_await truncated.unlock();
    co_await full.unlock();
    co_await redis.close();
  });
}

TEST(bad_input, name_with_utf8_and_non_utf8_bytes) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    // "zámek-锁-🔒" spelled as bytes, so the test does not depend on the source encoding.
    co_await check_name_works(redis, raw, "z\xc3\xa1mek-\xe9\x94\x81-\xf0\x9f\x94\x92");
    co_await check_name_works(redis, raw, "\xff\xfe\x80 not utf-8");
    co_await redis.close();
  });
}

TEST(bad_input, zero_and_negative_lease_are_invalid_argument) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    // Zero, negative, and longer than a time point can hold (or than 2^31 - 1 ms).
    for (auto lease : {0ms, -1ms, -30'000ms, std::chrono::milliseconds::max(),
                       std::chrono::milliseconds(std::int64_t{1} << 31)}) {
      EXPECT_EQ(co_await error_of(lock.lock(lease)), rlock::errc::invalid_argument)
          << lease.count();
      EXPECT_EQ(co_await error_of(lock.try_lock(0ms, lease)), rlock::errc::invalid_argument)
          << lease.count();
      EXPECT_EQ(co_await error_of(lock.try_lock(1s, lease)), rlock::errc::invalid_argument)
          << lease.count();
    }
    // Nothing was taken on the way.
    EXPECT_EQ(raw.command_int({"EXISTS", lock.key()}), 0);
    EXPECT_EQ(co_await lock.hold_count(), 0);
    // The longest lease is taken, believed, and given back.
    co_await lock.lock(std::chrono::milliseconds(0x7fffffff));
    EXPECT_GT(co_await lock.remaining_ttl(), std::chrono::hours(24 * 24));
    EXPECT_TRUE(co_await lock.is_held());
    co_await lock.unlock();
    co_await redis.close();
  });
}

// A watchdog lease too short for its margin (or whose deadlines overflow) is refused when the
// client is made, with the bounds in the text, instead of renewing in a tight loop.
TEST(bad_input, a_watchdog_timeout_outside_100_ms_to_2_to_the_31_ms_is_invalid_argument) {
  asio::io_context io;
  auto cfg = make_config();
  for (const auto bad : {std::chrono::milliseconds(0), std::chrono::milliseconds(-1),
                         std::chrono::milliseconds(99), std::chrono::milliseconds(0x8000'0000)}) {
    cfg.watchdog_timeout = bad;
    try {
      rlock::client redis(io.get_executor(), cfg);
      ADD_FAILURE() << "accepted watchdog_timeout " << bad.count() << " ms";
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), rlock::errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("watchdog_timeout must be between 100 ms"),
                std::string::npos)
          << e.what();
    }
  }
  cfg.watchdog_timeout = std::chrono::milliseconds(100);
  rlock::client fine(io.get_executor(), cfg);
}

TEST(bad_input, negative_wait_is_invalid_argument) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    EXPECT_EQ(co_await error_of(lock.try_lock(-1ms)), rlock::errc::invalid_argument);
    EXPECT_EQ(co_await error_of(lock.try_lock(-1ms, 10s)), rlock::errc::invalid_argument);
    EXPECT_EQ(raw.command_int({"EXISTS", lock.key()}), 0);
    co_await redis.close();
  });
}

TEST(bad_input, zero_wait_is_one_prompt_attempt) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto holder = redis.get_lock("account");
    auto other = redis.get_lock("account");
    co_await holder.lock(30s);
    const auto attempts_before = redis.stats().acquire_attempts;
    const auto start = clock_type::now();
    EXPECT_FALSE(co_await other.try_lock(0ms));
    EXPECT_FALSE(co_await other.try_lock(0ms, 10s));
    EXPECT_LT(clock_type::now() - start, 1s);
    EXPECT_EQ(redis.stats().acquire_attempts - attempts_before, 2u);
    co_await holder.unlock();
    EXPECT_TRUE(co_await other.try_lock(0ms));  // free: the one attempt succeeds
    co_await other.unlock();
    co_await redis.close();
  });
}

TEST(bad_input, async_forms_return_the_error_code_without_throwing) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    {
      auto [ec, ok] = co_await lock.async_try_lock(0ms, 0ms, asio::as_tuple(asio::use_awaitable));
      EXPECT_EQ(std::error_code(ec), rlock::errc::invalid_argument) << ec.message();
      EXPECT_FALSE(ok);
    }
    {
      auto [ec, ok] = co_await lock.async_try_lock(-5ms, 10s, asio::as_tuple(asio::use_awaitable));
      EXPECT_EQ(std::error_code(ec), rlock::errc::invalid_argument) << ec.message();
      EXPECT_FALSE(ok);
    }
    {
      auto [ec] = co_await lock.async_lock(-1ms, asio::as_tuple(asio::use_awaitable));
      EXPECT_EQ(std::error_code(ec), rlock::errc::invalid_argument) << ec.message();
    }
    {
      auto [ec] = co_await lock.async_unlock(asio::as_tuple(asio::use_awaitable));
      EXPECT_EQ(std::error_code(ec), rlock::errc::not_owner) << ec.message();
    }
    {
      // And a valid call through the same form succeeds.
      auto [ec, ok] =
          co_await lock.async_try_lock(0ms, std::nullopt, asio::as_tuple(asio::use_awaitable));
      EXPECT_FALSE(ec) << ec.message();
      EXPECT_TRUE(ok);
      auto [uec] = co_await lock.async_unlock(asio::as_tuple(asio::use_awaitable));
      EXPECT_FALSE(uec) << uec.message();
    }
    co_await redis.close();
  });
}

TEST(bad_input, from_url_rejects_malformed_urls) {
  for (const char* url :
       {"", "redis", "redis:/", "http://localhost:6379", "rediss:/localhost", "rediss://",
        "redis://", "redis://:6379", "redis://localhost:", "redis://localhost:abc",
        "redis://localhost:0", "redis://localhost:65536", "redis://localhost:-1",
        "redis://localhost:6379/x", "redis://localhost:6379/-1", "redis://localhost:6379/1x",
        "redis://user:pw@", "redis://user:pw@:6379"}) {
    EXPECT_EQ(thrown_by([&] { (void)rlock::config::from_url(url); }), rlock::errc::invalid_argument)
        << "'" << url << "'";
  }
}

TEST(bad_input, from_url_parses_every_part) {
  const auto c = rlock::config::from_url("redis://user:pw@host:123/4");
  EXPECT_EQ(c.username, "user");
  EXPECT_EQ(c.password, "pw");
  EXPECT_EQ(c.host, "host");
  EXPECT_EQ(c.port, 123);
  EXPECT_EQ(c.database, 4);

  EXPECT_FALSE(c.tls.enabled);
  const auto t = rlock::config::from_url("rediss://user:pw@host:6380/1");
  EXPECT_TRUE(t.tls.enabled);
  EXPECT_TRUE(t.tls.verify_peer);
  EXPECT_EQ(t.host, "host");
  EXPECT_EQ(t.port, 6380);
  EXPECT_EQ(t.database, 1);

  const auto d = rlock::config::from_url("redis://example.com");
  EXPECT_EQ(d.host, "example.com");
  EXPECT_EQ(d.port, 6379);
  EXPECT_EQ(d.database, 0);
  EXPECT_TRUE(d.username.empty());
  EXPECT_TRUE(d.password.empty());

  const auto e = rlock::config::from_url("redis://secret@10.0.0.1:7000");
  EXPECT_EQ(e.username, "");
  EXPECT_EQ(e.password, "secret");
  EXPECT_EQ(e.host, "10.0.0.1");
  EXPECT_EQ(e.port, 7000);
}

/// A loopback port nothing listens on: bound once by us to get it from the kernel, then closed.
std::uint16_t free_port() {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::address_v4::loopback(), 0});
  return acceptor.local_endpoint().port();
}

TEST(bad_input, connect_to_closed_port_fails_promptly) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.port = free_port();
  cfg.connect_timeout = 2s;
  rlock::client redis(io.get_executor(), cfg);
  std::error_code ec;
  clock_type::duration took{};
  rlock::test::run(
      io,
      [&]() -> asio::awaitable<void> {
        const auto start = clock_type::now();
        ec = co_await error_of(redis.connect());
        took = clock_type::now() - start;
        co_await redis.close();
      },
      20s);
  EXPECT_TRUE(ec) << "connected to a port where nothing listens";
  EXPECT_LT(took, cfg.connect_timeout + 1s);
}

TEST(bad_input, connect_to_a_silent_server_times_out_within_connect_timeout) {
  // The kernel accepts the TCP connection into the backlog, but nobody ever answers HELLO.
  asio::io_context listener_io;
  asio::ip::tcp::acceptor silent(listener_io, {asio::ip::address_v4::loopback(), 0});
  asio::io_context io;
  auto cfg = make_config();
  cfg.port = silent.local_endpoint().port();
  cfg.connect_timeout = 1s;
  cfg.command_timeout = 10s;  // not the bound that applies here
  rlock::client redis(io.get_executor(), cfg);
  std::error_code ec;
  clock_type::duration took{};
  rlock::test::run(
      io,
      [&]() -> asio::awaitable<void> {
        const auto start = clock_type::now();
        ec = co_await error_of(redis.connect());
        took = clock_type::now() - start;
        co_await redis.close();
      },
      20s);
  EXPECT_EQ(ec, rlock::errc::timeout) << ec.message();
  EXPECT_GE(took, 500ms);
  EXPECT_LT(took, cfg.connect_timeout + 2s);
}

TEST(bad_input, blocking_client_to_closed_port_throws) {
  auto cfg = make_config();
  cfg.port = free_port();
  cfg.connect_timeout = 2s;
  const auto start = clock_type::now();
  bool threw = false;
  try {
    rlock::blocking::client redis(cfg);
  } catch (const boost::system::system_error&) {
    threw = true;
  }
  EXPECT_TRUE(threw);
  EXPECT_LT(clock_type::now() - start, cfg.connect_timeout + 2s);
}

}  // namespace bad_input_test

namespace bad_input_test {

TEST(bad_input, async_forms_keep_redis_text_in_last_error) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    EXPECT_EQ(lock.last_error(), "");
    raw.command({"SET", lock.key(), "not a hash"});
    auto [ec, ok] =
        co_await lock.async_try_lock(0ms, std::nullopt, asio::as_tuple(asio::use_awaitable));
    EXPECT_EQ(std::error_code(ec), rlock::errc::server_error) << ec.message();
    EXPECT_FALSE(ok);
    EXPECT_NE(lock.last_error().find("WRONGTYPE"), std::string::npos) << lock.last_error();
    raw.command({"DEL", lock.key()});
    co_await redis.close();
  });
}

}  // namespace bad_input_test
