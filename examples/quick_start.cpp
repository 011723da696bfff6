// The co_await quick start: two tasks contend on one lock. Usage: rlock_quick_start [redis-url]
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <iostream>
#include <rlock/rlock.hpp>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;

asio::awaitable<void> transfer(rlock::client& redis, std::string who) {
  auto lock = redis.get_lock("rlock-example:account:42");  // one handle = one owner
  co_await lock.lock();  // waits, woken by unlock notifications; the watchdog keeps the lease
  std::cout << who << " holds the lock\n";
  asio::steady_timer work(co_await asio::this_coro::executor, 50ms);
  co_await work.async_wait(asio::use_awaitable);
  co_await lock.unlock();
  std::cout << who << " released it\n";
}

int main(int argc, char** argv) {
  try {
    asio::io_context io;
    auto cfg = rlock::config::from_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379");
    rlock::client redis(io.get_executor(), cfg);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await redis.connect();
          co_await (transfer(redis, "task 1") && transfer(redis, "task 2"));
          co_await redis.close();
        },
        [&](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
        });
    io.run_for(30s);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
}
