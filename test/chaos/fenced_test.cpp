// Fencing under faults: what a lease cannot promise and the token restores.
// - A writer stopped (SIGSTOP) past its lease resumes believing it holds the lock; another
//   owner has written meanwhile with a larger token; the resource refuses the stale write.
// - A fenced acquire that ran but whose answer was lost is reconciled and its token read, from
//   Redisson's counter or a clock-bounded one (config::fenced_lock).
#include "chaos/fault_proxy.hpp"
#include "rlock/rlock.hpp"
#include "support/child_process.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <optional>
#include <regex>
#include <string>

namespace fenced_chaos_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using rlock::test::child_process;
using rlock::test::direction;

// The stopped-writer scenario runs examples/fenced_write.cpp: built without examples (the
// sanitizer presets), it runs in the ci preset only.
#ifdef RLOCK_EXAMPLE_FENCED_WRITE
std::string url_of(const rlock::test::redis_server& s) {
  return "redis://127.0.0.1:" + std::to_string(s.port());
}

std::int64_t token_in(const std::string& output) {
  std::smatch m;
  static const std::regex acquired("acquired ([0-9]+)");
  return std::regex_search(output, m, acquired) ? std::stoll(m[1].str()) : -1;
}

TEST(fenced_chaos, a_writer_stopped_past_its_lease_is_refused_by_the_resource) {
  rlock::test::redis_server server;
  rlock::test::raw_client raw(server.port());
  // The first writer: a 300 ms lease, 1 s of work before its write.
  child_process stale(
      {RLOCK_EXAMPLE_FENCED_WRITE, url_of(server), "--writer", "stale", "300", "1000"});
  ASSERT_TRUE(stale.wait_for_output("acquired ", 10s)) << stale.out() << stale.err();
  stale.signal(SIGSTOP);  // a GC pause, a stopped VM: it will not notice the time pass
  // The second writer waits for the lock (its channel, then the stale lease's expiry), takes
  // it with a larger token, and writes.
  child_process fresh(
      {RLOCK_EXAMPLE_FENCED_WRITE, url_of(server), "--writer", "fresh", "5000", "0"});
  const auto fresh_code = fresh.wait(20s);
  EXPECT_EQ(fresh_code, std::optional<int>(0)) << fresh.out() << fresh.err();
  EXPECT_NE(fresh.out().find("accepted"), std::string::npos) << fresh.out();
  // The stale writer resumes, still believing, and writes: refused.
  stale.signal(SIGCONT);
  const auto stale_code = stale.wait(20s);
  EXPECT_EQ(stale_code, std::optional<int>(3)) << stale.out() << stale.err();
  EXPECT_NE(stale.out().find("refused"), std::string::npos) << stale.out();
  EXPECT_GT(token_in(fresh.out()), token_in(stale.out()));
  EXPECT_EQ(raw.command({"HGET", "rlock-example:fenced:record", "value"}).str, "fresh");
}
#endif

/// A fenced acquire that ran, whose answer (with its token) is lost with its connection: the
/// reconcile question reads the token back from the counter. `token_idle_ttl`: config's
/// fenced_lock setting (0: Redisson's counter; else clock-bounded tokens).
void an_acquire_whose_answer_is_lost_reads_its_token(std::chrono::milliseconds token_idle_ttl) {
  rlock::test::redis_server server;
  rlock::test::fault_proxy proxy(server.port());
  rlock::test::raw_client raw(server.port());
  asio::io_context io;
  auto cfg = rlock::test::make_config();
  cfg.port = proxy.port();
  cfg.health_check_interval = 200ms;
  cfg.reconnect.backoff_initial = 10ms;
  cfg.reconnect.backoff_cap = 100ms;
  cfg.fenced_lock.token_idle_ttl = token_idle_ttl;
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_fenced_lock("ledger");
    const std::string counter = lock.token_key();
    raw.command({"SET", counter, "41"});
    // The answers stall: the acquire runs on the server, its answer stays in the proxy.
    proxy.drop(direction::to_client);
    std::optional<std::int64_t> token;
    bool done = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          token = co_await lock.try_lock(10s);
          done = true;
        },
        asio::detached);
    co_await rlock::test::poll_until([&] {
      return raw.command({"HGET", lock.key(), lock.owner_field()}).str == "1";
    });
    // Redisson's counter moved by one; a clocked one to the server's clock.
    const std::int64_t given = std::stoll(raw.command({"GET", counter}).str);
    if (token_idle_ttl.count() == 0) {
      EXPECT_EQ(given, 42);
    } else {
      EXPECT_GT(given, 41);
    }
    // TCP gives up: the answer with the token is gone with the connection.
    proxy.cut_all();
    proxy.heal();
    co_await rlock::test::poll_until([&] { return done; });
    EXPECT_EQ(token, std::optional<std::int64_t>(given));
    EXPECT_EQ(lock.token(), given);
    EXPECT_GE(redis.stats().reconciled_acquires, 1u);
    EXPECT_EQ(co_await lock.hold_count(), 1);  // taken once, not twice
    co_await lock.unlock();
    EXPECT_EQ(raw.command_int({"EXISTS", lock.key()}), 0);
    co_await redis.close();
  });
}

TEST(fenced_chaos, an_acquire_whose_answer_is_lost_reads_its_token_from_the_counter) {
  an_acquire_whose_answer_is_lost_reads_its_token(0ms);
}

TEST(fenced_chaos, an_acquire_whose_answer_is_lost_reads_its_clocked_token_from_the_counter) {
  an_acquire_whose_answer_is_lost_reads_its_token(30s);
}

}  // namespace fenced_chaos_test
