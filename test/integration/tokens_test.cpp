// Every asynchronous operation of the client and the lock, driven once with each kind of
// completion token: a callback, use_future, as_tuple(use_awaitable) and deferred. Each form must
// complete exactly once with the same results and the same error codes (Asio's convention:
// `void(error_code, T...)`), and the default token must be deferred (nothing starts until the
// operation is launched).
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <optional>
#include <rlock/client.hpp>
#include <rlock/error.hpp>
#include <rlock/hold.hpp>
#include <rlock/metrics.hpp>
#include <string>
#include <thread>
#include <tuple>

namespace tokens_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;

rlock::test::redis_server& server() {
  static rlock::test::redis_server s;
  return s;
}

/// An io_context running on its own thread, so that use_future can be waited on here.
struct runner {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread{[this] { io.run(); }};
  ~runner() {
    work.reset();
    io.stop();
    thread.join();
  }
};

rlock::config test_config(const std::string& prefix) {
  rlock::config cfg;
  cfg.port = server().port();
  cfg.key_prefix = prefix;
  cfg.watchdog_timeout = 1000ms;
  return cfg;
}

enum class form { callback, future, tuple_awaitable, deferred };
constexpr form all_forms[] = {form::callback, form::future, form::tuple_awaitable, form::deferred};

const char* name_of(form f) {
  switch (f) {
    case form::callback:
      return "callback";
    case form::future:
      return "use_future";
    case form::tuple_awaitable:
      return "as_tuple(use_awaitable)";
    default:
      return "deferred";
  }
}

/// Waits for `f` at most 10 s (a hang fails the test instead of blocking it).
template <typename T>
T get(std::future<T>& f) {
  if (f.wait_for(10s) != std::future_status::ready) {
    ADD_FAILURE() << "no completion within 10 s";
    throw std::runtime_error("hung");
  }
  return f.get();
}

/// Starts `op(token)` with the token of form `f` and returns what it completed with, as
/// (error_code, results...). `op` takes any token: `[&](auto&& t) { return l.async_x(t); }`.
template <typename... R, typename Op>
std::tuple<error_code, R...> complete(runner& r, form f, Op op) {
  using result = std::tuple<error_code, R...>;
  switch (f) {
    case form::callback: {
      std::promise<result> p;
      auto done = p.get_future();
      int calls = 0;
      op([&p, &calls](error_code ec, R... v) {
        if (++calls == 1) p.set_value(result{ec, std::move(v)...});
      });
      auto out = get(done);
      EXPECT_EQ(calls, 1);
      return out;
    }
    case form::future: {
      auto fut = op(asio::use_future);
      try {
        if constexpr (sizeof...(R) == 0) {
          get(fut);
          return result{};
        } else {
          return result{error_code{}, get(fut)};
        }
      } catch (const boost::system::system_error& e) {
        return result{e.code(), R{}...};
      }
    }
    case form::tuple_awaitable: {
      auto fut = asio::co_spawn(
          r.io,
          [&]() -> asio::awaitable<result> {
            co_return co_await op(asio::as_tuple(asio::use_awaitable));
          },
          asio::use_future);
      return get(fut);
    }
    default: {
      auto deferred = op(asio::deferred);  // nothing has started yet
      std::promise<result> p;
      auto done = p.get_future();
      std::move(deferred)([&p](error_code ec, R... v) {
        p.set_value(result{ec, std::move(v)...});
      });
      return get(done);
    }
  }
}

/// The raw hold count of `l`'s owner on the server ("" when not held).
std::string raw_count(const rlock::lock_handle& l) {
  rlock::test::raw_client raw(server().port());
  return raw.command({"HGET", l.key(), l.owner_field()}).str;
}

TEST(tokens, connect_and_close) {
  for (const form f : all_forms) {
    SCOPED_TRACE(name_of(f));
    runner r;
    rlock::client c(r.io.get_executor(), test_config("tokens.connect:"));
    auto [ec] = complete(r, f, [&](auto&& t) { return c.async_connect(std::move(t)); });
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_EQ(c.state(), rlock::connection_state::connected);
    auto [cec] = complete(r, f, [&](auto&& t) { return c.async_close(std::move(t)); });
    EXPECT_FALSE(cec) << cec.message();
    EXPECT_EQ(c.state(), rlock::connection_state::closed);
  }
  // A connect that fails reports the error through every token alike.
  for (const form f : all_forms) {
    SCOPED_TRACE(name_of(f));
    runner r;
    auto cfg = test_config("tokens.connect:");
    cfg.host = "no-such-host.invalid";
    rlock::client c(r.io.get_executor(), cfg);
    auto [ec] = complete(r, f, [&](auto&& t) { return c.async_connect(std::move(t)); });
    EXPECT_EQ(ec, rlock::errc::resolve_failed) << ec.message();
  }
}

class lock_tokens : public ::testing::TestWithParam<form> {
 protected:
  void SetUp() override {
    auto connected = asio::co_spawn(r.io, a.connect(), asio::use_future);
    get(connected);
  }
  void TearDown() override {
    auto closed = asio::co_spawn(r.io, a.close(), asio::use_future);
    get(closed);
  }
  runner r;
  rlock::client a{r.io.get_executor(),
                  test_config("tokens." + std::string(name_of(GetParam())) + ":")};
};

TEST_P(lock_tokens, lock_and_unlock) {
  auto l = a.get_lock("lu");
  auto [ec] = complete(r, GetParam(), [&](auto&& t) { return l.async_lock(std::move(t)); });
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(raw_count(l), "1");
  auto [lec] = complete(r, GetParam(), [&](auto&& t) { return l.async_lock(5s, std::move(t)); });
  // An absent lease is the watchdog's, also without a token.
  static_assert(!std::is_void_v<decltype(l.async_lock(std::nullopt))>);
  ASSERT_FALSE(lec) << lec.message();
  EXPECT_EQ(raw_count(l), "2");  // re-entered
  for (int i = 0; i < 2; ++i) {
    auto [uec] = complete(r, GetParam(), [&](auto&& t) { return l.async_unlock(std::move(t)); });
    EXPECT_FALSE(uec) << uec.message();
  }
  EXPECT_EQ(raw_count(l), "");
  // Errors arrive as error codes, the same through every token.
  auto [nec] = complete(r, GetParam(), [&](auto&& t) { return l.async_unlock(std::move(t)); });
  EXPECT_EQ(nec, rlock::errc::not_owner);
  auto [iec] = complete(r, GetParam(), [&](auto&& t) { return l.async_lock(-1ms, std::move(t)); });
  EXPECT_EQ(iec, rlock::errc::invalid_argument);
}

TEST_P(lock_tokens, try_lock_forms) {
  auto mine = a.get_lock("tl");
  auto theirs = a.get_lock("tl");
  auto [ec, got] =
      complete<bool>(r, GetParam(), [&](auto&& t) { return mine.async_try_lock(std::move(t)); });
  EXPECT_FALSE(ec);
  EXPECT_TRUE(got);
  auto [ec2, got2] = complete<bool>(
      r, GetParam(), [&](auto&& t) { return theirs.async_try_lock(0ms, std::move(t)); });
  EXPECT_FALSE(ec2);
  EXPECT_FALSE(got2);
  auto [ec3, got3] = complete<bool>(
      r, GetParam(), [&](auto&& t) { return theirs.async_try_lock(20ms, 5s, std::move(t)); });
  EXPECT_FALSE(ec3);
  EXPECT_FALSE(got3);
  auto [ec4, got4] = complete<bool>(
      r, GetParam(), [&](auto&& t) { return theirs.async_try_lock(-1ms, std::move(t)); });
  EXPECT_EQ(ec4, rlock::errc::invalid_argument);
  EXPECT_FALSE(got4);
  auto [uec] = complete(r, GetParam(), [&](auto&& t) { return mine.async_unlock(std::move(t)); });
  EXPECT_FALSE(uec);
}

TEST_P(lock_tokens, queries) {
  auto l = a.get_lock("q");
  auto other = a.get_lock("q");
  auto [ec] = complete(r, GetParam(), [&](auto&& t) { return l.async_lock(10s, std::move(t)); });
  ASSERT_FALSE(ec);
  auto [e1, locked] =
      complete<bool>(r, GetParam(), [&](auto&& t) { return other.async_is_locked(std::move(t)); });
  EXPECT_FALSE(e1);
  EXPECT_TRUE(locked);
  auto [e2, held] =
      complete<bool>(r, GetParam(), [&](auto&& t) { return l.async_is_held(std::move(t)); });
  EXPECT_FALSE(e2);
  EXPECT_TRUE(held);
  auto [e3, not_held] =
      complete<bool>(r, GetParam(), [&](auto&& t) { return other.async_is_held(std::move(t)); });
  EXPECT_FALSE(e3);
  EXPECT_FALSE(not_held);
  auto [e4, count] = complete<std::int64_t>(
      r, GetParam(), [&](auto&& t) { return l.async_hold_count(std::move(t)); });
  EXPECT_FALSE(e4);
  EXPECT_EQ(count, 1);
  auto [e5, ttl] = complete<std::chrono::milliseconds>(
      r, GetParam(), [&](auto&& t) { return l.async_remaining_ttl(std::move(t)); });
  EXPECT_FALSE(e5);
  EXPECT_GT(ttl, 0ms);
  EXPECT_LE(ttl, 10s);
  auto [e6, forced] = complete<bool>(
      r, GetParam(), [&](auto&& t) { return other.async_force_unlock(std::move(t)); });
  EXPECT_FALSE(e6);
  EXPECT_TRUE(forced);
  auto [e7, again] = complete<bool>(
      r, GetParam(), [&](auto&& t) { return other.async_force_unlock(std::move(t)); });
  EXPECT_FALSE(e7);
  EXPECT_FALSE(again);
  auto [e8, gone] = complete<std::chrono::milliseconds>(
      r, GetParam(), [&](auto&& t) { return l.async_remaining_ttl(std::move(t)); });
  EXPECT_FALSE(e8);
  EXPECT_EQ(gone, -2ms);
}

TEST_P(lock_tokens, lost) {
  auto l = a.get_lock("lost");
  // Not held through the watchdog: not_owner at once.
  auto [nec] = complete(r, GetParam(), [&](auto&& t) { return l.async_lost(std::move(t)); });
  EXPECT_EQ(nec, rlock::errc::not_owner);
  auto [ec] = complete(r, GetParam(), [&](auto&& t) { return l.async_lock(std::move(t)); });
  ASSERT_FALSE(ec);
  // Deleted behind the holder's back: the next renewal (within a third of the 1 s lease) finds
  // it gone.
  rlock::test::raw_client raw(server().port());
  raw.command({"DEL", l.key()});
  auto [lec] = complete(r, GetParam(), [&](auto&& t) { return l.async_lost(std::move(t)); });
  EXPECT_FALSE(lec) << lec.message();
}

TEST_P(lock_tokens, scoped_holds_and_their_unlock) {
  auto l = a.get_lock("scoped");
  auto other = a.get_lock("scoped");
  auto [ec, held] =
      complete<rlock::hold>(r, GetParam(), [&](auto&& t) { return l.async_scoped(std::move(t)); });
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_TRUE(held.owns_lock());
  EXPECT_EQ(raw_count(l), "1");
  // Busy: an empty hold, no error.
  auto [ec2, none] = complete<rlock::hold>(
      r, GetParam(), [&](auto&& t) { return other.async_try_scoped(10ms, 5s, std::move(t)); });
  EXPECT_FALSE(ec2) << ec2.message();
  EXPECT_FALSE(none.owns_lock());
  auto [uec] =
      complete(r, GetParam(), [&, h = &held](auto&& t) { return h->async_unlock(std::move(t)); });
  EXPECT_FALSE(uec) << uec.message();
  EXPECT_FALSE(held.owns_lock());
  EXPECT_EQ(raw_count(l), "");
  // A released hold owns nothing: not_owner, through every token alike.
  auto [nec] =
      complete(r, GetParam(), [&, h = &held](auto&& t) { return h->async_unlock(std::move(t)); });
  EXPECT_EQ(nec, rlock::errc::not_owner);
  auto [ec3, leased] = complete<rlock::hold>(
      r, GetParam(), [&](auto&& t) { return other.async_scoped(5s, std::move(t)); });
  ASSERT_FALSE(ec3) << ec3.message();
  EXPECT_EQ(raw_count(other), "1");
  auto [ec4, bad] = complete<rlock::hold>(
      r, GetParam(), [&](auto&& t) { return l.async_try_scoped(-1ms, std::move(t)); });
  EXPECT_EQ(ec4, rlock::errc::invalid_argument);
  EXPECT_FALSE(bad.owns_lock());
  auto [uec2] =
      complete(r, GetParam(), [&, h = &leased](auto&& t) { return h->async_unlock(std::move(t)); });
  EXPECT_FALSE(uec2) << uec2.message();
  EXPECT_EQ(raw_count(other), "");
}

TEST_P(lock_tokens, fenced_acquisitions_complete_with_their_tokens) {
  auto l = a.get_fenced_lock("fenced");
  auto other = a.get_fenced_lock("fenced");
  auto [ec, t1] =
      complete<std::int64_t>(r, GetParam(), [&](auto&& t) { return l.async_lock(std::move(t)); });
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(t1, 1);
  auto [ec2, t2] = complete<std::optional<std::int64_t>>(
      r, GetParam(), [&](auto&& t) { return l.async_try_lock(0ms, 5s, std::move(t)); });
  EXPECT_FALSE(ec2);
  EXPECT_EQ(t2, std::optional<std::int64_t>(2));
  auto [ec3, none] = complete<std::optional<std::int64_t>>(
      r, GetParam(), [&](auto&& t) { return other.async_try_lock(10ms, std::move(t)); });
  EXPECT_FALSE(ec3);
  EXPECT_EQ(none, std::nullopt);
  auto [ec4, current] = complete<std::int64_t>(
      r, GetParam(), [&](auto&& t) { return other.async_current_token(std::move(t)); });
  EXPECT_FALSE(ec4);
  EXPECT_EQ(current, 2);
  auto [ec5, bad] = complete<std::int64_t>(
      r, GetParam(), [&](auto&& t) { return other.async_lock(-1ms, std::move(t)); });
  EXPECT_EQ(ec5, rlock::errc::invalid_argument);
  for (int i = 0; i < 2; ++i) {
    auto [uec] = complete(r, GetParam(), [&](auto&& t) { return l.async_unlock(std::move(t)); });
    EXPECT_FALSE(uec);
  }
  EXPECT_EQ(raw_count(l), "");
}

TEST_P(lock_tokens, metrics) {
  auto l = a.get_lock("metrics");
  auto [ec] = complete(r, GetParam(), [&](auto&& t) { return l.async_lock(5s, std::move(t)); });
  ASSERT_FALSE(ec);
  auto [mec, m] = complete<rlock::client_metrics>(
      r, GetParam(), [&](auto&& t) { return a.async_metrics(std::move(t)); });
  EXPECT_FALSE(mec) << mec.message();
  EXPECT_EQ(m.acquisitions_immediate, 1u);
  auto [uec] = complete(r, GetParam(), [&](auto&& t) { return l.async_unlock(std::move(t)); });
  EXPECT_FALSE(uec);
}

std::string test_name(const ::testing::TestParamInfo<form>& p) {
  const std::string n = name_of(p.param);
  return n == "as_tuple(use_awaitable)" ? "as_tuple_use_awaitable" : n;
}
INSTANTIATE_TEST_SUITE_P(every_token, lock_tokens, ::testing::ValuesIn(all_forms), test_name);

TEST(tokens, the_default_token_is_deferred_and_starts_nothing_until_launched) {
  runner r;
  rlock::client c(r.io.get_executor(), test_config("tokens.default:"));
  auto connected = asio::co_spawn(r.io, c.connect(), asio::use_future);
  get(connected);
  auto l = c.get_lock("d");
  auto op = l.async_lock();  // rlock::default_completion_token: asio::deferred
  static_assert(!std::is_void_v<decltype(op)>);
  // Not launched: nothing reached the server. A round trip on the same connection proves it.
  auto held = asio::co_spawn(r.io, l.is_held(), asio::use_future);
  EXPECT_FALSE(get(held));
  // co_await launches it; errors would be thrown as boost::system::system_error.
  auto locked = asio::co_spawn(
      r.io,
      [&]() -> asio::awaitable<void> {
        co_await std::move(op);
        co_await l.async_unlock();
      },
      asio::use_future);
  get(locked);
  EXPECT_EQ(raw_count(l), "");
  auto closed = asio::co_spawn(r.io, c.close(), asio::use_future);
  get(closed);
}

}  // namespace tokens_test
