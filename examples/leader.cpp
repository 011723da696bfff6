// A service that runs its scheduler only while it leads, and prints every change of leader.
// Three instances (three clients, as three processes would be) campaign for the lead of
// "rlock-example:scheduler"; the leader runs the scheduler with its term (a fencing token a
// resource can check) for three ticks and resigns, which wakes the next candidate at once. A
// fourth client observes: every change is pushed to it, in order.
// Usage: rlock_leader [redis-url]
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <rlock/rlock.hpp>
#include <rlock/with_leadership.hpp>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
  try {
    asio::io_context io;
    const auto cfg = rlock::config::from_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379");
    constexpr int instances = 3;
    std::vector<std::unique_ptr<rlock::client>> clients;
    for (int i = 0; i <= instances; ++i) {
      clients.push_back(std::make_unique<rlock::client>(io.get_executor(), cfg));
    }
    int running = 0;       // schedulers running now: never more than one
    int most_running = 0;  // the most at once
    int terms_led = 0;
    int elected_seen = 0;
    std::int64_t last_term = 0;
    bool in_order = true;

    // The observer: prints each change until every instance has led once. Its first change is
    // the state as it is when it subscribed (a snapshot), if anybody ever led.
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          auto& redis = *clients[instances];
          co_await redis.connect();
          rlock::election view(redis, "rlock-example:scheduler");
          auto changes = view.observe();
          while (elected_seen < instances) {
            const auto c = co_await changes.next();
            if (c.what == rlock::election_change::event::snapshot) {
              std::cout << "observer: now " << (c.leading ? c.value : "nobody") << " (term "
                        << c.term << ")\n";
              if (c.leading && c.value.starts_with("instance-") && c.term > last_term) {
                ++elected_seen;  // a lead that began before this observer listened
                last_term = c.term;
              }
              continue;
            }
            const char* word = c.what == rlock::election_change::event::elected      ? "elected"
                               : c.what == rlock::election_change::event::proclaimed ? "proclaimed"
                                                                                     : "resigned";
            std::cout << "observer: " << word << (c.value.empty() ? "" : " ") << c.value
                      << " (term " << c.term << ")\n";
            if (c.what == rlock::election_change::event::elected) {
              ++elected_seen;
              in_order = in_order && c.term > last_term;
              last_term = c.term;
            }
          }
          changes.close();
          co_await redis.close();
        },
        [](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
        });

    // The instances: each campaigns, runs the scheduler while it leads, and resigns.
    for (int i = 0; i < instances; ++i) {
      asio::co_spawn(
          io,
          [&, i]() -> asio::awaitable<void> {
            auto& redis = *clients[i];
            co_await redis.connect();
            rlock::election election(redis, "rlock-example:scheduler");
            const std::string me = "instance-" + std::to_string(i + 1);
            co_await rlock::with_leadership(
                election, me, [&](std::int64_t term) -> asio::awaitable<void> {
                  most_running = std::max(most_running, ++running);
                  asio::steady_timer tick(co_await asio::this_coro::executor);
                  for (int t = 1; t <= 3; ++t) {
                    tick.expires_after(50ms);
                    co_await tick.async_wait(asio::use_awaitable);
                    std::cout << me << " (term " << term << "): scheduler tick " << t << '\n';
                  }
                  --running;
                  ++terms_led;
                });
            co_await redis.close();
          },
          [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
          });
    }
    io.run_for(30s);
    std::cout << terms_led << " terms led, at most " << most_running
              << " scheduler(s) at once, terms " << (in_order ? "increasing" : "OUT OF ORDER")
              << '\n';
    return terms_led == instances && most_running == 1 && in_order ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
}
