// rlock's log lines through spdlog: one function from rlock::log_level to spdlog's levels.
// A second task waits longer than the (lowered) slow-acquire threshold, so a warning shows.
// Usage: rlock_spdlog_logging [redis-url]
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <rlock/rlock.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;

// rlock's logger hook is a std::function(level, line): wire it to any spdlog logger.
rlock::logger to_spdlog(std::shared_ptr<spdlog::logger> log) {
  return [log = std::move(log)](rlock::log_level level, std::string_view line) {
    switch (level) {
      case rlock::log_level::debug:
        log->debug("{}", line);
        break;
      case rlock::log_level::info:
        log->info("{}", line);
        break;
      case rlock::log_level::warning:
        log->warn("{}", line);
        break;
      case rlock::log_level::error:
        log->error("{}", line);
        break;
    }
  };
}

asio::awaitable<void> job(rlock::client& redis, const char* who) {
  auto lock = redis.get_lock("rlock-example:report");
  co_await lock.lock();
  spdlog::info("{} holds the lock", who);
  asio::steady_timer work(co_await asio::this_coro::executor, 100ms);
  co_await work.async_wait(asio::use_awaitable);
  co_await lock.unlock();
}

int main(int argc, char** argv) {
  auto log = spdlog::stdout_logger_mt("rlock");
  log->set_level(spdlog::level::debug);
  spdlog::set_pattern("[%H:%M:%S.%e] [%n] [%l] %v");
  try {
    asio::io_context io;
    auto cfg = rlock::config::from_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379");
    cfg.log = to_spdlog(log);
    cfg.slow_acquire_threshold = 50ms;  // lowered so the example shows one
    rlock::client redis(io.get_executor(), cfg);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await redis.connect();
          co_await (job(redis, "job 1") && job(redis, "job 2"));
          co_await redis.close();
        },
        [](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
        });
    io.run_for(30s);
    return 0;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}
