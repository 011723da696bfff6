// The caller's wait is the bound: every bounded form of acquisition returns by its wait when the
// server stops answering (SIGSTOP), the network swallows the connection (a black hole) or the
// server is gone (SIGKILL), not after the wait plus config::command_timeout; the attempt left
// unanswered is settled in the background, and the hold it makes once the fault heals is given
// back.
#include "chaos/fault_proxy.hpp"
#include "rlock/blocking.hpp"
#include "rlock/rlock.hpp"
#include "support/lock_env.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

namespace wait_bound_test {

namespace asio = boost::asio;
using rlock::test::error_of;
using rlock::test::poll_until;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

enum class fault { stopped_server, black_hole, killed_server };
enum class form { try_lock, async_try_lock, try_scoped, fenced_try_lock, blocking_try_lock_for };

constexpr auto wait = 400ms;
// Far beyond the wait: a call that waited for it would be caught by the test's own bound.
constexpr auto command_timeout = 60s;

/// A server, reached directly or through a proxy, and the fault to put between them.
struct rig {
  explicit rig(fault f) : kind(f) {
    if (kind == fault::black_hole) proxy.emplace(server.port());
  }
  ~rig() { heal(); }
  std::uint16_t port() const { return proxy ? proxy->port() : server.port(); }
  void strike() {
    if (kind == fault::stopped_server) {
      ::kill(server.pid(), SIGSTOP);
    } else if (kind == fault::killed_server) {
      server.kill_hard();
    } else {
      proxy->black_hole();
    }
    struck = true;
  }
  void heal() {
    if (!struck) return;
    struck = false;
    if (kind == fault::stopped_server) {
      ::kill(server.pid(), SIGCONT);
    } else if (kind == fault::killed_server) {
      server.restart();  // empty: the attempt never reached it
    } else {
      proxy->heal();  // the held attempt is delivered: it runs late
    }
  }
  rlock::config config() const {
    auto cfg = rlock::test::make_config();
    cfg.port = port();
    cfg.command_timeout = command_timeout;
    cfg.health_check_interval = 30s;  // the connection outlives the fault: the answer comes late
    return cfg;
  }

  fault kind;
  rlock::test::redis_server server;
  std::optional<rlock::test::fault_proxy> proxy;
  bool struck = false;
};

std::string name_of(const testing::TestParamInfo<std::tuple<form, fault>>& info) {
  static const char* forms[] = {"try_lock", "async_try_lock", "try_scoped", "fenced_try_lock",
                                "blocking_try_lock_for"};
  const auto [f, x] = info.param;
  static const char* faults[] = {"_stopped_server", "_black_hole", "_killed_server"};
  return std::string(forms[static_cast<int>(f)]) + faults[static_cast<int>(x)];
}

class wait_bound : public testing::TestWithParam<std::tuple<form, fault>> {};

/// One bounded acquisition with the fault in place: the error it ends with.
asio::awaitable<std::error_code> bounded_acquire(rlock::client& redis, form f) {
  auto lock = redis.get_lock("bounded");
  switch (f) {
    case form::try_lock:
      co_return co_await error_of(lock.try_lock(wait));
    case form::async_try_lock: {
      auto [ec, acquired] = co_await lock.async_try_lock(wait, asio::as_tuple(asio::use_awaitable));
      EXPECT_FALSE(acquired);
      co_return std::error_code(ec);
    }
    case form::try_scoped:
      co_return co_await error_of(lock.try_scoped(wait));
    case form::fenced_try_lock:
      co_return co_await error_of(redis.get_fenced_lock("bounded").try_lock(wait));
    case form::blocking_try_lock_for:
      break;
  }
  co_return std::error_code{};
}

TEST_P(wait_bound, returns_by_the_wait_and_gives_back_what_lands_later) {
  // Named members, not a structured binding: the lambdas below capture them (clang 14 does
  // not capture structured bindings).
  const auto f = std::get<0>(GetParam());
  const auto x = std::get<1>(GetParam());
  rig r(x);
  std::error_code got;
  clock_type::duration took{};
  std::uint64_t given_back = 0;
  bool locked_after = true;

  if (f == form::blocking_try_lock_for) {
    rlock::blocking::client redis(r.config());
    auto lock = redis.get_lock("bounded");
    r.strike();
    const auto start = clock_type::now();
    got = rlock::test::thrown_by([&] { (void)lock.try_lock_for(wait); });
    took = clock_type::now() - start;
    r.heal();
    auto& async = redis.async_client();
    for (int i = 0; i < 500 && x != fault::killed_server && async.stats().given_back == 0; ++i)
      std::this_thread::sleep_for(10ms);
    given_back = async.stats().given_back;
    locked_after = lock.is_locked();
  } else {
    asio::io_context io;
    rlock::client redis(io.get_executor(), r.config());
    rlock::test::run(io, [&]() -> asio::awaitable<void> {
      co_await redis.connect();
      r.strike();
      const auto start = clock_type::now();
      got = co_await bounded_acquire(redis, f);
      took = clock_type::now() - start;
      r.heal();
      if (x != fault::killed_server) {
        co_await poll_until([&] { return redis.stats().given_back >= 1; }, 10s);
      }
      given_back = redis.stats().given_back;
      locked_after = co_await redis.get_lock("bounded").is_locked();
      co_await redis.close();
    });
  }
  std::printf(
      "%s: returned after %lld ms (wait %lld ms, command_timeout %lld s)\n",
      name_of({GetParam(), 0}).c_str(),
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()),
      static_cast<long long>(wait.count()), static_cast<long long>(command_timeout.count()));
  // The server never answered within the wait: the outcome is a timeout, not "busy".
  EXPECT_EQ(got, rlock::errc::timeout) << got.message();
  // By the wait, not by wait + command_timeout (a bound of half the latter keeps this from
  // being a timing assertion: the two outcomes are a minute apart).
  EXPECT_GE(took, wait);
  EXPECT_LT(took, command_timeout / 2);
  // Stopped or black-holed, the attempt ran once the fault healed, took the free lock, and was
  // given back; killed, it never reached a server. Either way nobody holds the lock.
  if (x != fault::killed_server) {
    EXPECT_GE(given_back, 1u);
  }
  EXPECT_FALSE(locked_after);
}

INSTANTIATE_TEST_SUITE_P(forms_and_faults, wait_bound,
                         testing::Combine(testing::Values(form::try_lock, form::async_try_lock,
                                                          form::try_scoped, form::fenced_try_lock,
                                                          form::blocking_try_lock_for),
                                          testing::Values(fault::stopped_server, fault::black_hole,
                                                          fault::killed_server)),
                         name_of);

}  // namespace wait_bound_test
