// bench: a quick S1 (lock+unlock, one client) and S3 (handoff between contending clients)
// against the given server, each set against round trips measured in the same run (EVALSHA of
// an empty script for S1, PING for S3, as scripts/bench does), so the ratios read the same
// whatever the machine (bench/ in the source tree has the full suite).
#include "admin_connection.hpp"
#include "commands.hpp"
#include "run.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <rlock/client.hpp>
#include <rlock/reentrant_lock.hpp>
#include <unistd.h>

namespace rlockctl {

namespace asio = boost::asio;
using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {

// Far above what a few seconds can reach; every loop also ends with its time.
constexpr std::size_t max_samples = 5'000'000;
// Bench locks carry a lease: an interrupted run leaves nothing held for long.
constexpr milliseconds bench_lease{10'000};

double percentile_us(std::vector<steady_clock::duration> v, double p) {
  if (v.empty()) return 0;
  const auto n = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n), v.end());
  return static_cast<double>(duration_cast<std::chrono::nanoseconds>(v[n]).count()) / 1000.0;
}

// A progress bar on stderr: redrawn in place on a terminal, a line per quarter otherwise (logs).
class progress {
 public:
  explicit progress(std::string label) : label_(std::move(label)), tty_(isatty(2) != 0) {}
  void show(double fraction) {
    const int pct = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * 100);
    if (tty_) {
      const int filled = pct / 5;
      fmt::print(stderr, "\r{:<4} [{:<20}] {:3}%", label_, std::string(filled, '#'), pct);
      if (pct == 100) fmt::print(stderr, "\n");
    } else if (pct / 25 > shown_ / 25 || shown_ < 0) {
      fmt::print(stderr, "{} {}%\n", label_, pct / 25 * 25);
    } else {
      return;
    }
    shown_ = pct;
    std::fflush(stderr);
  }

 private:
  std::string label_;
  bool tty_;
  int shown_ = -1;
};

// The progress of a scenario that runs for `total`, redrawn every 100 ms until `done`.
asio::awaitable<void> draw(std::shared_ptr<bool> done, std::string label,
                           steady_clock::time_point start, milliseconds total) {
  progress bar(std::move(label));
  asio::steady_timer tick(co_await asio::this_coro::executor);
  while (!*done) {
    bar.show(static_cast<double>((steady_clock::now() - start).count()) /
             static_cast<double>(total.count() > 0 ? steady_clock::duration(total).count() : 1));
    tick.expires_after(milliseconds(100));
    co_await tick.async_wait(asio::use_awaitable);
  }
  bar.show(1.0);
}

// The p50 round trip of `cmd` over 1000 calls, one at a time, after 200 unmeasured ones (an
// idle machine answers its first calls slower: CPU frequency, cold caches).
asio::awaitable<double> p50_us(admin_connection& redis, const command& cmd) {
  std::vector<steady_clock::duration> rtt;
  for (int i = 0; i < 1200; ++i) {
    command one = cmd;
    const auto t = steady_clock::now();
    co_await redis.run(std::move(one));
    if (i >= 200) rtt.push_back(steady_clock::now() - t);
  }
  co_return percentile_us(std::move(rtt), 0.5);
}

// The empty script S1 is set against: a round trip that runs Lua, as every lock operation does.
asio::awaitable<command> load_empty_script(admin_connection& redis) {
  command load{"SCRIPT", "LOAD", "return 1"};
  const reply sha = co_await redis.run(std::move(load));
  co_return command{"EVALSHA", sha.str, "0"};
}

}  // namespace

int run_bench(const context& ctx, const bench_options& opts) {
  return run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<int> {
    const output& out = ctx.out;
    admin_connection redis(ex, ctx.cfg);
    co_await redis.connect();
    const command empty_script = co_await load_empty_script(redis);

    // S1: one client, lock + unlock in a loop, uncontended.
    {
      rlock::client client(ex, ctx.cfg);
      co_await client.connect();
      auto lock = client.get_lock(fmt::format("rlockctl-bench:{}:s1", client.id()));
      std::vector<steady_clock::duration> pairs;
      std::vector<steady_clock::duration> evalshas;
      const auto start = steady_clock::now();
      const auto stop = start + opts.duration;
      auto done = std::make_shared<bool>(false);
      asio::co_spawn(ex, draw(done, "S1", start, opts.duration), asio::detached);
      // Each pair is followed by one EVALSHA of the empty script, so the floor is measured
      // under the same conditions as the pairs (a shared machine's speed drifts by the second).
      while (steady_clock::now() < stop && pairs.size() < max_samples) {
        const auto t = steady_clock::now();
        co_await lock.lock(bench_lease);
        co_await lock.unlock();
        pairs.push_back(steady_clock::now() - t);
        command floor = empty_script;
        const auto e = steady_clock::now();
        co_await redis.run(std::move(floor));
        evalshas.push_back(steady_clock::now() - e);
      }
      *done = true;
      const double p50 = percentile_us(pairs, 0.5);
      const double p99 = percentile_us(pairs, 0.99);
      const double evalsha = percentile_us(std::move(evalshas), 0.5);
      out.emit(fmt::format("S1 lock+unlock: {} pairs, p50 {:.1f} us, p99 {:.1f} us; EVALSHA p50 "
                           "{:.1f} us (interleaved); p50 = {:.2f} EVALSHA",
                           pairs.size(), p50, p99, evalsha, p50 / evalsha),
               {{"scenario", "S1"},
                {"pairs", pairs.size()},
                {"p50_us", p50},
                {"p99_us", p99},
                {"evalsha_p50_us", evalsha},
                {"p50_in_evalsha", p50 / evalsha}});
      co_await client.close();
    }

    // S3 is set against PING, measured right before it.
    const command ping_command{"PING"};
    const double ping = co_await p50_us(redis, ping_command);

    // S3: `contenders` clients (one connection each) take turns on one lock; a handoff is the
    // time from one holder's unlock call to the next holder's acquisition.
    {
      std::vector<std::unique_ptr<rlock::client>> clients;
      for (unsigned i = 0; i < opts.contenders; ++i) {
        clients.push_back(std::make_unique<rlock::client>(ex, ctx.cfg));
        co_await clients.back()->connect();
      }
      const std::string name = fmt::format("rlockctl-bench:{}:s3", clients.front()->id());
      struct shared {
        bool held = false;
        std::size_t overlaps = 0;
        std::size_t acquisitions = 0;
        steady_clock::time_point released_at{};
        std::vector<steady_clock::duration> handoffs;
        unsigned running = 0;
        std::exception_ptr failure;
        std::unique_ptr<asio::steady_timer> all_done;
      };
      auto s = std::make_shared<shared>();
      s->running = opts.contenders;
      s->all_done = std::make_unique<asio::steady_timer>(ex, steady_clock::time_point::max());
      const auto start = steady_clock::now();
      const auto stop = start + opts.duration;
      auto done = std::make_shared<bool>(false);
      asio::co_spawn(ex, draw(done, "S3", start, opts.duration), asio::detached);
      for (auto& c : clients) {
        asio::co_spawn(
            ex,
            [](rlock::reentrant_lock lock, std::shared_ptr<shared> run,
               steady_clock::time_point until) -> asio::awaitable<void> {
              while (steady_clock::now() < until && run->acquisitions < max_samples) {
                co_await lock.lock(bench_lease);
                const auto now = steady_clock::now();
                if (run->held) ++run->overlaps;  // never expected: the lock's one job
                run->held = true;
                ++run->acquisitions;
                if (run->released_at != steady_clock::time_point{}) {
                  run->handoffs.push_back(now - run->released_at);
                }
                run->held = false;
                run->released_at = steady_clock::now();
                co_await lock.unlock();
              }
            }(c->get_lock(name), s, stop),
            [s](std::exception_ptr e) {
              if (e && !s->failure) s->failure = e;
              if (--s->running == 0) s->all_done->cancel();
            });
      }
      auto [ec] = co_await s->all_done->async_wait(asio::as_tuple(asio::use_awaitable));
      (void)ec;
      *done = true;
      if (s->failure) std::rethrow_exception(s->failure);
      const double secs = std::chrono::duration<double>(steady_clock::now() - start).count();
      const double p50 = percentile_us(s->handoffs, 0.5);
      const double p99 = percentile_us(s->handoffs, 0.99);
      out.emit(
          fmt::format("S3 handoff, {} clients: {} acquisitions, {:.0f}/s, handoff p50 {:.1f} "
                      "us, p99 {:.1f} us; p50 = {:.2f} PING; overlaps {}",
                      opts.contenders, s->acquisitions, static_cast<double>(s->acquisitions) / secs,
                      p50, p99, p50 / ping, s->overlaps),
          {{"scenario", "S3"},
           {"contenders", opts.contenders},
           {"acquisitions", s->acquisitions},
           {"acquisitions_per_s", static_cast<double>(s->acquisitions) / secs},
           {"handoff_p50_us", p50},
           {"handoff_p99_us", p99},
           {"ping_p50_us", ping},
           {"p50_in_ping", p50 / ping},
           {"overlaps", s->overlaps}});
      for (auto& c : clients) co_await c->close();
      redis.close();
      // An overlap is a broken lock: the run fails.
      co_return s->overlaps == 0 ? exit_ok : exit_error;
    }
  });
}

}  // namespace rlockctl
