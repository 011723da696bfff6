// rlock's benchmark driver: the modes of bench/DRIVERS.md plus rlock-only scenarios.
//   s1, s2, s3-worker            as every peer (library "rlock"); s1 --concurrency C runs C
//                                loops on one client, each on its own key
//   s1-blocking, s3-worker-blocking   the blocking facade through std::unique_lock
//   s3-local --concurrency P     S3 between P coroutines of one client (hold 1 ms, 1 ms out):
//                                local handoffs (config::local_handoff) and the gap per handoff
//   s4 --waiters W               fan-out: Redis commands per handoff with W local waiters
//   s5 --locks N                 watchdog scale: renewal calls per period, CPU, RSS per lock
//   s6 --waiters N --names K [--waiter coroutine|callback]
//                                waiter scale: RSS per waiter, subscriptions
//   s2-floor --concurrency C [--connections N]
//                                rlock's server work for S2's C pairs in flight, pipelined by a
//                                minimal client on N connections (default 1): the floor under S2
//   s1-floor [--members N] [--cluster 1] [--batch 1]
//                                S1's pair over N locks (as --kind multi names them) by blocking
//                                minimal clients, one write per node per half: the floor under a
//                                multi-lock's pair (N = 1: under one lock's); --batch 1: one
//                                script per node per half runs every member's script
//   s3-floor [--contenders K] [--release 1 [--hold-ms MS]]
//                                release → notification → acquire with blocking minimal clients;
//                                K subscribed processes answering each message (S3's P - 1);
//                                --release 1: each round is the holder's unlock script after a
//                                hold of MS (50), F1's handoff, instead of a PUBLISH after 1 ms
//   s3-push-floor                a publish heard by a blocking minimal client (a push handoff's
//                                floor)
//   s3-fair-floor [--queued N] [--release 1 [--hold-ms MS]]
//                                the fair lock's handoff by push between blocking minimal clients
//                                running rlock's fair scripts; N more waiters queued behind the
//                                one handed the lock (S3's P - 2 at P): the scripts walk them;
//                                --release 1: the holder holds MS (50) first, as F1's do
//   s6-floor --waiters N         RSS of N bare parked Asio coroutines: the floor under S6
//   s7-floor --threads T         T blocking threads, each its own connection: the floor under S7
//   s8 --restarts N [--redis-server PATH]
//                                recovery on a private redis-server it starts itself: SIGKILL +
//                                restart and CLIENT KILL, N each, and the holder's lost() margin
//   e1 --concurrency N [--hold-ms LEASE] [--restarts K] [--cluster 1]
//                                an election's failover among N candidates (a client each) and an
//                                observer: resignations for --seconds (handover, observer's
//                                notification), then K leaders with a leader lease of LEASE ms
//                                SIGKILLed in a process of their own (e1-leader) and replaced
//   print-acquire-script         the acquire Lua, for the EVALSHA reference
//   s4-rw --waiters W            a read-write lock's fan-out: W readers behind a writer, commands
//                                and attempts per reader after the write unlock
//   family-worker --kind K --key KEY [--hold-ms 50] [--warmup S] [--seconds S] --out FILE
//                                one process of F1 (scripts/bench): acquire, hold, release;
//                                K also latch-counter or latch-waiter; --permits N (semaphore),
//                                --priority readers|writers (read-write)
// s1 and s3-worker take --kind reentrant|fair|non-reentrant|non-reentrant-fair|spin|read|write|
// multi|semaphore (default reentrant): the same loop on another kind of the lock family (read:
// S1 only, readers never exclude each other; multi: a multi-lock over the key and `<key>:2`;
// semaphore: a semaphore of one permit).
// Results: one JSON line on stdout; progress on stderr. Only 127.0.0.1 is contacted.
#include "names/names.hpp"
#include "resp3/parser.hpp"
#include "resp3/request.hpp"
#include "rlock/rlock.hpp"
#include "script/loaded_source.hpp"
#include "script/scripts.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/system_error.hpp>
#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <netinet/in.h>
#include <numeric>
#include <optional>
#include <poll.h>
#include <random>
#include <span>
#include <spawn.h>
#include <string>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <variant>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

struct options {
  std::string mode;
  std::uint16_t port = 6379;
  double seconds = 3;
  int concurrency = 1;
  int connections = 1;  // s2-floor
  int waiters = 10;
  int locks = 10'000;
  int names = 1'000;
  int threads = 1;
  std::string key = "bench:s3";
  std::string out;
  std::string prefix = "bench:";
  std::string waiter = "coroutine";
  int restarts = 20;
  /// --track-holds 0|1: config::track_holds (default: the library's)
  bool track_holds = rlock::config{}.track_holds;
  std::string redis_server = "redis-server";
  std::string tls_ca;         // set: TLS to --port, verified against this CA
  bool cluster = false;       // --cluster 1: --port is a seed of a Redis Cluster (config::cluster)
  bool local_handoff = true;  // --local-handoff 0: config::local_handoff off (on: 8, 20 ms)
  std::string kind = "reentrant";  // s1, s3-worker: the exclusive kind
  int members = 2;                 // --kind multi: how many reentrant locks the group takes
  bool batch = false;              // s1-floor --batch 1: one script per node for all its members
  bool release = false;  // s3-floor --release 1: rounds start with the holder's release script
  int hold_ms = 50;      // family-worker: how long each acquisition holds
  double warmup = 0;     // family-worker: seconds before the measured phase
  int permits = 1;       // --kind semaphore: the semaphore's permits (each takes 1)
  rlock::rw_priority priority = rlock::rw_priority::writers;  // --priority readers|writers
  int handoff_claim_ms = 0;  // --handoff-claim MS: config::fair_lock::handoff_claim (0: its
                             // default); at least the watchdog's lease: no claim
  int queued = 0;            // s3-fair-floor: waiters queued behind the one handed the lock
  int contenders = 1;        // s3-floor: subscribed processes answering each message
  /// --ports P1,P2,...: s1 and s3-worker take a quorum lock over one client per port (Q1).
  std::vector<std::uint16_t> ports;
};

[[noreturn]] void usage(const std::string& why) {
  fmt::print(stderr,
             "rlock_bench: {}\nusage: rlock_bench <mode> --port P [--seconds S] "
             "[--concurrency C] [--connections N] [--waiters W] [--locks N] [--names K] "
             "[--threads T] "
             "[--key K] [--out FILE] [--prefix P] [--tls-ca CA_FILE] [--cluster 1] "
             "[--local-handoff 0] [--kind "
             "reentrant|fair|non-reentrant|non-reentrant-fair|spin|read|write|multi|semaphore] "
             "[--members N] [--handoff-claim MS] [--hold-ms MS] [--warmup S] [--permits N] "
             "[--priority readers|writers] [--queued N] [--contenders K] "
             "[--ports P1,P2,... (s1, s3-worker: a quorum lock over these servers)]\n",
             why);
  std::exit(2);
}

options parse(int argc, char** argv) {
  if (argc < 2) usage("no mode");
  options o;
  o.mode = argv[1];
  if (o.mode == "print-acquire-script") return o;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage("missing value for " + flag);
    const std::string value = argv[++i];
    auto integer = [&] {
      int v = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc{} || p != value.data() + value.size() || v < 0) usage("bad " + flag);
      return v;
    };
    if (flag == "--ports") {
      for (std::size_t at = 0; at <= value.size();) {
        const auto comma = std::min(value.find(',', at), value.size());
        int v = 0;
        auto [p, ec] = std::from_chars(value.data() + at, value.data() + comma, v);
        if (ec != std::errc{} || p != value.data() + comma || v <= 0 || v > 65535)
          usage("bad --ports: a comma-separated list of ports");
        o.ports.push_back(static_cast<std::uint16_t>(v));
        at = comma + 1;
      }
    } else if (flag == "--port")
      o.port = static_cast<std::uint16_t>(integer());
    else if (flag == "--seconds")
      o.seconds = std::stod(value);
    else if (flag == "--concurrency")
      o.concurrency = integer();
    else if (flag == "--connections")
      o.connections = integer();
    else if (flag == "--waiters")
      o.waiters = integer();
    else if (flag == "--locks")
      o.locks = integer();
    else if (flag == "--names")
      o.names = integer();
    else if (flag == "--threads")
      o.threads = integer();
    else if (flag == "--key")
      o.key = value;
    else if (flag == "--kind")
      o.kind = value;
    else if (flag == "--out")
      o.out = value;
    else if (flag == "--prefix")
      o.prefix = value;
    else if (flag == "--waiter")
      o.waiter = value;
    else if (flag == "--restarts")
      o.restarts = integer();
    else if (flag == "--track-holds")
      o.track_holds = integer() != 0;
    else if (flag == "--redis-server")
      o.redis_server = value;
    else if (flag == "--tls-ca")
      o.tls_ca = value;
    else if (flag == "--cluster")
      o.cluster = integer() != 0;
    else if (flag == "--local-handoff")
      o.local_handoff = integer() != 0;
    else if (flag == "--members")
      o.members = integer();
    else if (flag == "--batch")
      o.batch = integer() != 0;
    else if (flag == "--release")
      o.release = integer() != 0;
    else if (flag == "--handoff-claim")
      o.handoff_claim_ms = integer();
    else if (flag == "--hold-ms")
      o.hold_ms = integer();
    else if (flag == "--warmup")
      o.warmup = std::stod(value);
    else if (flag == "--permits")
      o.permits = integer();
    else if (flag == "--queued")
      o.queued = integer();
    else if (flag == "--contenders")
      o.contenders = integer();
    else if (flag == "--priority") {
      if (value != "readers" && value != "writers") usage("--priority: readers or writers");
      o.priority = value == "readers" ? rlock::rw_priority::readers : rlock::rw_priority::writers;
    } else
      usage("unknown flag " + flag);
  }
  if (o.seconds <= 0 || o.seconds > 600) usage("--seconds must be in (0, 600]");
  if (o.waiter != "coroutine" && o.waiter != "callback") usage("--waiter: coroutine or callback");
  if (o.members < 1 || o.members > 1000) usage("--members must be in [1, 1000]");
  if (o.handoff_claim_ms < 0) usage("--handoff-claim must be at least 0");
  if (o.warmup < 0 || o.warmup > 600) usage("--warmup must be in [0, 600]");
  if (o.hold_ms < 1 || o.hold_ms > 10'000) usage("--hold-ms must be in [1, 10000]");
  if (o.permits < 1 || o.permits > 1000) usage("--permits must be in [1, 1000]");
  const bool latch_role = o.kind == "latch-counter" || o.kind == "latch-waiter";
  if (latch_role && o.mode != "family-worker") usage("--kind " + o.kind + ": family-worker only");
  static constexpr std::array<std::string_view, 9> kinds{
      "reentrant", "fair",  "non-reentrant", "non-reentrant-fair", "spin",
      "read",      "write", "multi",         "semaphore"};
  if (!latch_role && std::find(kinds.begin(), kinds.end(), o.kind) == kinds.end()) {
    usage(
        "--kind: reentrant, fair, non-reentrant, non-reentrant-fair, spin, read, write, multi, "
        "semaphore (family-worker: also latch-counter, latch-waiter)");
  }
  return o;
}

rlock::config config_for(const options& o) {
  rlock::config cfg;
  cfg.port = o.port;
  cfg.key_prefix = o.prefix;
  cfg.command_timeout = 30s;
  cfg.local_handoff.max_streak = o.local_handoff ? 8 : 0;
  if (o.handoff_claim_ms > 0)
    cfg.fair_lock.handoff_claim = std::chrono::milliseconds(o.handoff_claim_ms);
  cfg.read_write_lock.priority = o.priority;
  cfg.track_holds = o.track_holds;
  // RLOCK_BENCH_LOG=1: the client's debug log on stderr, each line stamped with nanos_now().
  if (const char* log = std::getenv("RLOCK_BENCH_LOG"); log != nullptr && *log == '1') {
    cfg.log = [](rlock::log_level level, std::string_view line) {
      const auto ns =
          std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch())
              .count();
      fmt::print(stderr, "{} {} {}\n", ns, rlock::to_string(level), line);
    };
  }
  if (o.cluster) {
    cfg.cluster.nodes = {
        fmt::format("{}://127.0.0.1:{}", o.tls_ca.empty() ? "redis" : "rediss", o.port)};
  }
  if (!o.tls_ca.empty()) {
    cfg.tls.enabled = true;
    cfg.tls.ca_file = o.tls_ca;
  }
  return cfg;
}

void progress(const std::string& what) { fmt::print(stderr, "rlock_bench: {}\n", what); }

struct latency_summary {
  std::size_t count = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};

latency_summary summarize(std::vector<double> us) {
  latency_summary s;
  if (us.empty()) return s;
  std::sort(us.begin(), us.end());
  auto rank = [&](double q) {
    const auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(us.size())));
    return us[std::min(us.size() - 1, i == 0 ? 0 : i - 1)];
  };
  s.count = us.size();
  s.p50 = rank(0.50);
  s.p90 = rank(0.90);
  s.p99 = rank(0.99);
  s.max = us.back();
  s.mean = std::accumulate(us.begin(), us.end(), 0.0) / static_cast<double>(us.size());
  return s;
}

double micros(clock_type::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

std::int64_t nanos_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch())
      .count();
}

/// `extra_params` goes into "params" before "seconds", e.g. `"threads": 4, `.
std::string s1_json(const std::string& library, const options& o, const latency_summary& s,
                    const std::string& extra_params = {}) {
  return fmt::format(
      R"({{"library": "{}", "mode": "s1", "params": {{{}"seconds": {}}}, "metrics": {{"pairs": {}, )"
      R"("p50_us": {:.2f}, "p90_us": {:.2f}, "p99_us": {:.2f}, "max_us": {:.2f}, "mean_us": {:.2f}}}}})",
      library, extra_params, o.seconds, s.count, s.p50, s.p90, s.p99, s.max, s.mean);
}

/// The latencies of several loops (tasks or threads) as one distribution.
latency_summary summarize_all(std::vector<std::vector<double>> per_loop) {
  std::vector<double> all;
  for (auto& us : per_loop) all.insert(all.end(), us.begin(), us.end());
  return summarize(std::move(all));
}

const auto warmup = 500ms;

/// Runs `threads` threads for the warm-up plus o.seconds. Each calls `setup(t)` once and then
/// times calls of the function it returns (one lock+unlock pair each), keeping those that
/// started after the warm-up.
template <typename Setup>
latency_summary time_threads(const options& o, int threads, Setup setup) {
  std::vector<std::vector<double>> per_thread(static_cast<std::size_t>(threads));
  const auto warm_end = clock_type::now() + warmup;
  const auto end = warm_end + std::chrono::duration_cast<clock_type::duration>(
                                  std::chrono::duration<double>(o.seconds));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      auto pair = setup(t);
      auto& us = per_thread[static_cast<std::size_t>(t)];
      us.reserve(500'000);
      for (std::size_t i = 0; i < 2'000'000; ++i) {
        const auto t0 = clock_type::now();
        if (t0 >= end) break;
        pair();
        if (t0 >= warm_end) us.push_back(micros(clock_type::now() - t0));
      }
    });
  }
  for (auto& w : workers) w.join();
  return summarize_all(std::move(per_thread));
}

/// Runs `body(io, clients)` on a fresh io_context with one connected client per port in `ports`
/// (`cfg` for each, its port replaced), then closes them: one thread, as a service runs them.
template <typename Body>
void with_clients(const options& o, rlock::config cfg, const std::vector<std::uint16_t>& ports,
                  Body body) {
  asio::io_context io(1);
  std::vector<std::unique_ptr<rlock::client>> clients;
  std::vector<std::reference_wrapper<rlock::client>> nodes;
  for (const auto port : ports) {
    cfg.port = port;
    clients.push_back(std::make_unique<rlock::client>(io.get_executor(), cfg));
    nodes.emplace_back(*clients.back());
  }
  // run(), not run_for(): run_for reads the clock around every handler (thousands of
  // instructions per lock+unlock pair in callgrind that are the harness's, not the client's).
  // The guard stops a run that hangs; the body cancels it when it ends.
  asio::steady_timer guard(io, std::chrono::duration_cast<clock_type::duration>(
                                   std::chrono::duration<double>(o.seconds + 120)));
  guard.async_wait([&](boost::system::error_code ec) {
    if (!ec) io.stop();
  });
  auto done = asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        struct disarm {
          asio::steady_timer& t;
          ~disarm() { t.cancel(); }
        } disarm_guard{guard};
        for (auto& c : clients) co_await c->connect();
        co_await body(io, nodes);
        for (auto& c : clients) co_await c->close();
      },
      asio::use_future);
  io.run();
  if (done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    usage("the run did not finish within its time plus 120 s");
  }
  done.get();
}

/// Runs `body(io, client)` on a fresh io_context with a connected client, then closes it.
template <typename Body>
void with_client(const options& o, Body body, rlock::config cfg) {
  const std::vector<std::uint16_t> ports{cfg.port};
  with_clients(
      o, std::move(cfg), ports,
      [&body](asio::io_context& io, std::vector<std::reference_wrapper<rlock::client>>& nodes) {
        return body(io, nodes.front().get());
      });
}

asio::awaitable<void> sleep_for(clock_type::duration d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

// --- s1: one coroutine, one key -------------------------------------------------------------

/// --kind multi: a multi-lock over the key and `<key>:2` … `<key>:<N>` (N = --members, 2 by
/// default: reentrant locks, taken at once, then in that order for the busy ones): what the group
/// adds to one lock. In a cluster the names spread over the shards.
class multi_group {
 public:
  multi_group(rlock::client& redis, const std::string& name, int members)
      : first_(redis.get_lock(name)), group_(members_of(redis, first_, name, members)) {}
  asio::awaitable<void> lock() { return group_.lock(); }
  asio::awaitable<void> lock(std::chrono::milliseconds lease) { return group_.lock(lease); }
  asio::awaitable<bool> try_lock(std::chrono::milliseconds wait) { return group_.try_lock(wait); }
  asio::awaitable<void> unlock() { return group_.unlock(); }
  /// How the first member (the contended one) was taken.
  rlock::wake_reason last_wake() const { return first_.last_wake(); }

 private:
  static std::vector<rlock::lock_handle> members_of(rlock::client& redis,
                                                    const rlock::reentrant_lock& first,
                                                    const std::string& name, int members) {
    std::vector<rlock::lock_handle> all{first};
    for (int i = 2; i <= members; ++i) all.push_back(redis.get_lock(fmt::format("{}:{}", name, i)));
    return all;
  }
  rlock::reentrant_lock first_;
  rlock::multi_lock group_;
};

/// --kind semaphore: a semaphore of --permits permits (1 by default; set by the first process to
/// ask), one taken and given back as a lock: a hold through the engine, woken by the count on
/// `redisson_sc:{key}`.
class semaphore_one {
 public:
  semaphore_one(rlock::client& redis, const std::string& name, int permits)
      : semaphore_(redis.get_semaphore(name)), permits_(static_cast<std::uint32_t>(permits)) {}
  asio::awaitable<void> lock() { return take(std::nullopt); }
  asio::awaitable<void> lock(std::chrono::milliseconds lease) { return take(lease); }
  asio::awaitable<bool> try_lock(std::chrono::milliseconds wait) {
    if (!set_) {
      (void)co_await semaphore_.try_set_permits(permits_);
      set_ = true;
    }
    auto got = co_await semaphore_.try_acquire(1, wait);
    if (!got) co_return false;
    last_wake_ = got->last_wake();
    held_.emplace(std::move(*got));
    co_return true;
  }
  asio::awaitable<void> unlock() {
    auto p = std::move(*held_);
    held_.reset();
    return [](rlock::permit h) -> asio::awaitable<void> { co_await h.unlock(); }(std::move(p));
  }
  rlock::wake_reason last_wake() const { return last_wake_; }

 private:
  asio::awaitable<void> take(std::optional<std::chrono::milliseconds> lease) {
    if (!set_) {
      (void)co_await semaphore_.try_set_permits(permits_);
      set_ = true;
    }
    held_.emplace(co_await semaphore_.acquire(1, lease));
    last_wake_ = held_->last_wake();
  }
  rlock::semaphore semaphore_;
  std::uint32_t permits_;
  std::optional<rlock::permit> held_;
  rlock::wake_reason last_wake_ = rlock::wake_reason::immediate;
  bool set_ = false;
};

/// A handle of one of the exclusive kinds (--kind), for the loops that run on any of them.
class exclusive_handle {
 public:
  exclusive_handle(rlock::client& redis, const std::string& kind, const std::string& name,
                   int members = 2, int permits = 1)
      : lock_(make(redis, kind, name, members, permits)) {}
  asio::awaitable<void> lock(std::optional<std::chrono::milliseconds> lease = std::nullopt) {
    return std::visit([&](auto& l) { return lease ? l.lock(*lease) : l.lock(); }, lock_);
  }
  asio::awaitable<bool> try_lock(std::chrono::milliseconds wait) {
    return std::visit([&](auto& l) { return l.try_lock(wait); }, lock_);
  }
  asio::awaitable<void> unlock() {
    return std::visit([](auto& l) { return l.unlock(); }, lock_);
  }
  rlock::wake_reason last_wake() const {
    return std::visit([](const auto& l) { return l.last_wake(); }, lock_);
  }

 private:
  using any = std::variant<rlock::reentrant_lock, rlock::fair_lock, rlock::non_reentrant_lock,
                           rlock::non_reentrant_fair_lock, rlock::spin_lock, rlock::read_lock,
                           rlock::write_lock, multi_group, semaphore_one>;
  static any make(rlock::client& redis, const std::string& kind, const std::string& name,
                  int members, int permits) {
    if (kind == "multi") return multi_group(redis, name, members);
    if (kind == "semaphore") return semaphore_one(redis, name, permits);
    // The client's rw_priority (config::read_write_lock, --priority).
    if (kind == "read") return redis.get_read_write_lock(name).read_lock();
    if (kind == "write") return redis.get_read_write_lock(name).write_lock();
    if (kind == "fair") return redis.get_fair_lock(name);
    if (kind == "non-reentrant") return redis.get_non_reentrant_lock(name);
    if (kind == "non-reentrant-fair") return redis.get_non_reentrant_fair_lock(name);
    if (kind == "spin") return redis.get_spin_lock(name);
    return redis.get_lock(name);
  }
  any lock_;
};

/// `"kind": "<kind>", ` for a result's params, or nothing for the reentrant lock.
std::string kind_param(const options& o) {
  if (o.kind == "multi") return fmt::format(R"("kind": "multi", "members": {}, )", o.members);
  return o.kind == "reentrant" ? std::string() : fmt::format(R"("kind": "{}", )", o.kind);
}

void run_s1(const options& o) {
  // --concurrency C > 1 runs C such loops on one client, each on its own key: the coroutine
  // twin of the blocking facade's S7 run with T = C threads.
  const int tasks = std::max(1, o.concurrency);
  std::vector<std::vector<double>> per_task(static_cast<std::size_t>(tasks));
  with_client(
      o,
      [&](asio::io_context& io, rlock::client& redis) -> asio::awaitable<void> {
        const auto warm_end = clock_type::now() + warmup;
        const auto end = warm_end + std::chrono::duration_cast<clock_type::duration>(
                                        std::chrono::duration<double>(o.seconds));
        int running = tasks;
        asio::steady_timer all_done(io, clock_type::time_point::max());
        for (int c = 0; c < tasks; ++c) {
          asio::co_spawn(
              io,
              [&, c]() -> asio::awaitable<void> {
                exclusive_handle lock(
                    redis, o.kind, c == 0 ? std::string("s1") : fmt::format("s1:{}", c), o.members);
                auto& us = per_task[static_cast<std::size_t>(c)];
                us.reserve(1'000'000 / static_cast<std::size_t>(tasks));
                for (std::size_t i = 0; i < 2'000'000; ++i) {
                  const auto t0 = clock_type::now();
                  if (t0 >= end) break;
                  co_await lock.lock();
                  co_await lock.unlock();
                  if (t0 >= warm_end) us.push_back(micros(clock_type::now() - t0));
                }
                if (--running == 0) all_done.cancel();
              },
              asio::detached);
        }
        co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
      },
      config_for(o));
  fmt::print("{}\n", s1_json("rlock", o, summarize_all(std::move(per_task)),
                             kind_param(o) +
                                 (tasks > 1 ? fmt::format(R"("concurrency": {}, )", tasks) : "")));
}

// --- s2: C coroutines on one client, each its own key ----------------------------------------

void run_s2(const options& o) {
  std::size_t pairs = 0;
  double elapsed = 0;
  with_client(
      o,
      [&](asio::io_context& io, rlock::client& redis) -> asio::awaitable<void> {
        const auto start = clock_type::now() + warmup;
        const auto end = start + std::chrono::duration_cast<clock_type::duration>(
                                     std::chrono::duration<double>(o.seconds));
        int running = o.concurrency;
        asio::steady_timer all_done(io, clock_type::time_point::max());
        for (int c = 0; c < o.concurrency; ++c) {
          asio::co_spawn(
              io,
              [&, c]() -> asio::awaitable<void> {
                auto lock = redis.get_lock(fmt::format("s2:{}", c));
                for (std::size_t i = 0; i < 50'000'000; ++i) {
                  const auto now = clock_type::now();
                  if (now >= end) break;
                  co_await lock.lock();
                  co_await lock.unlock();
                  if (now >= start) ++pairs;
                }
                if (--running == 0) all_done.cancel();
              },
              asio::detached);
        }
        co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
        elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
      },
      config_for(o));
  fmt::print(
      R"({{"library": "rlock", "mode": "s2", "params": {{"seconds": {}, "concurrency": {}}}, )"
      R"("metrics": {{"pairs": {}, "pairs_per_s": {:.1f}, "concurrency": {}}}}})"
      "\n",
      o.seconds, o.concurrency, pairs, static_cast<double>(pairs) / elapsed, o.concurrency);
}

// --- s3-worker: one process of the handoff scenario -------------------------------------------

void write_events(const options& o, const std::vector<std::pair<std::int64_t, std::int64_t>>& ev) {
  std::ofstream out(o.out);
  for (auto [a, r] : ev) out << a << ' ' << r << '\n';
  if (!out) usage("cannot write " + o.out);
}

void run_s3_worker(const options& o) {
  if (o.out.empty()) usage("s3-worker needs --out");
  std::vector<std::pair<std::int64_t, std::int64_t>> events;
  std::map<std::string, std::size_t> wakes;  // how each acquisition came about
  auto cfg = config_for(o);
  cfg.key_prefix.clear();  // --key is the full key, shared with the other processes
  with_client(
      o,
      [&](asio::io_context&, rlock::client& redis) -> asio::awaitable<void> {
        exclusive_handle lock(redis, o.kind, o.key, o.members);
        const auto end = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                                 std::chrono::duration<double>(o.seconds));
        for (std::size_t i = 0; i < 1'000'000 && clock_type::now() < end; ++i) {
          co_await lock.lock(10s);
          const auto acquired = nanos_now();
          ++wakes[std::string(rlock::to_string(lock.last_wake()))];
          co_await sleep_for(1ms);
          const auto releasing = nanos_now();
          co_await lock.unlock();
          events.emplace_back(acquired, releasing);
          co_await sleep_for(1ms);
        }
      },
      cfg);
  write_events(o, events);
  std::string by;
  for (const auto& [reason, n] : wakes) by += fmt::format(R"(, "{}": {})", reason, n);
  fmt::print(R"({{"library": "rlock", "mode": "s3-worker", "params": {{{}"seconds": {}}}, )"
             R"("metrics": {{"acquisitions": {}{}}}}})"
             "\n",
             kind_param(o), o.seconds, events.size(), by);
}

// --- family-worker: one process of F1, the family in its users' shape (issue 37) ---------------

/// One process of F1: --kind's acquisition, a hold of --hold-ms, the release, in a loop through a
/// warm-up (--warmup) and a measured phase (--seconds). Writes `<requested> <acquired>
/// <releasing>` per acquisition made (or given up) in the measured phase, in ns of the steady clock
/// (CLOCK_MONOTONIC: one clock for every process of the machine, so bench/family.py merges the
/// processes' lines); a request still waiting when the phase ends is written with `-1 -1` (a
/// writer starved to the end counts with the wait it had). The count-down latch's roles:
/// latch-counter counts down round k's latch (`<key>:<k>`, set to 5) after a hold, writing `<k>
/// <the last count-down sent>`; each latch-waiter waits for round after round, writing `<k>
/// <released>`.
void run_family_worker(const options& o) {
  if (o.out.empty()) usage("family-worker needs --out");
  std::vector<std::array<std::int64_t, 3>> events;
  std::map<std::string, std::size_t> wakes;  // how each measured acquisition came about
  auto cfg = config_for(o);
  cfg.key_prefix.clear();  // --key is the full key, shared with the other processes
  const auto hold = std::chrono::milliseconds(o.hold_ms);
  const auto seconds = [](double s) {
    return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(s));
  };
  with_client(
      o,
      [&](asio::io_context&, rlock::client& redis) -> asio::awaitable<void> {
        const auto measured_from = clock_type::now() + seconds(o.warmup);
        const auto end = measured_from + seconds(o.seconds);
        auto round = [&](std::int64_t k) {
          return rlock::count_down_latch(redis, fmt::format("{}:{}", o.key, k));
        };
        if (o.kind == "latch-counter") {
          // Two rounds ahead: a waiter released from round k finds round k + 1 already set.
          (void)co_await round(0).try_set_count(5);
          (void)co_await round(1).try_set_count(5);
          // Past the end by a few rounds, so the waiters' last waits end.
          const auto last = end + 4 * hold;
          for (std::int64_t k = 0; k < 1'000'000 && clock_type::now() < last; ++k) {
            co_await sleep_for(hold);
            auto latch = round(k);
            for (int i = 0; i < 4; ++i) co_await latch.count_down();
            const auto zero = nanos_now();
            co_await latch.count_down();
            if (clock_type::now() >= measured_from) events.push_back({k, zero, 0});
            (void)co_await round(k + 2).try_set_count(5);
          }
          co_return;
        }
        if (o.kind == "latch-waiter") {
          for (int i = 0; i < 10'000; ++i) {  // until the counter set round 0 (10 s at most)
            const auto count = co_await round(0).count();
            if (count > 0) break;
            co_await sleep_for(1ms);
          }
          for (std::int64_t k = 0; k < 1'000'000 && clock_type::now() < end; ++k) {
            const bool released = co_await round(k).try_wait(10s);
            if (!released) break;
            if (clock_type::now() >= measured_from) events.push_back({k, nanos_now(), 0});
          }
          co_return;
        }
        exclusive_handle lock(redis, o.kind, o.key, o.members, o.permits);
        for (std::size_t i = 0; i < 10'000'000 && clock_type::now() < end; ++i) {
          const auto requested = nanos_now();
          // Bounded by the phase's end: a waiter starved to the end is written as one.
          const auto left = std::chrono::ceil<std::chrono::milliseconds>(end - clock_type::now());
          const bool got = co_await lock.try_lock(std::max(left, 1ms));
          // Measured: what ended in the measured phase (a wait from the warm-up on included).
          const bool measured = clock_type::now() >= measured_from;
          if (!got) {
            if (measured) events.push_back({requested, -1, -1});
            break;
          }
          const auto acquired = nanos_now();
          if (measured) ++wakes[std::string(rlock::to_string(lock.last_wake()))];
          co_await sleep_for(hold);
          const auto releasing = nanos_now();
          co_await lock.unlock();
          if (measured) events.push_back({requested, acquired, releasing});
        }
      },
      cfg);
  std::ofstream out(o.out);
  for (const auto& e : events) out << e[0] << ' ' << e[1] << ' ' << e[2] << '\n';
  if (!out) usage("cannot write " + o.out);
  std::string by;
  for (const auto& [reason, n] : wakes) by += fmt::format(R"(, "{}": {})", reason, n);
  fmt::print(R"({{"library": "rlock", "mode": "family-worker", "params": {{"kind": "{}", )"
             R"("hold_ms": {}, "warmup": {}, "seconds": {}}}, "metrics": {{"events": {}{}}}}})"
             "\n",
             o.kind, o.hold_ms, o.warmup, o.seconds, events.size(), by);
}

// --- s3-local: the handoff scenario between coroutines of one client ----------------------------

void run_s3_local(const options& o) {
  const int tasks = std::max(2, o.concurrency);
  struct event {
    std::int64_t acquired;
    std::int64_t releasing;
    int task;
  };
  std::vector<event> events;
  events.reserve(200'000);
  rlock::client_stats stats;
  std::vector<double> idle_rtt;
  with_client(
      o,
      [&](asio::io_context& io, rlock::client& redis) -> asio::awaitable<void> {
        const auto end = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                                 std::chrono::duration<double>(o.seconds));
        int running = tasks;
        asio::steady_timer all_done(io, clock_type::time_point::max());
        for (int t = 0; t < tasks; ++t) {
          asio::co_spawn(
              io,
              [&, t]() -> asio::awaitable<void> {
                auto lock = redis.get_lock("s3-local");  // one owner per task
                for (std::size_t i = 0; i < 1'000'000 && clock_type::now() < end; ++i) {
                  co_await lock.lock(10s);
                  const auto acquired = nanos_now();
                  co_await sleep_for(1ms);
                  const auto releasing = nanos_now();
                  co_await lock.unlock();
                  events.push_back({acquired, releasing, t});
                  co_await sleep_for(1ms);
                }
                if (--running == 0) all_done.cancel();
              },
              asio::detached);
        }
        co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
        stats = redis.stats();
        // The same-rhythm reference: one round trip of this client sent after 1 ms asleep, as
        // every handoff is (idle CPUs wake up slower than a back-to-back benchmark shows).
        auto probe = redis.get_lock("s3-local-probe");
        for (int i = 0; i < 300; ++i) {
          co_await sleep_for(1ms);
          const auto t0 = clock_type::now();
          (void)co_await probe.is_locked();
          idle_rtt.push_back(micros(clock_type::now() - t0));
        }
      },
      config_for(o));
  const auto idle = summarize(std::move(idle_rtt));
  // The gap of a handoff: from the holder's release call to the next task's acquisition, as S3.
  std::sort(events.begin(), events.end(),
            [](const event& a, const event& b) { return a.acquired < b.acquired; });
  std::vector<double> gaps;
  std::size_t overlaps = 0;
  for (std::size_t i = 1; i < events.size(); ++i) {
    if (events[i].acquired < events[i - 1].releasing) ++overlaps;
    if (events[i].task != events[i - 1].task) {
      gaps.push_back(static_cast<double>(events[i].acquired - events[i - 1].releasing) / 1000.0);
    }
  }
  const auto s = summarize(std::move(gaps));
  fmt::print(
      R"({{"library": "rlock", "mode": "s3-local", "params": {{"seconds": {}, "concurrency": {}}}, )"
      R"("metrics": {{"acquisitions": {}, "handoffs": {}, "local_handoffs": {}, "overlaps": {}, )"
      R"("gap_p50_us": {:.2f}, "gap_p90_us": {:.2f}, "gap_p99_us": {:.2f}, "gap_max_us": {:.2f}, )"
      R"("idle_round_trip_p50_us": {:.2f}}}}})"
      "\n",
      o.seconds, tasks, events.size(), s.count, stats.local_handoffs, overlaps, s.p50, s.p90, s.p99,
      s.max, idle.p50);
}

// --- the blocking facade ----------------------------------------------------------------------

void run_s1_blocking(const options& o) {
  rlock::blocking::client redis(config_for(o));
  const int threads = std::max(1, o.threads);
  const auto s = time_threads(o, threads, [&](int t) {
    return [lock = redis.get_lock(fmt::format("s1-blocking:{}", t))]() mutable {
      std::unique_lock guard(lock);
    };
  });
  fmt::print("{}\n", s1_json("rlock-blocking", o, s, fmt::format(R"("threads": {}, )", threads)));
}

void run_s3_worker_blocking(const options& o) {
  if (o.out.empty()) usage("s3-worker-blocking needs --out");
  auto cfg = config_for(o);
  cfg.key_prefix.clear();
  rlock::blocking::client redis(cfg);
  auto lock = redis.get_lock(o.key);
  std::vector<std::pair<std::int64_t, std::int64_t>> events;
  const auto end = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                           std::chrono::duration<double>(o.seconds));
  for (std::size_t i = 0; i < 1'000'000 && clock_type::now() < end; ++i) {
    std::int64_t acquired = 0;
    std::int64_t releasing = 0;
    {
      std::unique_lock guard(lock);
      acquired = nanos_now();
      std::this_thread::sleep_for(1ms);
      releasing = nanos_now();
    }
    events.emplace_back(acquired, releasing);
    std::this_thread::sleep_for(1ms);
  }
  write_events(o, events);
  fmt::print(R"({{"library": "rlock-blocking", "mode": "s3-worker", "params": {{"seconds": {}}}, )"
             R"("metrics": {{"acquisitions": {}}}}})"
             "\n",
             o.seconds, events.size());
}

// --- helpers for server-side counters and process resources -----------------------------------

/// A blocking RESP3 connection: send one command, read values. No coroutines, no buffering
/// beyond one read: the tightest client this machine can run, for the floors and the counters.
class tight_client {
 public:
  tight_client(asio::io_context& io, std::uint16_t port) : socket_(io) {
    socket_.connect({asio::ip::make_address("127.0.0.1"), port});
    socket_.set_option(asio::ip::tcp::no_delay(true));
    command({"HELLO", "3"});
  }
  void send(std::initializer_list<std::string_view> args) {
    std::string cmd;
    rlock::detail::resp3::append_command(cmd, args);
    asio::write(socket_, asio::buffer(cmd));
  }
  /// Writes commands already in RESP form (a whole pipeline at once).
  void send_raw(std::string_view commands) {
    asio::write(socket_, asio::buffer(commands.data(), commands.size()));
  }
  rlock::detail::resp3::value read() {
    std::error_code ec;
    for (;;) {
      if (auto v = parser_.next(ec)) return std::move(*v);
      if (ec) throw boost::system::system_error(ec);
      const std::size_t n = socket_.read_some(asio::buffer(buffer_));
      parser_.feed(std::string_view(buffer_.data(), n));
    }
  }
  rlock::detail::resp3::value command(std::initializer_list<std::string_view> args) {
    send(args);
    return read();
  }
  /// A value already read, without waiting for the network.
  std::optional<rlock::detail::resp3::value> next_read() {
    std::error_code ec;
    auto v = parser_.next(ec);
    if (ec) throw boost::system::system_error(ec);
    return v;
  }
  /// Reads what the socket has (blocking if nothing yet), for next_read().
  void read_some() {
    const std::size_t n = socket_.read_some(asio::buffer(buffer_));
    parser_.feed(std::string_view(buffer_.data(), n));
  }
  int native_handle() { return socket_.native_handle(); }

 private:
  asio::ip::tcp::socket socket_;
  rlock::detail::resp3::parser parser_;
  std::array<char, 4096> buffer_{};
};

/// The server's counters (INFO commandstats), read on a blocking connection of its own, apart
/// from the client under test.
struct server_counters {
  explicit server_counters(std::uint16_t port) : conn(io, port) {}

  /// calls per command name.
  std::map<std::string, long> commandstats() {
    const auto v = conn.command({"INFO", "commandstats"});
    std::map<std::string, long> calls;
    std::size_t pos = 0;
    while ((pos = v.str.find("cmdstat_", pos)) != std::string::npos) {
      const auto colon = v.str.find(':', pos);
      const auto c = v.str.find("calls=", colon);
      calls[v.str.substr(pos + 8, colon - pos - 8)] = std::stol(v.str.substr(c + 6));
      pos = colon;
    }
    return calls;
  }

  asio::io_context io;
  tight_client conn;
};

long rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
  }
  return 0;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// --- s4: fan-out, commands per handoff ----------------------------------------------------------

void run_s4(const options& o) {
  const int w = std::max(1, o.waiters);
  long commands = 0;
  long handoffs = 0;
  std::map<std::string, long> per_command;
  with_client(
      o,
      [&](asio::io_context& io, rlock::client& redis) -> asio::awaitable<void> {
        server_counters server(o.port);
        auto holder = redis.get_lock("s4");
        co_await holder.lock(60s);
        // W waiters queue behind the holder; each, once it has the lock, releases it at once,
        // except the last, which keeps it until the count is taken: W handoffs, W releases.
        int acquired = 0;
        int finished = 0;
        asio::steady_timer bell(io, clock_type::time_point::max());
        asio::steady_timer last_may_go(io, clock_type::time_point::max());
        std::vector<rlock::reentrant_lock> locks;
        for (int i = 0; i < w; ++i) locks.push_back(redis.get_lock("s4"));
        for (auto& l : locks) {
          asio::co_spawn(
              io,
              [&]() -> asio::awaitable<void> {
                co_await l.lock(60s);
                if (++acquired == w) {
                  bell.cancel();
                  co_await last_may_go.async_wait(asio::as_tuple(asio::use_awaitable));
                }
                co_await l.unlock();
                ++finished;
                bell.cancel();
              },
              asio::detached);
        }
        // Everybody asleep: each made its first attempt and its retry after subscribing...
        for (int i = 0; i < 3000 && redis.stats().acquire_attempts < 2ull * w + 1; ++i) {
          co_await sleep_for(10ms);
        }
        // ...and the server has run them: this round trip on the same connection comes after.
        (void)co_await holder.is_locked();
        const auto before = server.commandstats();
        co_await holder.unlock();
        for (int i = 0; i < 100'000 && acquired < w; ++i) {
          bell.expires_after(10s);
          co_await bell.async_wait(asio::as_tuple(asio::use_awaitable));
        }
        const auto after = server.commandstats();
        last_may_go.cancel();
        // The waiters use this frame's locals: wait until the last one is done with them.
        for (int i = 0; i < 1000 && finished < w; ++i) {
          bell.expires_after(10s);
          co_await bell.async_wait(asio::as_tuple(asio::use_awaitable));
        }
        handoffs = acquired;
        // Commands the clients sent (not those a script ran inside Redis, nor our INFO).
        static constexpr std::array<const char*, 5> sent_by_clients{"evalsha", "eval", "subscribe",
                                                                    "unsubscribe", "script|load"};
        for (const char* name : sent_by_clients) {
          const long n = (after.contains(name) ? after.at(name) : 0) -
                         (before.contains(name) ? before.at(name) : 0);
          per_command[name] = n;
          commands += n;
        }
      },
      config_for(o));
  fmt::print(R"({{"library": "rlock", "mode": "s4", "params": {{"waiters": {}}}, "metrics": )"
             R"({{"handoffs": {}, "commands": {}, "commands_per_handoff": {:.3f}, )"
             R"("evalsha": {}, "subscribe": {}, "unsubscribe": {}}}}})"
             "\n",
             w, handoffs, commands,
             handoffs > 0 ? static_cast<double>(commands) / static_cast<double>(handoffs) : 0.0,
             per_command["evalsha"], per_command["subscribe"], per_command["unsubscribe"]);
}

// --- s4-rw: a read-write lock's fan-out
// -----------------------------------------------------------

/// W readers (each its own owner) wait behind a writer; the write unlock ("1": everybody tries)
/// lets all of them in at once. Commands the clients send from the unlock until every reader
/// holds, per reader, and acquire attempts per reader: one each when no storm follows.
void run_s4_rw(const options& o) {
  const int w = std::max(1, o.waiters);
  long commands = 0;
  int acquired = 0;
  std::uint64_t attempts = 0;
  with_client(
      o,
      [&](asio::io_context& io, rlock::client& redis) -> asio::awaitable<void> {
        server_counters server(o.port);
        auto writer = redis.get_read_write_lock("s4rw").write_lock();
        co_await writer.lock(60s);
        int finished = 0;
        asio::steady_timer bell(io, clock_type::time_point::max());
        asio::steady_timer may_go(io, clock_type::time_point::max());
        std::vector<rlock::read_lock> readers;
        for (int i = 0; i < w; ++i)
          readers.push_back(redis.get_read_write_lock("s4rw").read_lock());
        for (auto& r : readers) {
          asio::co_spawn(
              io,
              [&]() -> asio::awaitable<void> {
                co_await r.lock(60s);
                ++acquired;
                bell.cancel();
                co_await may_go.async_wait(asio::as_tuple(asio::use_awaitable));
                co_await r.unlock();
                ++finished;
                bell.cancel();
              },
              asio::detached);
        }
        for (int i = 0; i < 3000 && redis.stats().acquire_attempts < 2ull * w + 1; ++i) {
          co_await sleep_for(10ms);
        }
        (void)co_await writer.is_locked();
        const auto before = server.commandstats();
        const auto attempts_before = redis.stats().acquire_attempts;
        co_await writer.unlock();
        for (int i = 0; i < 100'000 && acquired < w; ++i) {
          bell.expires_after(10s);
          co_await bell.async_wait(asio::as_tuple(asio::use_awaitable));
        }
        const auto after = server.commandstats();
        attempts = redis.stats().acquire_attempts - attempts_before;
        may_go.cancel();
        for (int i = 0; i < 1000 && finished < w; ++i) {
          bell.expires_after(10s);
          co_await bell.async_wait(asio::as_tuple(asio::use_awaitable));
        }
        static constexpr std::array<const char*, 5> sent_by_clients{"evalsha", "eval", "subscribe",
                                                                    "unsubscribe", "script|load"};
        for (const char* name : sent_by_clients) {
          commands += (after.contains(name) ? after.at(name) : 0) -
                      (before.contains(name) ? before.at(name) : 0);
        }
      },
      config_for(o));
  const double per = acquired > 0 ? static_cast<double>(acquired) : 1.0;
  fmt::print(R"({{"library": "rlock", "mode": "s4-rw", "params": {{"waiters": {}}}, "metrics": )"
             R"({{"readers": {}, "commands": {}, "commands_per_reader": {:.3f}, )"
             R"("attempts_per_reader": {:.3f}}}}})"
             "\n",
             w, acquired, commands, static_cast<double>(commands) / per,
             static_cast<double>(attempts) / per);
}

// --- s5: watchdog scale -------------------------------------------------------------------------

/// The server's time in EVALSHA so far (INFO commandstats), µs.
/// The number after `tag` in an INFO reply, searching from `from` (0: no such field).
std::int64_t info_number(const std::string& text, std::string_view tag, std::size_t from = 0) {
  const auto at = text.find(tag, from);
  return at == std::string::npos ? 0 : std::stoll(text.substr(at + tag.size()));
}

std::int64_t evalsha_usec(std::uint16_t port) {
  asio::io_context io;
  tight_client raw(io, port);
  const auto stats = raw.command({"INFO", "commandstats"}).str;
  const auto at = stats.find("cmdstat_evalsha:calls=");
  return at == std::string::npos ? 0 : info_number(stats, "usec=", at);
}

void run_s5(const options& o) {
  const int n = std::max(1, o.locks);
  auto cfg = config_for(o);
  cfg.watchdog_timeout = 3s;
  long rss_before = 0, rss_held = 0;
  std::uint64_t calls = 0, writes = 0;
  double periods = 0, cpu = 0, wall = 0, server_us_per_key = 0;
  with_client(
      o,
      [&](asio::io_context& io, rlock::client& redis) -> asio::awaitable<void> {
        std::vector<rlock::reentrant_lock> locks;
        locks.reserve(static_cast<std::size_t>(n));
        rss_before = rss_kib();
        for (int i = 0; i < n; ++i) locks.push_back(redis.get_lock(fmt::format("s5:{}", i)));
        // Acquire in waves of 100 concurrent coroutines: pipelined, and bounded so that the
        // waves' own frames (freed, but still in RSS) do not count as memory per held lock.
        for (int base = 0; base < n; base += 100) {
          int pending = std::min(100, n - base);
          asio::steady_timer bell(io, clock_type::time_point::max());
          for (int i = base; i < base + pending; ++i) {
            asio::co_spawn(
                io,
                [&, i]() -> asio::awaitable<void> {
                  co_await locks[static_cast<std::size_t>(i)].lock();
                  if (--pending == 0) bell.cancel();
                },
                asio::detached);
          }
          co_await bell.async_wait(asio::as_tuple(asio::use_awaitable));
        }
        rss_held = rss_kib();
        progress(fmt::format("s5: holding {} watchdog locks", n));
        const auto calls0 = redis.stats().renewal_calls;
        const auto writes0 = redis.stats().writes;
        const auto cpu0 = cpu_seconds();
        const auto server0 = o.cluster ? 0 : evalsha_usec(o.port);
        const auto t0 = clock_type::now();
        co_await sleep_for(3 * (cfg.watchdog_timeout / 3) + 100ms);
        wall = std::chrono::duration<double>(clock_type::now() - t0).count();
        cpu = cpu_seconds() - cpu0;
        calls = redis.stats().renewal_calls - calls0;
        // The server's time in the renewal scripts (the only scripts run meanwhile), per key.
        if (!o.cluster && calls > 0) {
          server_us_per_key = static_cast<double>(evalsha_usec(o.port) - server0) /
                              (static_cast<double>(calls) * 100.0);
        }
        writes = redis.stats().writes - writes0;  // renewal rounds and health-check PINGs
        periods = wall / std::chrono::duration<double>(cfg.watchdog_timeout / 3).count();
        if (redis.stats().lost_locks != 0) progress("s5: LOST LOCKS during the run");
        for (auto& l : locks) co_await l.unlock();
      },
      cfg);
  const double per_lock = static_cast<double>(rss_held - rss_before) * 1024.0 / n;
  fmt::print(
      R"({{"library": "rlock", "mode": "s5", "params": {{"locks": {}, "watchdog_timeout_ms": 3000, )"
      R"("track_holds": {}}}, )"
      R"("metrics": {{"renewal_calls": {}, "periods": {:.2f}, "calls_per_period": {:.1f}, )"
      R"("calls_per_period_goal": {:.1f}, "writes_per_period": {:.1f}, "cpu_percent": {:.2f}, )"
      R"("rss_bytes_per_lock": {:.0f}, "server_us_per_renewed_key": {:.2f}}}}})"
      "\n",
      n, o.track_holds ? "true" : "false", calls, periods,
      static_cast<double>(calls) / std::max(1.0, std::floor(periods)), n / 100.0,
      static_cast<double>(writes) / std::max(1.0, std::floor(periods)), 100.0 * cpu / wall,
      per_lock, server_us_per_key);
}

// --- s6: waiter scale -------------------------------------------------------------------------

void run_s6(const options& o) {
  const int n = std::max(1, o.waiters);
  const int k = std::max(1, o.names);
  long rss_before = 0, rss_waiting = 0, subscriptions = 0;
  int acquired = 0;
  with_client(
      o,
      [&](asio::io_context& io, rlock::client& redis) -> asio::awaitable<void> {
        std::vector<rlock::reentrant_lock> holders;
        for (int j = 0; j < k; ++j) {
          holders.push_back(redis.get_lock(fmt::format("s6:{}", j)));
          co_await holders.back().lock(120s);
        }
        std::vector<rlock::reentrant_lock> waiters;
        waiters.reserve(static_cast<std::size_t>(n));
        rss_before = rss_kib();
        asio::steady_timer bell(io, clock_type::time_point::max());
        for (int i = 0; i < n; ++i) {
          waiters.push_back(redis.get_lock(fmt::format("s6:{}", i % k)));
          auto& l = waiters.back();
          if (o.waiter == "callback") {
            // The same wait without a coroutine: what rlock itself costs per waiter.
            l.async_lock(120s, [&l, &acquired, &bell, n](boost::system::error_code ec) {
              if (ec) return;
              l.async_unlock([&acquired, &bell, n](boost::system::error_code) {
                if (++acquired == n) bell.cancel();
              });
            });
            continue;
          }
          asio::co_spawn(
              io,
              [&l, &acquired, &bell, n]() -> asio::awaitable<void> {
                co_await l.lock(120s);
                co_await l.unlock();
                if (++acquired == n) bell.cancel();
              },
              asio::detached);
        }
        // Asleep means every waiter's attempts are answered: nothing of theirs in flight.
        for (int i = 0; i < 6000 && (redis.stats().acquire_attempts < 2ull * n + k ||
                                     redis.activity().requests != 0);
             ++i) {
          co_await sleep_for(10ms);
        }
        rss_waiting = rss_kib();
        // The subscriptions each name's channel has, as rlock::inspect reads them (PUBSUB
        // NUMSUB of the kind's channel): one per name when the client shares them.
        for (int j = 0; j < k; ++j) {
          const auto info = co_await rlock::inspect(redis, fmt::format("s6:{}", j));
          subscriptions += info.subscribers.value_or(0);
        }
        progress(fmt::format("s6: {} waiters asleep on {} names", n, k));
        for (auto& h : holders) co_await h.unlock();
        for (int i = 0; i < 100'000 && acquired < n; ++i) {
          bell.expires_after(10s);
          co_await bell.async_wait(asio::as_tuple(asio::use_awaitable));
        }
      },
      config_for(o));
  fmt::print(
      R"({{"library": "rlock", "mode": "s6", "params": {{"waiters": {}, "names": {}, "waiter": "{}"}}, )"
      R"("metrics": {{"rss_bytes_per_waiter": {:.0f}, "subscriptions": {}, "acquired": {}}}}})"
      "\n",
      n, k, o.waiter, static_cast<double>(rss_waiting - rss_before) * 1024.0 / n, subscriptions,
      acquired);
}

// --- s6-floor: what a waiting Asio coroutine costs before any lock logic ---------------------

/// RSS per waiter of `n` coroutines parked on (preallocated) timers: the floor S6 is measured
/// against. Every coroutine-based waiter costs at least this before any lock logic; what an S6
/// waiter costs above it is rlock's (its operation and the waiter's own lock handle).
double coroutine_floor(int n) {
  asio::io_context io(1);
  std::vector<std::unique_ptr<asio::steady_timer>> timers;
  timers.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    timers.push_back(std::make_unique<asio::steady_timer>(io, clock_type::time_point::max()));
  }
  auto park = [](asio::steady_timer& t) -> asio::awaitable<void> {
    co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
  };
  const long before = rss_kib();
  for (auto& t : timers) asio::co_spawn(io, park(*t), asio::detached);
  io.poll();
  const long after = rss_kib();
  for (auto& t : timers) t->cancel();
  io.poll();
  return static_cast<double>(after - before) * 1024.0 / n;
}

/// Runs coroutine_floor in a child process: freed memory stays in a process's RSS, so each
/// measurement needs a fresh one.
double coroutine_floor_in_child(int n) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t child = ::fork();
  if (child == 0) {
    const double v = coroutine_floor(n);
    [[maybe_unused]] auto w = ::write(fds[1], &v, sizeof v);
    ::_exit(0);
  }
  double v = -1;
  ::close(fds[1]);
  if (child > 0 && ::read(fds[0], &v, sizeof v) != static_cast<ssize_t>(sizeof v)) v = -1;
  ::close(fds[0]);
  if (child > 0) ::waitpid(child, nullptr, 0);
  return v;
}

void run_s6_floor(const options& o) {
  const int n = std::max(1, o.waiters);
  fmt::print(R"({{"library": "asio", "mode": "s6-floor", "params": {{"waiters": {}}}, )"
             R"("metrics": {{"rss_bytes_per_parked_coroutine": {:.0f}}}}})"
             "\n",
             n, coroutine_floor_in_child(n));
}

// --- s3-floor: the handoff path with the least possible client work -------------------------

/// Two processes: the parent publishes an unlock message, the child, subscribed, answers it with
/// the acquire script at once; the gap from the publish to the child's reply is the floor of
/// "release + notification + acquire" on this machine and placement.
/// The fair lock's handoff made by blocking minimal clients running rlock's own fair scripts:
/// the parent holds and releases, the child waits registered for a handoff by push; the gap
/// from the release sent to the push read is the floor of a fair handoff (a publish heard plus
/// what the scripts cost), for telling the scripts' share from the client's. With --queued N,
/// N more waiters (fields nobody listens for) queue behind the child before each release, as
/// S3's other P - 2 processes do: Redisson's scripts walk the queue to move their deadlines.
/// They are taken out of the queue, unmeasured, before the child releases.
void run_s3_fair_floor(const options& o) {
  namespace rd = rlock::detail;
  const std::string key = o.prefix + "s3-fair-floor";
  const std::string tag = "{" + key + "}";
  const std::string queue = "redisson_lock_queue:" + tag, timeouts = "redisson_lock_timeout:" + tag,
                    handoffs = "rlock_fair_handoff:" + tag,
                    channel = "redisson_lock__channel:" + tag;
  const std::string parent_field = "floor-parent:1", child_field = "floor-child:1";
  const auto extra_field = [](int q) { return fmt::format("floor-queued:{}", q); };
  int to_parent[2];
  int to_child[2];
  if (::pipe(to_parent) != 0 || ::pipe(to_child) != 0) usage("pipe failed");
  const auto load = [](tight_client& c, rd::script which) {
    return c.command({"SCRIPT", "LOAD", rd::loaded_source(which)}).str;
  };
  const pid_t child = ::fork();
  if (child == 0) {
    asio::io_context io;
    tight_client sub(io, o.port);
    tight_client cmd(io, o.port);
    const auto acquire = load(cmd, rd::script::acquire_fair);
    const auto release = load(cmd, rd::script::release_fair);
    sub.send({"SUBSCRIBE", channel + ":" + child_field});
    (void)sub.read();
    for (std::uint64_t ticket = 1;; ++ticket) {
      char go = 0;  // the parent holds the lock: queue up behind it
      if (::read(to_child[0], &go, 1) != 1 || go == 's') break;
      const auto t = std::to_string(ticket);
      (void)cmd.command({"EVALSHA", acquire, "4", key, queue, timeouts, handoffs, "10000",
                         child_field, "10000", t, "10000:10000", "", "10000"});
      [[maybe_unused]] auto w0 = ::write(to_parent[1], &go, 1);  // queued: release now
      const auto push = sub.read();                              // the grant: `g<ticket>`
      const bool granted = push.elements.size() == 3 && push.elements[2].str == "g" + t;
      const std::int64_t at = granted ? nanos_now() : -1;
      [[maybe_unused]] auto w1 = ::write(to_parent[1], &at, sizeof at);
      // The extra waiters are out of the queue (or the parent stops).
      if (::read(to_child[0], &go, 1) != 1 || go == 's') break;
      (void)cmd.command({"EVALSHA", release, "6", key, queue, timeouts, handoffs, channel,
                         "floor-latch:" + t, "10000", child_field, "publish", "1000"});
    }
    ::_exit(0);
  }
  asio::io_context io;
  tight_client cmd(io, o.port);
  const auto acquire = load(cmd, rd::script::acquire_fair);
  const auto release = load(cmd, rd::script::release_fair);
  std::vector<double> us;
  const auto end = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                           std::chrono::duration<double>(o.seconds));
  for (std::uint64_t i = 1; i < 100'000 && clock_type::now() < end; ++i) {
    const auto t = std::to_string(i);
    // Free once the child's release is in (its DEL of the hash came before its next read).
    for (int tries = 0; tries < 1000; ++tries) {
      if (cmd.command({"EVALSHA", acquire, "4", key, queue, timeouts, handoffs, "10000",
                       parent_field, "10000", "", "", "", "10000"})
              .is_null()) {
        break;
      }
      std::this_thread::sleep_for(100us);
    }
    char go = 'g';
    [[maybe_unused]] auto w = ::write(to_child[1], &go, 1);
    if (::read(to_parent[0], &go, 1) != 1) break;
    for (int q = 0; q < o.queued; ++q) {
      (void)cmd.command({"EVALSHA", acquire, "4", key, queue, timeouts, handoffs, "10000",
                         extra_field(q), "10000", std::to_string(1'000'000 + q), "10000:10000", "",
                         "10000"});
    }
    // As S3's holders do (--release 1: as F1's, for --hold-ms).
    std::this_thread::sleep_for(o.release ? std::chrono::milliseconds(o.hold_ms) : 1ms);
    const std::int64_t released = nanos_now();
    (void)cmd.command({"EVALSHA", release, "6", key, queue, timeouts, handoffs, channel,
                       "floor-latch:p" + t, "10000", parent_field, "publish", "1000"});
    std::int64_t acquired = 0;
    if (::read(to_parent[0], &acquired, sizeof acquired) != sizeof acquired) break;
    if (acquired < 0) usage("s3-fair-floor: the waiter was told something other than its grant");
    us.push_back(static_cast<double>(acquired - released) / 1000.0);
    // Out of the queue before the child releases, or the lock would go to the first of them.
    for (int q = 0; q < o.queued; ++q) {
      (void)cmd.command({"LREM", queue, "0", extra_field(q)});
      (void)cmd.command({"ZREM", timeouts, extra_field(q)});
      (void)cmd.command({"HDEL", handoffs, extra_field(q)});
    }
    [[maybe_unused]] auto wr = ::write(to_child[1], &go, 1);  // now it may release
  }
  char stop = 's';
  [[maybe_unused]] auto ws = ::write(to_child[1], &stop, 1);
  ::waitpid(child, nullptr, 0);
  const auto s = summarize(std::move(us));
  fmt::print(R"({{"library": "tight-client", "mode": "s3-fair-floor", "params": {{"seconds": {}, )"
             R"("queued": {}}}, "metrics": {{"handoffs": {}, "p50_us": {:.2f}, "p90_us": {:.2f}, )"
             R"("p99_us": {:.2f}, "max_us": {:.2f}}}}})"
             "\n",
             o.seconds, o.queued, s.count, s.p50, s.p90, s.p99, s.max);
}

/// With `acquire` false the child answers nothing: the gap is one publish heard, the floor of a
/// handoff made by push alone (the fair lock's). With --contenders K (acquire only), K children
/// are subscribed and each answers every message with its own attempt, as S3's P - 1 waiting
/// processes do at P = K + 1: the gap is to the winner's reply, and the losers' attempts and
/// wake-ups are in it.
void run_s3_floor(const options& o, bool acquire) {
  const std::string key = o.prefix + "s3-floor";
  const std::string channel = rlock::detail::unlock_channel(key);
  const int contenders = acquire ? std::max(1, o.contenders) : 1;
  int to_parent[2];
  int ready[2];
  if (::pipe(to_parent) != 0 || ::pipe(ready) != 0) usage("pipe failed");
  const auto script = std::string(rlock::detail::loaded_source(rlock::detail::script::acquire));
  // What a winner tells the parent: the round it won and when its reply came.
  struct won {
    std::int64_t round;
    std::int64_t at;
  };
  std::vector<pid_t> children;
  for (int k = 0; k < contenders; ++k) {
    const pid_t child = ::fork();
    if (child != 0) {
      children.push_back(child);
      continue;
    }
    asio::io_context io;
    tight_client sub(io, o.port);
    tight_client cmd(io, o.port);
    const auto sha = cmd.command({"SCRIPT", "LOAD", script}).str;
    const auto field = fmt::format("floor:{}", k + 1);
    sub.send({"SUBSCRIBE", channel});
    (void)sub.read();  // the subscribe confirmation
    [[maybe_unused]] auto w0 = ::write(ready[1], "r", 1);
    for (;;) {
      auto push = sub.read();
      if (push.elements.size() != 3 || push.elements[2].str == "stop") break;
      // --release 1: the message is the unlock script's "0", and the winner is named by its
      // number (the parent releases its hold next round).
      won w{o.release ? k + 1 : std::atoll(push.elements[2].str.c_str()), 0};
      // The winner's reply is nil; a loser's, the holder's PTTL.
      const bool took =
          !acquire || cmd.command({"EVALSHA", sha, "1", key, "10000", field}).is_null();
      if (!took) continue;
      w.at = nanos_now();
      [[maybe_unused]] auto w1 = ::write(to_parent[1], &w, sizeof w);
      if (acquire && !o.release) (void)cmd.command({"DEL", key});
    }
    ::_exit(0);
  }
  for (int k = 0; k < contenders; ++k) {
    char r = 0;
    if (::read(ready[0], &r, 1) != 1) usage("s3-floor child failed");
  }
  asio::io_context io;
  tight_client pub(io, o.port);
  // A PING after 1 ms asleep, as every S3 handoff starts: what waking idle CPUs costs here,
  // beside the back-to-back PING of the references.
  std::vector<double> idle_ping;
  const auto idle_end = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                                std::chrono::duration<double>(o.seconds / 2));
  for (int i = 0; i < 50'000 && clock_type::now() < idle_end; ++i) {
    std::this_thread::sleep_for(1ms);
    const auto t0 = clock_type::now();
    (void)pub.command({"PING"});
    idle_ping.push_back(micros(clock_type::now() - t0));
  }
  const auto idle = summarize(std::move(idle_ping));
  std::vector<double> us;
  int lost_rounds = 0;  // no winner heard within 200 ms (a straggler's hold): skipped
  const auto end = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                           std::chrono::duration<double>(o.seconds));
  // --release 1 (F1's handoff): the parent takes the lock first; each round then releases the
  // holder's hold with rlock's unlock script, whose publish wakes the children, after a hold of
  // --hold-ms as F1's holders keep it. Otherwise a PUBLISH after 1 ms, as in S3.
  const auto release_sha =
      pub.command({"SCRIPT", "LOAD", rlock::detail::loaded_source(rlock::detail::script::release)})
          .str;
  const auto acquire_sha = pub.command({"SCRIPT", "LOAD", script}).str;
  std::string holder = "floor:0";
  // The key is this run's: whoever holds it (a winner of a lost round, an earlier run) is
  // dropped.
  const auto take_as_parent = [&] {
    holder = "floor:0";
    (void)pub.command({"DEL", key});
    (void)pub.command({"EVALSHA", acquire_sha, "1", key, "10000", holder});
  };
  if (o.release) take_as_parent();
  const auto pause = o.release ? std::chrono::milliseconds(o.hold_ms) : 1ms;
  for (std::int64_t round = 1; round < 100'000 && clock_type::now() < end; ++round) {
    std::this_thread::sleep_for(pause);  // as S3's (F1's) holders do between handoffs
    const std::int64_t released = nanos_now();
    if (o.release) {
      (void)pub.command({"EVALSHA", release_sha, "3", key, channel,
                         rlock::detail::unlock_latch(key, std::to_string(round)), "0", "10000",
                         holder, "publish", "1000"});
    } else {
      (void)pub.command({"PUBLISH", channel, std::to_string(round)});
    }
    // The first winner of this round; a straggler's win of an earlier one is passed over.
    std::optional<std::int64_t> acquired;
    for (int reads = 0; reads < 100 && !acquired; ++reads) {
      pollfd pfd{to_parent[0], POLLIN, 0};
      if (::poll(&pfd, 1, 200) != 1) break;
      won w{};
      if (::read(to_parent[0], &w, sizeof w) != sizeof w) break;
      if (o.release) {
        holder = fmt::format("floor:{}", w.round);
        acquired = w.at;
      } else if (w.round == round) {
        acquired = w.at;
      }
    }
    if (!acquired) {
      ++lost_rounds;
      (void)pub.command({"DEL", key});
      if (o.release) take_as_parent();
      continue;
    }
    us.push_back(static_cast<double>(*acquired - released) / 1000.0);
  }
  (void)pub.command({"PUBLISH", channel, "stop"});
  for (const pid_t child : children) ::waitpid(child, nullptr, 0);
  (void)pub.command({"DEL", key});
  const auto s = summarize(std::move(us));
  fmt::print(
      R"({{"library": "tight-client", "mode": "{}", "params": {{"seconds": {}, )"
      R"("contenders": {}}}, "metrics": {{"handoffs": {}, "p50_us": {:.2f}, "p90_us": {:.2f}, )"
      R"("p99_us": {:.2f}, "max_us": {:.2f}, "idle_ping_p50_us": {:.2f}, )"
      R"("idle_ping_p99_us": {:.2f}, "lost_rounds": {}}}}})"
      "\n",
      acquire ? "s3-floor" : "s3-push-floor", o.seconds, contenders, s.count, s.p50, s.p90, s.p99,
      s.max, idle.p50, idle.p99, lost_rounds);
}

// --- s3-quorum-floor: a quorum handoff with the least possible client work (Q1) ---------------

/// The floor under Q1's S3 at P = 2: a holder and one waiter, minimal blocking clients, one
/// connection per server each (and the waiter's subscription on each). Each round the holder,
/// after 1 ms, runs rlock's unlock script on every server at once (each publishes); the waiter,
/// once a majority of the servers' unlock messages has arrived, runs the acquire script on every
/// server at once and reads the answers until a majority granted: from the holder's first
/// write to that grant is one handoff. The waiter then gives its holds back and the holder takes
/// them again (not timed). What N servers on their CPU and the network make of a quorum handoff
/// with no client work beyond reading sockets.
void run_s3_quorum_floor(const options& o) {
  namespace rd = rlock::detail;
  if (o.ports.size() < 2) usage("s3-quorum-floor needs --ports with two servers or more");
  const std::string key = o.prefix + "s3-quorum-floor";
  const std::string channel = rd::unlock_channel(key);
  const std::size_t n = o.ports.size();
  const std::size_t quorum = n / 2 + 1;
  const auto acquire = std::string(rd::loaded_source(rd::script::acquire));
  const auto release = std::string(rd::loaded_source(rd::script::release));
  asio::io_context io;
  std::vector<std::unique_ptr<tight_client>> holder, waiter, sub;
  std::string acquire_sha, release_sha;
  for (const auto port : o.ports) {
    holder.push_back(std::make_unique<tight_client>(io, port));
    waiter.push_back(std::make_unique<tight_client>(io, port));
    sub.push_back(std::make_unique<tight_client>(io, port));
    acquire_sha = holder.back()->command({"SCRIPT", "LOAD", acquire}).str;
    release_sha = holder.back()->command({"SCRIPT", "LOAD", release}).str;
    (void)holder.back()->command({"DEL", key});
    sub.back()->send({"SUBSCRIBE", channel});
    (void)sub.back()->read();
  }
  // Every node's answer to one pipeline per node, read as they come; `enough(i, v)` counts the
  // ones that matter, and the read stops once `want` of them did (the rest are read after).
  const auto each = [&](std::vector<std::unique_ptr<tight_client>>& conns,
                        const std::vector<std::string_view>& words, std::size_t want, auto counts) {
    std::string wire;
    rd::resp3::append_command(wire, std::span<const std::string_view>(words));
    for (auto& c : conns) c->send_raw(wire);
    std::vector<bool> answered(conns.size(), false);
    std::size_t counted = 0, left = conns.size();
    std::int64_t reached = 0;
    for (int polls = 0; left > 0 && polls < 100'000; ++polls) {
      std::vector<pollfd> fds;
      std::vector<std::size_t> which;
      for (std::size_t i = 0; i < conns.size(); ++i) {
        if (answered[i]) continue;
        if (auto v = conns[i]->next_read()) {
          answered[i] = true;
          --left;
          if (counts(*v) && ++counted == want) reached = nanos_now();
          continue;
        }
        fds.push_back({conns[i]->native_handle(), POLLIN, 0});
        which.push_back(i);
      }
      if (fds.empty()) break;
      if (::poll(fds.data(), fds.size(), 1000) <= 0) usage("s3-quorum-floor: no answer within 1 s");
      for (std::size_t f = 0; f < fds.size(); ++f) {
        if (fds[f].revents != 0) conns[which[f]]->read_some();
      }
    }
    return reached;
  };
  const std::vector<std::string_view> take_as_holder{"EVALSHA", acquire_sha, "1",
                                                     key,       "10000",     "floor:0"};
  const std::vector<std::string_view> take_as_waiter{"EVALSHA", acquire_sha, "1",
                                                     key,       "10000",     "floor:1"};
  const auto granted = [](const rd::resp3::value& v) { return v.is_null(); };
  const auto any = [](const rd::resp3::value&) { return true; };
  (void)each(holder, take_as_holder, n, granted);
  std::vector<double> us;
  const auto end = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                           std::chrono::duration<double>(o.seconds));
  for (std::int64_t round = 1; round < 100'000 && clock_type::now() < end; ++round) {
    std::this_thread::sleep_for(1ms);
    const std::int64_t released = nanos_now();
    const auto latch = rd::unlock_latch(key, std::to_string(round));
    std::string wire;
    const std::vector<std::string_view> unlock{"EVALSHA", release_sha, "3",   key,
                                               channel,   latch,       "0",   "10000",
                                               "floor:0", "publish",   "1000"};
    rd::resp3::append_command(wire, std::span<const std::string_view>(unlock));
    for (auto& c : holder) c->send_raw(wire);
    // The waiter: a majority of unlock messages, then the attempt on every node.
    std::size_t heard = 0;
    std::vector<bool> got(n, false);
    for (int polls = 0; heard < quorum && polls < 100'000; ++polls) {
      std::vector<pollfd> fds;
      std::vector<std::size_t> which;
      for (std::size_t i = 0; i < n; ++i) {
        if (got[i]) continue;
        if (auto v = sub[i]->next_read()) {
          got[i] = true;
          ++heard;
          continue;
        }
        fds.push_back({sub[i]->native_handle(), POLLIN, 0});
        which.push_back(i);
      }
      if (heard >= quorum || fds.empty()) break;
      if (::poll(fds.data(), fds.size(), 1000) <= 0) usage("s3-quorum-floor: no unlock heard");
      for (std::size_t f = 0; f < fds.size(); ++f) {
        if (fds[f].revents != 0) sub[which[f]]->read_some();
      }
    }
    const auto acquired = each(waiter, take_as_waiter, quorum, granted);
    if (acquired == 0) usage("s3-quorum-floor: the waiter did not get a majority");
    us.push_back(static_cast<double>(acquired - released) / 1000.0);
    // Not timed: the holder's answers and the messages not yet read, then the hold back.
    for (std::size_t i = 0; i < n; ++i) {
      (void)holder[i]->read();
      if (!got[i]) (void)sub[i]->read();
    }
    (void)each(waiter, {"DEL", key}, n, any);
    (void)each(holder, take_as_holder, n, granted);
  }
  (void)each(holder, {"DEL", key}, n, any);
  const auto s = summarize(std::move(us));
  fmt::print(
      R"({{"library": "tight-client", "mode": "s3-quorum-floor", "params": {{"seconds": {}, )"
      R"("nodes": {}}}, "metrics": {{"handoffs": {}, "p50_us": {:.2f}, "p90_us": {:.2f}, )"
      R"("p99_us": {:.2f}, "max_us": {:.2f}}}}})"
      "\n",
      o.seconds, n, s.count, s.p50, s.p90, s.p99, s.max);
}

// --- s1-floor: a lock + unlock pair of N locks with the least possible client work -------------

/// S1's pair over N reentrant locks named as --kind multi names them (the key `s1`, then `s1:2` …
/// `s1:<N>`), made by blocking minimal clients running rlock's acquire and unlock scripts: each
/// half is one write per node (every node written before any is read), then every answer read.
/// The floor under a multi-lock's pair at N, and under one lock's at N = 1; with --cluster 1 the
/// keys go to the nodes that serve them (each found by its MOVED), as a multi-lock's do.
void run_s1_floor(const options& o) {
  namespace rd = rlock::detail;
  const int n = std::max(1, o.members);
  asio::io_context io;
  std::map<std::uint16_t, std::unique_ptr<tight_client>> nodes;
  const auto node = [&](std::uint16_t port) -> tight_client& {
    auto& c = nodes[port];
    if (!c) c = std::make_unique<tight_client>(io, port);
    return *c;
  };
  const auto acquire = std::string(rd::loaded_source(rd::script::acquire));
  const auto release = std::string(rd::loaded_source(rd::script::release));
  struct member {
    std::string key, channel;
    std::uint16_t port;
  };
  std::vector<member> members;
  // --ports (Q1's floor): the same key on every server, as a quorum lock's round writes it.
  for (const auto port : o.ports) {
    members.push_back({o.prefix + "s1", rd::unlock_channel(o.prefix + "s1"), port});
  }
  for (int i = 1; i <= n && o.ports.empty(); ++i) {
    const std::string key = i == 1 ? o.prefix + "s1" : fmt::format("{}s1:{}", o.prefix, i);
    std::uint16_t port = o.port;
    if (o.cluster) {
      // `-MOVED <slot> <host>:<port>` from the seed when another node serves the key.
      const auto where = node(o.port).command({"EXISTS", key});
      if (where.is_error() && where.str.starts_with("MOVED")) {
        port = static_cast<std::uint16_t>(std::stoi(where.str.substr(where.str.rfind(':') + 1)));
      }
    }
    members.push_back({key, rd::unlock_channel(key), port});
  }
  // --batch 1: each half is one script per node, running the script's own source for each of
  // that node's members in turn. ARGV[1] = keys per member, ARGV[2] = how many of the members'
  // keys follow in ARGV, then those keys, then the arguments all members share. On one server
  // every key is declared; a cluster refuses declared keys of several slots (CROSSSLOT, even
  // on one node), so there the first is declared and the others, which the same node serves,
  // are passed as arguments under allow-cross-slot-keys: what no client should do (a slot that
  // moves makes the script fail instead of being redirected), done here to find the floor.
  const auto batched = [&](const std::string& source) {
    return std::string(o.cluster ? "#!lua flags=allow-cross-slot-keys\n" : "") +
           "local function run(KEYS, ARGV)\n" + source +
           "\nend\n"
           "local per, extra, all, args, keys, out = tonumber(ARGV[1]), tonumber(ARGV[2]), {}, "
           "{}, {}, {}\n"
           "for i = 1, #KEYS do all[i] = KEYS[i] end\n"
           "for i = 1, extra do all[#KEYS + i] = ARGV[2 + i] end\n"
           "for i = 3 + extra, #ARGV do args[i - 2 - extra] = ARGV[i] end\n"
           "for m = 0, #all / per - 1 do\n"
           "  for i = 1, per do keys[i] = all[m * per + i] end\n"
           "  local r = run(keys, args)\n"
           "  if r == nil then r = false end\n"
           "  out[m + 1] = r\n"
           "end\n"
           "return out\n";
  };
  // Loaded on every node the members live on (a script's SHA is the same everywhere).
  std::string acquire_sha, release_sha;
  for (const auto& m : members) {
    if (nodes.contains(m.port) && !acquire_sha.empty() && m.port != o.port && o.ports.empty())
      continue;
    auto& c = node(m.port);
    acquire_sha = c.command({"SCRIPT", "LOAD", o.batch ? batched(acquire) : acquire}).str;
    release_sha = c.command({"SCRIPT", "LOAD", o.batch ? batched(release) : release}).str;
  }
  if (acquire_sha.size() != 40 || release_sha.size() != 40) {
    usage("s1-floor: SCRIPT LOAD failed: " + acquire_sha + " " + release_sha);
  }
  const std::string field = "floor:1";
  // One half: every member's call appended to its node's pipeline (--batch: its node's one
  // call), each node written once, then every node's answers read. `keys_of(member)` are a
  // member's keys, `args` its arguments (the same for all). Whether every answer was `ok`.
  std::map<std::uint16_t, std::pair<std::string, int>> batch;
  std::map<std::uint16_t, std::vector<std::string>> node_keys;
  const auto half = [&](const std::string& sha, auto keys_of, const std::vector<std::string>& args,
                        auto answer_ok) {
    for (auto& [port, b] : batch) {
      b.first.clear();
      b.second = 0;
    }
    for (auto& [port, k] : node_keys) k.clear();
    for (const auto& m : members) {
      const auto keys = keys_of(m);
      if (o.batch) {
        auto& k = node_keys[m.port];
        k.insert(k.end(), keys.begin(), keys.end());
        batch[m.port].second = 1;
        continue;
      }
      std::vector<std::string_view> words{"EVALSHA", sha};
      const auto count = std::to_string(keys.size());
      words.emplace_back(count);
      words.insert(words.end(), keys.begin(), keys.end());
      words.insert(words.end(), args.begin(), args.end());
      rd::resp3::append_command(batch[m.port].first, std::span<const std::string_view>(words));
      ++batch[m.port].second;
    }
    const auto per = std::to_string(keys_of(members.front()).size());
    for (auto& [port, k] : node_keys) {
      if (k.empty()) continue;
      std::vector<std::string_view> words{"EVALSHA", sha};
      const std::size_t declared = o.cluster ? 1 : k.size();
      const auto count = std::to_string(declared);
      const auto extra = std::to_string(k.size() - declared);
      words.emplace_back(count);
      words.insert(words.end(), k.begin(), k.begin() + static_cast<std::ptrdiff_t>(declared));
      words.emplace_back(per);
      words.emplace_back(extra);
      words.insert(words.end(), k.begin() + static_cast<std::ptrdiff_t>(declared), k.end());
      words.insert(words.end(), args.begin(), args.end());
      rd::resp3::append_command(batch[port].first, std::span<const std::string_view>(words));
    }
    for (auto& [port, b] : batch) {
      if (b.second > 0) node(port).send_raw(b.first);
    }
    const auto check = [&](const rd::resp3::value& v) {
      if (!o.batch) return answer_ok(v);
      bool all = v.type == rd::resp3::type::array && !v.elements.empty();
      for (const auto& e : v.elements) all = answer_ok(e) && all;
      return all;
    };
    // Read from whichever node answers first, as an event loop would (a blocking read of one
    // node after another would add a sleep and a wake-up per node).
    bool ok = true;
    int left = 0;
    for (auto& [port, b] : batch) left += b.second;
    for (int polls = 0; left > 0 && polls < 100'000; ++polls) {
      std::vector<pollfd> fds;
      std::vector<std::uint16_t> ports;
      for (auto& [port, b] : batch) {
        auto& c = node(port);
        while (b.second > 0) {
          auto v = c.next_read();
          if (!v) break;
          ok = check(*v) && ok;
          --b.second;
          --left;
        }
        if (b.second > 0) {
          fds.push_back({c.native_handle(), POLLIN, 0});
          ports.push_back(port);
        }
      }
      if (fds.empty()) break;
      if (::poll(fds.data(), fds.size(), 1000) <= 0) usage("s1-floor: no answer within 1 s");
      for (std::size_t f = 0; f < fds.size(); ++f) {
        if (fds[f].revents != 0) node(ports[f]).read_some();
      }
    }
    return ok && left == 0;
  };
  std::vector<double> us;
  const auto warm_end = clock_type::now() + warmup;
  const auto end = warm_end + std::chrono::duration_cast<clock_type::duration>(
                                  std::chrono::duration<double>(o.seconds));
  const std::vector<std::string> acquire_args{"30000", field};
  const std::vector<std::string> release_args{"0", "30000", field, "publish", "1000"};
  for (std::uint64_t i = 1; i < 2'000'000; ++i) {
    const auto t0 = clock_type::now();
    if (t0 >= end) break;
    const auto latch_id = std::to_string(i);
    const bool taken = half(
        acquire_sha, [](const member& m) { return std::vector<std::string>{m.key}; }, acquire_args,
        [](const rd::resp3::value& v) { return v.is_null(); });
    const bool released = half(
        release_sha,
        [&](const member& m) {
          return std::vector<std::string>{m.key, m.channel, rd::unlock_latch(m.key, latch_id)};
        },
        release_args, [](const rd::resp3::value& v) { return !v.is_error() && !v.is_null(); });
    if (!taken || !released) usage("s1-floor: a member was not free, or its unlock failed");
    if (t0 >= warm_end) us.push_back(micros(clock_type::now() - t0));
  }
  const auto s = summarize(std::move(us));
  fmt::print(
      R"({{"library": "tight-client", "mode": "s1-floor", "params": {{"members": {}, )"
      R"("cluster": {}, "batch": {}, "nodes": {}, "seconds": {}}}, "metrics": {{"pairs": {}, )"
      R"("p50_us": {:.2f}, "p90_us": {:.2f}, "p99_us": {:.2f}, "max_us": {:.2f}, )"
      R"("mean_us": {:.2f}}}}})"
      "\n",
      members.size(), o.cluster ? "true" : "false", o.batch ? "true" : "false", batch.size(),
      o.seconds, s.count, s.p50, s.p90, s.p99, s.max, s.mean);
}

// --- s7-floor: blocking threads with nothing shared --------------------------------------------

/// T threads, each with its own blocking connection, each running the acquire and release
/// scripts on its own key: one sleep and one wake-up per command and no coordination at all.
/// The least that T blocking threads can cost, for S7's blocking-vs-coroutines ratio.
void run_s7_floor(const options& o) {
  const int threads = std::max(1, o.threads);
  const auto acquire = std::string(rlock::detail::loaded_source(rlock::detail::script::acquire));
  const auto release = std::string(rlock::detail::loaded_source(rlock::detail::script::release));
  const auto s = time_threads(o, threads, [&](int t) {
    // The connection dies before the io_context it lives on (member order).
    struct connection {
      asio::io_context io;
      std::optional<tight_client> c;
    };
    auto conn = std::make_shared<connection>();
    auto& c = conn->c.emplace(conn->io, o.port);
    const auto acquire_sha = c.command({"SCRIPT", "LOAD", acquire}).str;
    const auto release_sha = c.command({"SCRIPT", "LOAD", release}).str;
    const auto key = fmt::format("{}s7-floor:{}", o.prefix, t);
    return [conn, acquire_sha, release_sha, key, channel = rlock::detail::unlock_channel(key),
            calls = std::make_shared<std::uint64_t>(0), field = fmt::format("floor:{}", t)] {
      (void)conn->c->command({"EVALSHA", acquire_sha, "1", key, "30000", field});
      // rlock's latched release; a fresh request id per call, as rlock's. The latch expires on
      // its own (10 ms) instead of being deleted: a floor may do less than rlock, never more.
      const auto latch = rlock::detail::unlock_latch(key, fmt::format("{:032x}", ++*calls));
      (void)conn->c->command(
          {"EVALSHA", release_sha, "3", key, channel, latch, "0", "30000", field, "publish", "10"});
    };
  });
  fmt::print(
      R"({{"library": "tight-client", "mode": "s7-floor", "params": {{"threads": {}, "seconds": {}}}, )"
      R"("metrics": {{"pairs": {}, "p50_us": {:.2f}, "p90_us": {:.2f}, "p99_us": {:.2f}, )"
      R"("max_us": {:.2f}, "mean_us": {:.2f}}}}})"
      "\n",
      threads, o.seconds, s.count, s.p50, s.p90, s.p99, s.max, s.mean);
}

// --- s2-floor: S2's server work with no client logic ---------------------------------------------

/// rlock's arguments for S2's locks, shared by every batch of s2-floor.
struct s2_floor_mix {
  std::string prefix;
  std::string acquire_sha;
  std::string release_sha;
  std::string uuid;       // rlock's client UUID shape; a field is "<uuid>:<owner id>"
  std::string id_high;    // the first 16 of a request id's 32 hex digits
  std::string lease;      // ms
  std::string latch_ttl;  // ms
};

/// Part of one s2-floor connection's pipeline: for each of its pairs (an S2 task: its own key
/// and owner), exactly what one lock() + unlock() of S2 makes the server run, then one DEL of
/// the batch's latches. Built once; before each write only the request ids change (fresh ones,
/// as rlock's: one per unlock).
struct s2_floor_batch {
  std::string bytes;
  /// Per pair, where the last 16 hex digits of its request id are: in the release, in the DEL.
  std::vector<std::array<std::size_t, 2>> id_at;
  std::size_t pairs = 0;
  bool counted = false;  // written after the warm-up (and before the end)
  bool live = true;      // its replies are awaited
};

s2_floor_batch make_s2_floor_batch(const s2_floor_mix& m, std::span<const int> tasks) {
  namespace resp3 = rlock::detail::resp3;
  s2_floor_batch b;
  b.pairs = tasks.size();
  b.id_at.resize(tasks.size());
  std::vector<std::string> latches;
  latches.reserve(tasks.size());
  for (std::size_t j = 0; j < tasks.size(); ++j) {
    // S2's task c: get_lock("s2:<c>") under the run's prefix, a fresh owner id each.
    const auto key = fmt::format("{}s2:{}", m.prefix, tasks[j]);
    const auto field = fmt::format("{}:{}", m.uuid, tasks[j] + 1);
    latches.push_back(rlock::detail::unlock_latch(key, m.id_high + std::string(16, '0')));
    // The acquire script: KEYS[1] = key; ARGV = lease, field.
    resp3::append_command(b.bytes, {"EVALSHA", m.acquire_sha, "1", key, m.lease, field});
    // The latched release: KEYS = key, channel, latch; ARGV = "0", lease, field, "publish",
    // latch TTL (lock_ops.cpp, release_operation::start).
    resp3::append_array_header(b.bytes, 11);
    resp3::append_bulk(b.bytes, "EVALSHA");
    resp3::append_bulk(b.bytes, m.release_sha);
    resp3::append_bulk(b.bytes, "3");
    resp3::append_bulk(b.bytes, key);
    resp3::append_bulk(b.bytes, rlock::detail::unlock_channel(key));
    resp3::append_bulk(b.bytes, latches.back());
    b.id_at[j][0] = b.bytes.size() - 2 - 16;  // the id ends the latch, before its CRLF
    resp3::append_bulk(b.bytes, "0");
    resp3::append_bulk(b.bytes, m.lease);
    resp3::append_bulk(b.bytes, field);
    resp3::append_bulk(b.bytes, "publish");
    resp3::append_bulk(b.bytes, m.latch_ttl);
  }
  // The latch sweeper's DEL (standalone: one DEL for every latch it holds).
  resp3::append_array_header(b.bytes, 1 + latches.size());
  resp3::append_bulk(b.bytes, "DEL");
  for (std::size_t j = 0; j < latches.size(); ++j) {
    resp3::append_bulk(b.bytes, latches[j]);
    b.id_at[j][1] = b.bytes.size() - 2 - 16;
  }
  return b;
}

/// Writes `v` as 16 lowercase hex digits at `at`.
void put_hex16(std::string& s, std::size_t at, std::uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  for (std::size_t i = 16; i-- > 0; v >>= 4) s[at + i] = digits[v & 15];
}

std::string reply_text(const rlock::detail::resp3::value& v) {
  if (v.is_error()) return v.str;
  if (v.is_null()) return "nil";
  if (v.type == rlock::detail::resp3::type::number) return std::to_string(v.integer);
  return fmt::format("a reply of RESP3 type {}", static_cast<int>(v.type));
}

/// Reads a batch's replies and checks that the server did rlock's work: every acquire took its
/// lock (nil), every release released it (1), the DEL deleted every latch.
void read_s2_floor_batch(tight_client& c, const s2_floor_batch& b) {
  for (std::size_t j = 0; j < b.pairs; ++j) {
    const auto acquired = c.read();
    if (!acquired.is_null()) {
      throw std::runtime_error("acquire script answered " + reply_text(acquired) + ", not nil");
    }
    const auto released = c.read();
    if (released.type != rlock::detail::resp3::type::number || released.integer != 1) {
      throw std::runtime_error("release script answered " + reply_text(released) + ", not 1");
    }
  }
  const auto deleted = c.read();
  if (deleted.type != rlock::detail::resp3::type::number ||
      deleted.integer != static_cast<std::int64_t>(b.pairs)) {
    throw std::runtime_error(
        fmt::format("latch DEL answered {}, not {}", reply_text(deleted), b.pairs));
  }
}

/// The floor under S2: the server work rlock's S2 makes for C pairs in flight, pipelined by a
/// minimal client with no client logic (no coroutines, no per-request bookkeeping, no reply
/// decoding beyond a check). Since the unlock latch, one lock() + unlock() pair of S2 (lock()
/// without a lease: the watchdog's 30 s; rlock_bench's 30 s command timeout) makes the server run
///   EVALSHA <acquire> 1 <key> 30000 <uuid>:<owner>
///   EVALSHA <release> 3 <key> redisson_lock__channel:{<key>}
///           redisson_unlock_latch:{<key>}:<32 hex request id> 0 30000 <uuid>:<owner> publish 60000
/// and a share of a `DEL <latch> ...`: rlock's latch sweeper deletes the latches of every release
/// answered in one turn of its event loop with one DEL, so under S2 a DEL carries about one read's
/// worth of answered releases. Here, comparably, each batch of pairs (C/2 of them on one
/// connection) ends with one DEL of that batch's latches, answered in the same pipeline round.
/// The keys deleted are the same either way; only the number of DEL commands may differ a little
/// (one per C/2 pairs here; `pairs_per_del` in the output).
///
/// The C pairs (S2's C tasks, each its own key and owner) are spread over N connections (S2 runs
/// all its tasks on one client connection: default 1), each connection's pairs split into two
/// batches. Both are written at once; then, round robin, a connection's older batch is read and
/// written again at once, with fresh request ids: the server always has the other batch to run
/// while the client reads, as it has rlock's other requests. A pair's acquire and release go in
/// one write (Redis runs one connection's commands in order, so the release finds the lock
/// taken), where rlock waits for the acquire's answer: the same server work, less client work.
/// Pairs count as S2's do: those written after the warm-up and before the end.
void run_s2_floor(const options& o) {
  const int tasks = std::max(1, o.concurrency);
  const int connections = std::clamp(o.connections, 1, tasks);
  const auto cfg = config_for(o);
  s2_floor_mix m;
  m.prefix = o.prefix;
  m.uuid = boost::uuids::to_string(boost::uuids::random_generator()());
  std::mt19937_64 rng(std::random_device{}());
  m.id_high = fmt::format("{:016x}", rng());
  // lock() without a lease takes the watchdog's; a latch lives twice the command timeout, and
  // the release repeats the lease (lock_ops.cpp).
  m.lease = std::to_string(cfg.watchdog_timeout.count());
  m.latch_ttl = std::to_string(std::max<std::int64_t>(1, 2 * cfg.command_timeout.count()));

  struct connection {
    std::unique_ptr<tight_client> client;
    std::vector<s2_floor_batch> batches;  // in the order they were first written
    std::size_t oldest = 0;               // the batch whose replies come next
  };
  asio::io_context io;  // declared before the connections: they die first
  std::vector<connection> conns(static_cast<std::size_t>(connections));
  for (auto& c : conns) c.client = std::make_unique<tight_client>(io, o.port);
  // The very scripts rlock loads in its handshake (src/script/scripts.hpp).
  auto load = [&](rlock::detail::script s) {
    auto reply = conns.front().client->command({"SCRIPT", "LOAD", rlock::detail::loaded_source(s)});
    if (reply.is_error() || reply.str.size() != 40) {
      throw std::runtime_error("SCRIPT LOAD failed: " + reply_text(reply));
    }
    return std::move(reply.str);
  };
  m.acquire_sha = load(rlock::detail::script::acquire);
  m.release_sha = load(rlock::detail::script::release);
  for (std::size_t k = 0; k < conns.size(); ++k) {
    std::vector<int> mine;
    for (int t = static_cast<int>(k); t < tasks; t += connections) mine.push_back(t);
    const std::span<const int> all(mine);
    const std::size_t half = (mine.size() + 1) / 2;
    conns[k].batches.push_back(make_s2_floor_batch(m, all.first(half)));
    if (half < mine.size()) conns[k].batches.push_back(make_s2_floor_batch(m, all.subspan(half)));
  }

  std::uint64_t request_id = 0;
  auto send_batch = [&request_id](tight_client& c, s2_floor_batch& b, bool counted) {
    for (const auto& at : b.id_at) {
      ++request_id;
      put_hex16(b.bytes, at[0], request_id);
      put_hex16(b.bytes, at[1], request_id);
    }
    c.send_raw(b.bytes);
    b.counted = counted;
  };
  const auto start = clock_type::now() + warmup;
  const auto end = start + std::chrono::duration_cast<clock_type::duration>(
                               std::chrono::duration<double>(o.seconds));
  std::size_t live = 0;
  for (auto& c : conns) {
    for (auto& b : c.batches) send_batch(*c.client, b, false);
    live += c.batches.size();
  }
  std::size_t pairs = 0;
  std::size_t dels = 0;
  for (std::size_t turn = 0; live > 0 && turn < 100'000'000; ++turn) {
    for (auto& c : conns) {
      auto& b = c.batches[c.oldest];
      c.oldest = (c.oldest + 1) % c.batches.size();
      if (!b.live) continue;
      read_s2_floor_batch(*c.client, b);
      if (b.counted) {
        pairs += b.pairs;
        ++dels;
      }
      const auto now = clock_type::now();
      if (now < end) {
        send_batch(*c.client, b, now >= start);
      } else {
        b.live = false;
        --live;
      }
    }
  }
  const double elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
  fmt::print(
      R"({{"library": "tight-client", "mode": "s2-floor", )"
      R"("params": {{"seconds": {}, "concurrency": {}, "connections": {}}}, )"
      R"("metrics": {{"pairs": {}, "pairs_per_s": {:.1f}, "concurrency": {}, "connections": {}, )"
      R"("pairs_per_del": {:.1f}}}}})"
      "\n",
      o.seconds, tasks, connections, pairs, static_cast<double>(pairs) / elapsed, tasks,
      connections, dels > 0 ? static_cast<double>(pairs) / static_cast<double>(dels) : 0.0);
}

// --- s8: recovery after faults -----------------------------------------------------------------

/// A private redis-server on a free loopback port, killed and restarted on the same port: the
/// bench's own server must not be killed under the other scenarios.
class private_server {
 public:
  explicit private_server(std::string exe) : exe_(std::move(exe)) {
    asio::io_context io;
    asio::ip::tcp::acceptor probe(io, {asio::ip::make_address("127.0.0.1"), 0});
    port_ = probe.local_endpoint().port();
    probe.close();
    start();
  }
  ~private_server() { kill(); }
  std::uint16_t port() const { return port_; }

  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  /// Starts the server and returns the moment it first answered PING.
  clock_type::time_point start() {
    const std::string port = std::to_string(port_);
    std::vector<std::string> args{exe_,      "--port",    port,           "--bind", "127.0.0.1",
                                  "--save",  "",          "--appendonly", "no",     "--loglevel",
                                  "warning", "--logfile", "/dev/null"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (::posix_spawnp(&pid_, exe_.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
      throw std::runtime_error("cannot start " + exe_);
    }
    // A blocking probe: connect and PING until the server answers (bounded: 10 s).
    for (int i = 0; i < 10'000; ++i) {
      try {
        asio::io_context io;
        tight_client c(io, port_);
        if (c.command({"PING"}).str == "PONG") return clock_type::now();
      } catch (const std::exception&) {
      }
      std::this_thread::sleep_for(1ms);
    }
    throw std::runtime_error("the private redis-server did not come up within 10 s");
  }

 private:
  std::string exe_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// The first try_lock that succeeds after a fault, retried (bounded) through the errors a
/// reconnecting client may give; returns when it succeeded.
clock_type::time_point first_acquire(rlock::reentrant_lock& lock) {
  for (int i = 0; i < 1000; ++i) {
    try {
      if (lock.async_try_lock(0ms, std::nullopt, asio::use_future).get()) {
        const auto at = clock_type::now();
        lock.async_unlock(asio::use_future).get();
        return at;
      }
    } catch (const std::exception&) {
      // use_future throws boost::system::system_error: a timeout while reconnecting, say.
    }
  }
  throw std::runtime_error("no acquisition after 1000 attempts");
}

void run_s8(const options& o) {
  const int rounds = std::max(1, o.restarts);
  private_server server(o.redis_server);
  asio::io_context io;
  // The io thread is stopped and joined however this function ends.
  struct io_runner {
    asio::io_context& io;
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    std::thread thread{[this] { io.run(); }};
    ~io_runner() {
      work.reset();
      io.stop();
      thread.join();
    }
  } runner{io};
  rlock::config cfg;  // the defaults under test: 50 ms initial backoff, 2 s cap
  cfg.port = server.port();
  cfg.key_prefix = o.prefix;
  auto client = std::make_unique<rlock::client>(io.get_executor(), cfg);
  client->async_connect(asio::use_future).get();
  auto lock = client->get_lock("s8");

  progress(fmt::format("s8: {} restarts", rounds));
  std::vector<double> restart_ms;
  for (int i = 0; i < rounds; ++i) {
    server.kill();
    const auto back = server.start();
    restart_ms.push_back(ms_between(back, first_acquire(lock)));
    progress(fmt::format("s8: restart {}: {:.1f} ms", i + 1, restart_ms.back()));
  }
  progress(fmt::format("s8: {} CLIENT KILLs", rounds));
  std::vector<double> kill_ms;
  {
    asio::io_context raw_io;
    tight_client raw(raw_io, server.port());
    for (int i = 0; i < rounds; ++i) {
      (void)raw.command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
      const auto killed = clock_type::now();
      kill_ms.push_back(ms_between(killed, first_acquire(lock)));
    }
  }
  const auto reconnects = client->stats().reconnects;

  // The holder's margin: it can neither renew nor reconnect (its user is deleted); another
  // client waits. lost() must come before the other's acquisition; the gap is the margin.
  const int margin_rounds = std::max(1, std::min(rounds, 5));
  progress(fmt::format("s8: {} lost() margins", margin_rounds));
  std::vector<double> margin_ms;
  rlock::config holder_cfg = cfg;
  holder_cfg.username = "s8-holder";
  holder_cfg.password = "pw";
  holder_cfg.watchdog_timeout = 1000ms;
  holder_cfg.health_check_interval = 200ms;
  for (int i = 0; i < margin_rounds; ++i) {
    asio::io_context raw_io;
    tight_client raw(raw_io, server.port());
    (void)raw.command({"ACL", "SETUSER", "s8-holder", "on", ">pw", "~*", "&*", "+@all"});
    rlock::client holder(io.get_executor(), holder_cfg);
    rlock::client waiter(io.get_executor(), cfg);
    holder.async_connect(asio::use_future).get();
    waiter.async_connect(asio::use_future).get();
    auto held = holder.get_lock(fmt::format("s8-margin-{}", i));
    held.async_lock(std::nullopt, asio::use_future).get();
    auto lost = held.async_lost(asio::use_future);
    auto wanted = waiter.get_lock(held.name());
    auto acquired = wanted.async_lock(std::nullopt, asio::use_future);
    std::this_thread::sleep_for(400ms);  // a renewal or two go through first
    (void)raw.command({"ACL", "DELUSER", "s8-holder"});
    std::optional<clock_type::time_point> lost_at, acquired_at;
    for (int polls = 0; polls < 5000 && !(lost_at && acquired_at); ++polls) {
      if (!lost_at && lost.wait_for(1ms) == std::future_status::ready) lost_at = clock_type::now();
      if (!acquired_at && acquired.wait_for(1ms) == std::future_status::ready) {
        acquired_at = clock_type::now();
      }
    }
    if (!lost_at || !acquired_at) {
      throw std::runtime_error(
          fmt::format("margin round {} did not finish (lost: {}, acquired: {})", i,
                      lost_at.has_value(), acquired_at.has_value()));
    }
    progress(fmt::format("s8: margin {}: {:.2f} ms", i + 1, ms_between(*lost_at, *acquired_at)));
    margin_ms.push_back(ms_between(*lost_at, *acquired_at));
    wanted.async_unlock(asio::use_future).get();
    holder.async_close(asio::use_future).get();
    waiter.async_close(asio::use_future).get();
  }
  const auto margin_cfg = holder_cfg.watchdog_timeout / 100 + 5ms;

  client->async_close(asio::use_future).get();
  const auto r = summarize(restart_ms);
  const auto k = summarize(kill_ms);
  const auto m = summarize(margin_ms);
  fmt::print(R"({{"library": "rlock", "mode": "s8", "params": {{"restarts": {}}}, "metrics": )"
             R"({{"restart_p50_ms": {:.2f}, "restart_max_ms": {:.2f}, "kill_p50_ms": {:.2f}, )"
             R"("kill_max_ms": {:.2f}, "reconnects": {}, "backoff_cap_ms": {}, )"
             R"("margin_min_ms": {:.2f}, "margin_p50_ms": {:.2f}, "margin_configured_ms": {}, )"
             R"("margin_rounds": {}}}}})"
             "\n",
             rounds, r.p50, r.max, k.p50, k.max, reconnects, cfg.reconnect.backoff_cap.count(),
             *std::min_element(margin_ms.begin(), margin_ms.end()), m.p50, margin_cfg.count(),
             margin_rounds);
}

}  // namespace

// --- S8 deposed: a holder told at push speed that another client changed its lock (issue 53) ---

/// The master that holds `key`: the port itself, or on a cluster the slot's owner.
std::uint16_t port_of_key(const options& o, std::string_view key) {
  if (!o.cluster) return o.port;
  asio::io_context io;
  tight_client seed(io, o.port);
  const auto slot = seed.command({"CLUSTER", "KEYSLOT", key}).integer;
  const auto slots = seed.command({"CLUSTER", "SLOTS"});
  for (const auto& range : slots.elements) {
    if (range.elements.size() < 3) continue;
    if (slot >= range.elements[0].integer && slot <= range.elements[1].integer) {
      return static_cast<std::uint16_t>(range.elements[2].elements.at(1).integer);
    }
  }
  throw std::runtime_error(fmt::format("no master owns the slot of {}", key));
}

/// What a server ran so far: every command (INFO stats, the scripts' own calls included) and
/// the scripts clients sent (EVALSHA and EVAL calls in INFO commandstats).
struct commands_run {
  std::int64_t all = 0;
  std::int64_t scripts = 0;
};
commands_run commands_processed(std::uint16_t port) {
  asio::io_context io;
  tight_client raw(io, port);
  commands_run out;
  out.all = info_number(raw.command({"INFO", "stats"}).str, "total_commands_processed:");
  const auto stats = raw.command({"INFO", "commandstats"}).str;
  out.scripts =
      info_number(stats, "cmdstat_evalsha:calls=") + info_number(stats, "cmdstat_eval:calls=");
  return out;
}

/// One kind as the deposed scenario holds it: take it, arm lost(), and its key.
struct deposable {
  std::string kind;
  std::function<asio::awaitable<void>()> take;
  std::function<void(std::function<void()>)> on_lost;
  std::string key;
  bool shared = false;  // other holders change its key: only a flush is measured
};

deposable deposable_of(rlock::client& c, const std::string& kind, const std::string& name) {
  deposable d;
  d.kind = kind;
  auto with = [&d](auto lock) {
    d.key = std::string(lock.key());
    d.take = [lock]() mutable -> asio::awaitable<void> { co_await lock.lock(); };
    d.on_lost = [lock](std::function<void()> f) mutable {
      lock.async_lost([f = std::move(f)](boost::system::error_code ec) {
        if (!ec) f();
      });
    };
  };
  if (kind == "reentrant") {
    with(c.get_lock(name));
  } else if (kind == "fenced") {
    with(c.get_fenced_lock(name));
  } else if (kind == "non-reentrant") {
    with(c.get_non_reentrant_lock(name));
  } else if (kind == "fair") {
    with(c.get_fair_lock(name));
  } else if (kind == "spin") {
    with(c.get_spin_lock(name));
  } else if (kind == "write") {
    with(c.get_read_write_lock(name).write_lock());
  } else if (kind == "read") {
    with(c.get_read_write_lock(name).read_lock());
    d.shared = true;
  } else if (kind == "election") {
    auto e = std::make_shared<rlock::election>(c, name);
    d.key = std::string(e->key());
    d.take = [e]() -> asio::awaitable<void> { (void)co_await e->campaign("s8"); };
    d.on_lost = [e](std::function<void()> f) {
      e->async_lost([f = std::move(f)](boost::system::error_code ec) {
        if (!ec) f();
      });
    };
  } else {
    throw std::runtime_error("s8-deposed: unknown kind " + kind);
  }
  return d;
}

/// Every kind held, then changed by another client (DEL, an overwrite by another owner, a
/// FLUSHALL), `--restarts` times each: from the change's send to lost(), with
/// config::track_holds on; and the commands a lock+unlock pair costs with it on and off.
void run_s8_deposed(const options& o) {
  const int rounds = std::max(1, o.restarts);
  const std::vector<std::string> kinds = {"reentrant", "fenced", "non-reentrant", "fair",
                                          "spin",      "write",  "election",      "read"};
  const std::vector<std::string> changes = {"del", "overwrite", "flush"};
  std::map<std::string, std::vector<double>> by_change;  // µs
  std::map<std::string, std::vector<double>> by_kind;
  std::size_t missed = 0;
  std::uint64_t checks = 0;
  std::uint64_t renewals = 0;
  std::vector<std::uint16_t> ports{o.port};
  auto tracked = config_for(o);
  tracked.track_holds = true;
  with_clients(
      o, tracked, ports,
      [&](asio::io_context& io,
          std::vector<std::reference_wrapper<rlock::client>>& clients) -> asio::awaitable<void> {
        rlock::client& c = clients.front().get();
        const auto renewals_before = c.stats().renewal_calls;
        for (const auto& kind : kinds) {
          for (const auto& change : changes) {
            const bool shared = kind == "read";
            if (shared && change != "flush") continue;
            for (int i = 0; i < rounds; ++i) {
              auto d = deposable_of(c, kind, fmt::format("s8-deposed-{}-{}-{}", kind, change, i));
              co_await d.take();
              // Shared with the lost() handler, which may outlive a round that missed it.
              struct told {
                explicit told(asio::io_context& c) : bell(c, clock_type::time_point::max()) {}
                std::int64_t at = 0;
                asio::steady_timer bell;
              };
              auto t = std::make_shared<told>(io);
              d.on_lost([t] {
                t->at = nanos_now();
                t->bell.cancel();
              });
              const auto port = port_of_key(o, d.key);
              std::int64_t sent_ns = 0;
              auto external = std::async(std::launch::async, [&] {
                asio::io_context raw_io;
                tight_client raw(raw_io, port);
                sent_ns = nanos_now();
                if (change == "del") {
                  (void)raw.command({"DEL", d.key});
                } else if (change == "overwrite") {
                  (void)raw.command({"MULTI"});
                  (void)raw.command({"DEL", d.key});
                  (void)raw.command({"HSET", d.key, "java-uuid:1", "1"});
                  (void)raw.command({"EXEC"});
                } else {
                  (void)raw.command({"FLUSHALL"});
                }
              });
              if (t->at == 0) {
                t->bell.expires_after(5s);
                (void)co_await t->bell.async_wait(asio::as_tuple(asio::use_awaitable));
              }
              external.get();
              if (t->at == 0) {
                ++missed;
                continue;
              }
              const double us = static_cast<double>(t->at - sent_ns) / 1e3;
              by_change[change].push_back(us);
              by_kind[kind].push_back(us);
            }
          }
        }
        checks = c.stats().hold_checks;
        renewals = c.stats().renewal_calls - renewals_before;
      });
  // The commands a lock+unlock pair costs, tracking on and off (the handshake's one
  // CLIENT TRACKING per connection is not a pair's).
  auto per_pair = [&](bool track) {
    auto cfg = config_for(o);
    cfg.track_holds = track;
    std::pair<double, double> out;  // scripts sent, commands run (the scripts' calls included)
    with_clients(
        o, cfg, ports,
        [&](asio::io_context&,
            std::vector<std::reference_wrapper<rlock::client>>& cs) -> asio::awaitable<void> {
          auto lock = cs.front().get().get_lock(track ? "s8-pairs-on" : "s8-pairs-off");
          const auto port = port_of_key(o, lock.key());
          constexpr int pairs = 1000;
          const auto before = commands_processed(port);
          for (int i = 0; i < pairs; ++i) {
            co_await lock.lock();
            co_await lock.unlock();
          }
          const auto after = commands_processed(port);
          // The two INFO questions of `before` are counted in `after`.
          out = {static_cast<double>(after.scripts - before.scripts) / pairs,
                 static_cast<double>(after.all - before.all - 2) / pairs};
        });
    return out;
  };
  const auto on = per_pair(true);
  const auto off = per_pair(false);
  // {"<name>": {"p50_ms": ..., "p99_ms": ..., "count": ...}, ...}, one entry per group.
  const auto summaries_json = [](const std::map<std::string, std::vector<double>>& groups) {
    std::string out;
    for (const auto& [name, us] : groups) {
      const auto k = summarize(us);
      out += fmt::format(R"({}"{}": {{"p50_ms": {:.3f}, "p99_ms": {:.3f}, "count": {}}})",
                         out.empty() ? "" : ", ", name, k.p50 / 1e3, k.p99 / 1e3, k.count);
    }
    return out;
  };
  const std::string kinds_json = summaries_json(by_kind);
  const std::string changes_json = summaries_json(by_change);
  std::vector<double> all;
  for (const auto& [kind, us] : by_kind) all.insert(all.end(), us.begin(), us.end());
  const auto a = summarize(all);
  fmt::print(
      R"({{"library": "rlock", "mode": "s8-deposed", "params": {{"rounds": {}, )"
      R"("cluster": {}}}, "metrics": {{"p50_ms": {:.3f}, "p99_ms": {:.3f}, "max_ms": {:.3f}, )"
      R"("count": {}, "missed": {}, "hold_checks": {}, "renewal_calls": {}, )"
      R"("commands_per_pair_tracking": {:.3f}, "commands_per_pair_untracked": {:.3f}, )"
      R"("server_calls_per_pair_tracking": {:.3f}, "server_calls_per_pair_untracked": {:.3f}, )"
      R"("kinds": {{{}}}, "changes": {{{}}}}}}})"
      "\n",
      rounds, o.cluster ? "true" : "false", a.p50 / 1e3, a.p99 / 1e3, a.max / 1e3, a.count, missed,
      checks, renewals, on.first, off.first, on.second, off.second, kinds_json, changes_json);
}

// --- Q1: the quorum lock (issue 52) ------------------------------------------------------------

std::string quorum_params(const options& o) {
  return fmt::format(R"("kind": "quorum", "nodes": {}, )", o.ports.size());
}

/// S1 of the quorum lock: lock() + unlock() of one quorum lock, one task, back to back.
void run_quorum_s1(const options& o) {
  std::vector<double> us;
  with_clients(
      o, config_for(o), o.ports,
      [&](asio::io_context&,
          std::vector<std::reference_wrapper<rlock::client>> nodes) -> asio::awaitable<void> {
        rlock::quorum_lock lock(std::move(nodes), "s1");
        const auto warm_end = clock_type::now() + warmup;
        const auto end = warm_end + std::chrono::duration_cast<clock_type::duration>(
                                        std::chrono::duration<double>(o.seconds));
        us.reserve(1'000'000);
        for (std::size_t i = 0; i < 2'000'000; ++i) {
          const auto t0 = clock_type::now();
          if (t0 >= end) break;
          co_await lock.lock();
          co_await lock.unlock();
          if (t0 >= warm_end) us.push_back(micros(clock_type::now() - t0));
        }
      });
  fmt::print("{}\n", s1_json("rlock-quorum", o, summarize(std::move(us)), quorum_params(o)));
}

/// One process of S3 over the quorum lock, as run_s3_worker: acquire (10 s lease), hold 1 ms,
/// release, 1 ms outside.
void run_quorum_s3_worker(const options& o) {
  if (o.out.empty()) usage("s3-worker needs --out");
  std::vector<std::pair<std::int64_t, std::int64_t>> events;
  auto cfg = config_for(o);
  cfg.key_prefix.clear();  // --key is the full key, shared with the other processes
  with_clients(
      o, cfg, o.ports,
      [&](asio::io_context&,
          std::vector<std::reference_wrapper<rlock::client>> nodes) -> asio::awaitable<void> {
        rlock::quorum_lock lock(std::move(nodes), o.key);
        const auto end = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                                 std::chrono::duration<double>(o.seconds));
        for (std::size_t i = 0; i < 1'000'000 && clock_type::now() < end; ++i) {
          co_await lock.lock(10s);
          const auto acquired = nanos_now();
          co_await sleep_for(1ms);
          const auto releasing = nanos_now();
          co_await lock.unlock();
          events.emplace_back(acquired, releasing);
          co_await sleep_for(1ms);
        }
      });
  write_events(o, events);
  fmt::print(R"({{"library": "rlock-quorum", "mode": "s3-worker", "params": {{{}"seconds": {}}}, )"
             R"("metrics": {{"acquisitions": {}}}}})"
             "\n",
             quorum_params(o), o.seconds, events.size());
}

// --- e1: an election's failover --------------------------------------------------------------

/// A leader to kill (e1's second phase): campaigns on `--key`, prints "leading <term>" once it
/// leads, and waits to be killed (at most --seconds).
void run_e1_leader(const options& o) {
  auto cfg = config_for(o);
  cfg.watchdog_timeout = std::chrono::milliseconds(o.hold_ms);  // --hold-ms: the leader lease
  with_client(
      o,
      [&](asio::io_context&, rlock::client& redis) -> asio::awaitable<void> {
        rlock::election e(redis, o.key);
        const auto term = co_await e.campaign("doomed");
        fmt::print("leading {}\n", term);
        std::fflush(stdout);
        co_await sleep_for(std::chrono::duration_cast<clock_type::duration>(
            std::chrono::duration<double>(o.seconds)));
      },
      cfg);
}

/// E1: failover of an election among --concurrency candidates (each its own client and
/// connection, as separate instances would be) with an observer beside them. Phase 1,
/// resignations: each leader holds 1 ms and resigns; the handover is from its resign() call to
/// the next leader's campaign() answer, and the observer's notification is timed from both.
/// Phase 2, kills (--restarts K rounds): a leader in a process of its own, with a leader lease
/// of --hold-ms, is SIGKILLed; the replacement is timed from the kill to the next campaign()
/// answer, which the lease bounds (lease + 2 watchdog periods is the goal).
void run_e1(const options& o) {
  const int candidates = std::max(2, o.concurrency);
  const auto lease = std::chrono::milliseconds(o.hold_ms);
  const std::string name = o.key;
  std::vector<double> handover, observed_after_answer, observed_after_resign, replaced,
      kill_observed_after_answer;
  std::size_t overlaps = 0;
  auto cfg = config_for(o);
  cfg.watchdog_timeout = lease;
  std::vector<std::uint16_t> ports(static_cast<std::size_t>(candidates) + 1, o.port);
  with_clients(
      o, cfg, ports,
      [&](asio::io_context& io,
          std::vector<std::reference_wrapper<rlock::client>>& clients) -> asio::awaitable<void> {
        rlock::election view(clients.back().get(), name);
        auto changes = view.observe();
        // term -> when its leader's campaign answered (ns), and when the previous one resigned.
        std::map<std::int64_t, std::int64_t> answered_at;
        std::map<std::int64_t, std::int64_t> resigned_before;
        std::int64_t last_resign = 0;
        bool stop_observing = false;
        bool killing = false;  // phase 2: the observer's times go to the kills' list
        int observers_running = 1;
        asio::steady_timer observer_done(io, clock_type::time_point::max());
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
              for (;;) {
                auto [ec, c] = co_await changes.async_next(asio::as_tuple(asio::use_awaitable));
                if (ec || stop_observing) break;
                if (c.what != rlock::election_change::event::elected) continue;
                const auto now = nanos_now();
                if (auto a = answered_at.find(c.term); a != answered_at.end()) {
                  (killing ? kill_observed_after_answer : observed_after_answer)
                      .push_back(static_cast<double>(now - a->second) / 1e3);
                } else {
                  answered_at[-c.term] = now;  // told before the answer: kept, sign-flipped
                }
                if (auto r = resigned_before.find(c.term); r != resigned_before.end()) {
                  observed_after_resign.push_back(static_cast<double>(now - r->second) / 1e3);
                }
              }
              if (--observers_running == 0) observer_done.cancel();
            },
            asio::detached);
        // The observer's subscription is confirmed before the first campaign (its snapshot).
        co_await sleep_for(50ms);

        // Phase 1: resignations.
        const auto end = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                                 std::chrono::duration<double>(o.seconds));
        int running = candidates;
        bool leading = false;
        asio::steady_timer all_done(io, clock_type::time_point::max());
        for (int i = 0; i < candidates; ++i) {
          asio::co_spawn(
              io,
              [&, i]() -> asio::awaitable<void> {
                rlock::election e(clients[static_cast<std::size_t>(i)].get(), name);
                const std::string me = "c" + std::to_string(i);
                for (int round = 0; round < 100'000 && clock_type::now() < end; ++round) {
                  const auto term = co_await e.campaign(me);
                  const auto now = nanos_now();
                  if (leading) ++overlaps;
                  leading = true;
                  answered_at[term] = now;
                  if (last_resign != 0) {
                    handover.push_back(static_cast<double>(now - last_resign) / 1e3);
                    resigned_before[term] = last_resign;
                  }
                  // An observer told before this answer: its time is kept under -term.
                  if (auto early = answered_at.find(-term); early != answered_at.end()) {
                    observed_after_answer.push_back(static_cast<double>(early->second - now) / 1e3);
                    answered_at.erase(early);
                  }
                  co_await sleep_for(1ms);
                  leading = false;
                  last_resign = nanos_now();
                  co_await e.resign();
                  co_await sleep_for(1ms);
                }
                if (--running == 0) all_done.cancel();
              },
              asio::detached);
        }
        co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));

        // Phase 2: a leader SIGKILLed, in a process of its own.
        last_resign = 0;
        killing = true;
        for (int k = 0; k < o.restarts; ++k) {
          int out[2];
          if (::pipe(out) != 0) throw std::runtime_error("e1: pipe");
          posix_spawn_file_actions_t actions;
          ::posix_spawn_file_actions_init(&actions);
          ::posix_spawn_file_actions_adddup2(&actions, out[1], 1);
          ::posix_spawn_file_actions_addclose(&actions, out[0]);
          const std::string port = std::to_string(o.port);
          const std::string lease_ms = std::to_string(o.hold_ms);
          std::vector<std::string> args{"/proc/self/exe", "e1-leader",
                                        "--port",         port,
                                        "--key",          name,
                                        "--prefix",       o.prefix,
                                        "--hold-ms",      lease_ms,
                                        "--seconds",      "60",
                                        "--cluster",      o.cluster ? "1" : "0"};
          std::vector<char*> argv;
          for (auto& a : args) argv.push_back(a.data());
          argv.push_back(nullptr);
          pid_t pid = 0;
          if (::posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ) != 0) {
            throw std::runtime_error("e1: spawn");
          }
          ::posix_spawn_file_actions_destroy(&actions);
          ::close(out[1]);
          // Its "leading" line: read on a thread, so this one keeps serving the clients.
          auto line = std::async(std::launch::async, [fd = out[0]] {
            std::string text;
            char c = 0;
            while (::read(fd, &c, 1) == 1 && c != '\n') text.push_back(c);
            ::close(fd);
            return text;
          });
          while (line.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
            co_await sleep_for(2ms);  // the child's process has no event here to await
          }
          if (line.get().rfind("leading ", 0) != 0) throw std::runtime_error("e1: no leader");
          // Every candidate campaigns, then the leader dies; the first answer replaces it.
          std::optional<std::int64_t> winner;
          std::int64_t killed_at = 0;
          std::vector<asio::cancellation_signal> cancel(static_cast<std::size_t>(candidates));
          int waiting = candidates;
          asio::steady_timer round_done(io, clock_type::time_point::max());
          std::vector<rlock::election> es;
          for (int i = 0; i < candidates; ++i) {
            es.emplace_back(clients[static_cast<std::size_t>(i)].get(), name);
          }
          for (int i = 0; i < candidates; ++i) {
            es[static_cast<std::size_t>(i)].async_campaign(
                "c" + std::to_string(i),
                asio::bind_cancellation_slot(
                    cancel[static_cast<std::size_t>(i)].slot(),
                    [&, i](boost::system::error_code ec, std::int64_t term) {
                      if (!ec && !winner) {
                        const auto now = nanos_now();
                        winner = term;
                        answered_at[term] = now;
                        replaced.push_back(static_cast<double>(now - killed_at) / 1e3);
                        if (auto early = answered_at.find(-term); early != answered_at.end()) {
                          kill_observed_after_answer.push_back(
                              static_cast<double>(early->second - now) / 1e3);
                        }
                        for (int j = 0; j < candidates; ++j) {
                          if (j != i)
                            cancel[static_cast<std::size_t>(j)].emit(
                                asio::cancellation_type::terminal);
                        }
                      }
                      if (--waiting == 0) round_done.cancel();
                    }));
          }
          co_await sleep_for(20ms);  // the candidates asleep on the lock's channel
          killed_at = nanos_now();
          ::kill(pid, SIGKILL);
          ::waitpid(pid, nullptr, 0);
          co_await round_done.async_wait(asio::as_tuple(asio::use_awaitable));
          for (auto& e : es) {
            try {
              co_await e.resign();
            } catch (const std::exception&) {
              // Not the winner (or given back on cancellation): nothing to resign.
            }
          }
          co_await sleep_for(10ms);
        }
        stop_observing = true;
        changes.close();
        co_await observer_done.async_wait(asio::as_tuple(asio::use_awaitable));
      });
  const auto h = summarize(std::move(handover));
  const auto oa = summarize(std::move(observed_after_answer));
  const auto orr = summarize(std::move(observed_after_resign));
  const auto r = summarize(std::move(replaced));
  const auto ko = summarize(std::move(kill_observed_after_answer));
  fmt::print(
      R"({{"library": "rlock", "mode": "e1", "params": {{"seconds": {}, "candidates": {}, )"
      R"("leader_lease_ms": {}, "kills": {}, "cluster": {}}}, )"
      R"("metrics": {{"handovers": {}, "handover_p50_us": {:.2f}, "handover_p99_us": {:.2f}, )"
      R"("observer_after_answer_p50_us": {:.2f}, "observer_after_answer_p99_us": {:.2f}, )"
      R"("observer_after_resign_p50_us": {:.2f}, "observer_after_resign_p99_us": {:.2f}, )"
      R"("replacements": {}, "replaced_p50_ms": {:.2f}, "replaced_p99_ms": {:.2f}, )"
      R"("replaced_max_ms": {:.2f}, "kill_observer_after_answer_p50_us": {:.2f}, )"
      R"("kill_observer_after_answer_p99_us": {:.2f}, )"
      R"("overlaps": {}}}}})"
      "\n",
      o.seconds, candidates, o.hold_ms, o.restarts, o.cluster ? "true" : "false", h.count, h.p50,
      h.p99, oa.p50, oa.p99, orr.p50, orr.p99, r.count, r.p50 / 1e3, r.p99 / 1e3, r.max / 1e3,
      ko.p50, ko.p99, overlaps);
}

int main(int argc, char** argv) {
  const auto o = parse(argc, argv);
  try {
    if (o.mode == "print-acquire-script")
      // For redis-benchmark's EVALSHA reference: exactly the script rlock runs.
      fmt::print("{}\n", rlock::detail::loaded_source(rlock::detail::script::acquire));
    else if (!o.ports.empty() && o.mode == "s1")
      run_quorum_s1(o);
    else if (!o.ports.empty() && o.mode == "s3-worker")
      run_quorum_s3_worker(o);
    else if (o.mode == "s3-quorum-floor")
      run_s3_quorum_floor(o);
    else if (!o.ports.empty() && o.mode != "s1-floor")
      usage("--ports is for s1, s3-worker, s1-floor and s3-quorum-floor");
    else if (o.mode == "s1")
      run_s1(o);
    else if (o.mode == "s2")
      run_s2(o);
    else if (o.mode == "s3-worker")
      run_s3_worker(o);
    else if (o.mode == "family-worker")
      run_family_worker(o);
    else if (o.mode == "s3-local")
      run_s3_local(o);
    else if (o.mode == "s1-blocking")
      run_s1_blocking(o);
    else if (o.mode == "s3-worker-blocking")
      run_s3_worker_blocking(o);
    else if (o.mode == "s4")
      run_s4(o);
    else if (o.mode == "s4-rw")
      run_s4_rw(o);
    else if (o.mode == "s5")
      run_s5(o);
    else if (o.mode == "s6")
      run_s6(o);
    else if (o.mode == "s6-floor")
      run_s6_floor(o);
    else if (o.mode == "s2-floor")
      run_s2_floor(o);
    else if (o.mode == "s1-floor")
      run_s1_floor(o);
    else if (o.mode == "s3-floor")
      run_s3_floor(o, true);
    else if (o.mode == "s3-push-floor")
      run_s3_floor(o, false);
    else if (o.mode == "s3-fair-floor")
      run_s3_fair_floor(o);
    else if (o.mode == "s7-floor")
      run_s7_floor(o);
    else if (o.mode == "s8")
      run_s8(o);
    else if (o.mode == "s8-deposed")
      run_s8_deposed(o);
    else if (o.mode == "e1")
      run_e1(o);
    else if (o.mode == "e1-leader")
      run_e1_leader(o);
    else
      usage("unknown mode " + o.mode);
  } catch (const std::exception& e) {
    fmt::print(stderr, "rlock_bench {}: {}\n", o.mode, e.what());
    return 1;
  }
  return 0;
}
