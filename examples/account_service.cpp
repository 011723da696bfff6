// A coroutine service handling transfer requests under per-account locks. Two instances of the
// service (two clients, as two processes would have) serve 200 transfers between 5 accounts
// concurrently. A transfer reads both balances, waits for its "I/O", and writes them back: a
// read-modify-write that loses updates without the locks. Each transfer locks its two accounts
// in a fixed order (no deadlock between two transfers locking them in opposite orders), with
// scoped holds that release themselves if the handler throws.
// Usage: rlock_account_service [redis-url]
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <iostream>
#include <numeric>
#include <random>
#include <rlock/rlock.hpp>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;

// The accounts' store. In a real service it is a database; here both instances share this array
// in one process, which is enough to show lost updates (or their absence).
std::array<long, 5> balances{1000, 1000, 1000, 1000, 1000};

asio::awaitable<void> slow_io() {
  asio::steady_timer io_wait(co_await asio::this_coro::executor, 1ms);
  co_await io_wait.async_wait(asio::use_awaitable);
}

/// One request: move `amount` from account `from` to account `to`.
asio::awaitable<void> transfer(rlock::client& instance, int from, int to, long amount) {
  // Fixed order: the lower account number first.
  auto first = instance.get_lock("rlock-example:account:" + std::to_string(std::min(from, to)));
  auto second = instance.get_lock("rlock-example:account:" + std::to_string(std::max(from, to)));
  auto first_held = co_await first.scoped();
  auto second_held = co_await second.scoped();
  const long a = balances[static_cast<std::size_t>(from)];
  const long b = balances[static_cast<std::size_t>(to)];
  co_await slow_io();  // other requests run here
  balances[static_cast<std::size_t>(from)] = a - amount;
  balances[static_cast<std::size_t>(to)] = b + amount;
  co_await second_held.unlock();
  co_await first_held.unlock();
}

/// A service instance: handles its share of the requests, 10 at a time.
asio::awaitable<void> serve(rlock::client& instance, unsigned seed, int requests) {
  std::mt19937 rng(seed);
  auto ex = co_await asio::this_coro::executor;
  int done = 0;
  while (done < requests) {
    int started = 0;
    auto finished = std::make_shared<int>(0);
    asio::steady_timer all_done(ex, asio::steady_timer::time_point::max());
    for (; started < 10 && done + started < requests; ++started) {
      const int from = static_cast<int>(rng() % 5);
      const int to = (from + 1 + static_cast<int>(rng() % 4)) % 5;
      asio::co_spawn(ex, transfer(instance, from, to, static_cast<long>(rng() % 100)),
                     [&, finished](std::exception_ptr e) {
                       if (e) std::rethrow_exception(e);
                       if (++*finished == started) all_done.cancel();
                     });
    }
    boost::system::error_code ignored;
    co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    done += started;
  }
}

int main(int argc, char** argv) {
  try {
    asio::io_context io;
    const auto cfg = rlock::config::from_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379");
    rlock::client one(io.get_executor(), cfg);
    rlock::client two(io.get_executor(), cfg);
    int served = 0;
    auto instance = [&](rlock::client& c, unsigned seed) -> asio::awaitable<void> {
      co_await c.connect();
      co_await serve(c, seed, 100);
      served += 100;
      co_await c.close();
    };
    for (auto [c, seed] : {std::pair{&one, 1u}, std::pair{&two, 2u}}) {
      asio::co_spawn(io, instance(*c, seed), [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
    }
    io.run_for(60s);
    const long total = std::accumulate(balances.begin(), balances.end(), 0L);
    std::cout << "served " << served << " transfers; total balance " << total
              << (total == 5000 ? " (no update lost)" : " (UPDATES LOST)") << '\n';
    return served == 200 && total == 5000 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
}
