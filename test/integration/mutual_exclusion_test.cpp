// Mutual exclusion under contention: a non-atomic read-modify-write inside the lock never loses
// an update, across coroutines of one client, two clients and blocking threads.
#include "rlock/rlock.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace mutual_exclusion_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;

constexpr int coroutines_per_client = 16;
constexpr int blocking_threads = 4;
constexpr int increments = 100;

/// GET, then SET of the value plus one: two commands, so an overlap loses an update.
void increment(rlock::test::raw_client& raw, const std::string& key) {
  const auto v = raw.command({"GET", key});
  const long n = v.is_null() ? 0 : std::stol(v.str);
  raw.command({"SET", key, std::to_string(n + 1)});
}

/// One client on its own io thread, running `coroutines_per_client` incrementing coroutines.
std::future<void> run_client(asio::io_context& io, const rlock::config& cfg,
                             const std::string& counter) {
  return asio::co_spawn(
      io,
      [&io, cfg, counter]() -> asio::awaitable<void> {
        rlock::client redis(io.get_executor(), cfg);
        co_await redis.connect();
        std::vector<std::future<void>> workers;
        for (int c = 0; c < coroutines_per_client; ++c) {
          workers.push_back(asio::co_spawn(
              io,
              [&redis, &counter, port = cfg.port]() -> asio::awaitable<void> {
                rlock::test::raw_client raw(port);
                auto lock = redis.get_lock("counter-lock");
                for (int i = 0; i < increments; ++i) {
                  co_await lock.lock();
                  const auto v = raw.command({"GET", counter});
                  // Yield between read and write: without exclusion, others run here.
                  co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
                  const long n = v.is_null() ? 0 : std::stol(v.str);
                  raw.command({"SET", counter, std::to_string(n + 1)});
                  co_await lock.unlock();
                }
              },
              asio::use_future));
        }
        // Wait without blocking the io thread: poll the futures on a timer, bounded.
        for (int i = 0; i < 12'000; ++i) {
          bool all = true;
          for (auto& w : workers) all = all && w.wait_for(0s) == std::future_status::ready;
          if (all) break;
          asio::steady_timer t(io, 10ms);
          co_await t.async_wait(asio::use_awaitable);
        }
        for (auto& w : workers) w.get();
        co_await redis.close();
      },
      asio::use_future);
}

TEST(mutual_exclusion, coroutines_clients_and_threads_never_overlap) {
  rlock::config cfg;
  cfg.port = rlock::test::shared_server().port();
  cfg.key_prefix = rlock::test::unique_prefix();
  const std::string counter = cfg.key_prefix + "counter";

  asio::io_context io_one;
  asio::io_context io_two;
  auto one = run_client(io_one, cfg, counter);
  auto two = run_client(io_two, cfg, counter);
  std::thread thread_one([&] { io_one.run_for(120s); });
  std::thread thread_two([&] { io_two.run_for(120s); });

  std::vector<std::thread> threads;
  std::mutex errors_mutex;
  std::vector<std::string> errors;
  {
    rlock::blocking::client sync_redis(cfg);
    for (int t = 0; t < blocking_threads; ++t) {
      threads.emplace_back([&] {
        try {
          rlock::test::raw_client raw(cfg.port);
          auto lock = sync_redis.get_lock("counter-lock");
          for (int i = 0; i < increments; ++i) {
            std::scoped_lock guard{lock};
            increment(raw, counter);
          }
        } catch (const std::exception& e) {
          std::lock_guard g(errors_mutex);
          errors.push_back(e.what());
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  thread_one.join();
  thread_two.join();
  EXPECT_NO_THROW(one.get());
  EXPECT_NO_THROW(two.get());
  EXPECT_TRUE(errors.empty()) << errors.front();

  rlock::test::raw_client raw(cfg.port);
  const auto total = raw.command({"GET", counter});
  EXPECT_EQ(total.str, std::to_string((2 * coroutines_per_client + blocking_threads) * increments));
  EXPECT_EQ(raw.command_int({"EXISTS", cfg.key_prefix + "counter-lock"}), 0);
}

}  // namespace mutual_exclusion_test
