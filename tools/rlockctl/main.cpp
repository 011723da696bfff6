// rlockctl: see and handle rlock (and Redisson) locks from a shell. docs/operations/rlockctl.md.
#include "commands.hpp"

#include <boost/system/system_error.hpp>

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <exception>
#include <rlock/detail/kind_list.hpp>
#include <rlock/version.hpp>
#include <string_view>
#include <system_error>
#include <vector>

namespace {

constexpr const char* examples = R"(Examples:
  rlockctl status orders:42                       who holds it, its TTL, its waiters
  rlockctl --url redis://:secret@10.0.0.5:6379/2 list 'orders:*'
  rlockctl --url rediss://cache:6380 --tls-ca ca.pem status orders:42     over TLS
  rlockctl --sentinel 10.0.0.11:26379 --master-name locks status orders:42  behind Sentinel
  rlockctl status --quorum redis://a:6379 --quorum redis://b:6379 --quorum redis://c:6379 orders:42
                                                   a quorum lock: each node, and whether a majority holds
  rlockctl --cluster 10.0.0.21:7000 --cluster 10.0.0.22:7000 list 'orders:*'  on a Cluster
  rlockctl hold orders:42 --wait 2000 --for 30    take it for 30 s (Ctrl-C releases it early)
  rlockctl unlock orders:42 --force               release it whoever holds it
  rlockctl watch orders:42 orders:43              live view of lock, unlock and expiry events
  rlockctl leader scheduler                       who leads the election, term, since when
  rlockctl leader scheduler --watch               then every change of leader, pushed
  rlockctl bench --seconds 3                      a quick S1/S3 measurement
  rlockctl --json status orders:42                one JSON object per line

Exit codes: 0 ok; 1 hold: not acquired within --wait; 2 usage, connection or Redis error;
3 hold: lost (or its lease ran out) while held.)";

using namespace std::string_view_literals;

std::chrono::milliseconds ms(std::int64_t v) { return std::chrono::milliseconds(v); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rlockctl: inspect and handle rlock and Redisson locks in Redis"};
  app.footer(examples);
  app.set_version_flag("--version", RLOCK_VERSION_STRING);
  app.require_subcommand(1);
  app.fallthrough();

  std::string url = "redis://127.0.0.1:6379";
  std::string prefix;
  bool json = false;
  app.add_option("--url", url, "redis[s]://[[user]:password@]host[:port][/db]")
      ->envname("RLOCK_URL")
      ->capture_default_str();
  app.add_option("--prefix", prefix, "key prefix the services use (config::key_prefix)");
  app.add_flag("--json", json, "one JSON object per line (JSON Lines)");
  // TLS (with a rediss:// URL): the CA that signed the server, and a client certificate where
  // the server requires one. Without --tls-ca, the system's trust store.
  rlock::config::tls_settings tls;
  app.add_option("--tls-ca", tls.ca_file, "CA file (PEM) for rediss:// servers")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-cert", tls.cert_file, "client certificate (PEM), for mutual TLS")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", tls.key_file, "client key (PEM), for mutual TLS")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-server-name", tls.server_name, "name to verify (default: the host)");
  // Behind Sentinel: the sentinels and the master's name replace the URL's host and port (its
  // credentials and database still apply to the data nodes).
  std::vector<std::string> sentinels;
  std::string master_name;
  app.add_option("--sentinel", sentinels, "HOST:PORT of a sentinel (repeat for each)");
  app.add_option("--master-name", master_name, "the master's name at the sentinels");
  // Redis Cluster: seed nodes replace the URL's host and port (its scheme, credentials and TLS
  // options apply to every node).
  std::vector<std::string> cluster_nodes;
  app.add_option("--cluster", cluster_nodes, "HOST:PORT of a cluster node (repeat for seeds)");

  std::vector<std::string> status_names;
  auto* status = app.add_subcommand("status", "free or held, holders, TTL, waiters, kind");
  status->add_option("NAME", status_names, "lock name(s)")->required();
  std::vector<std::string> quorum_urls;
  status
      ->add_option("--quorum", quorum_urls,
                   "a quorum lock's node, redis[s]://...: repeat for each (each node's view, "
                   "and whether a majority holds it; --url is then unused)")
      ->allow_extra_args(false);  // one URL per --quorum: the names follow

  rlockctl::list_options list_opts;
  auto* list = app.add_subcommand("list", "the locks whose names match PATTERN (SCAN)");
  list->add_option("PATTERN", list_opts.pattern, "glob pattern over lock names")
      ->capture_default_str();
  list->add_option("--page", list_opts.page, "keys per SCAN call")
      ->check(CLI::Range(1U, 100'000U))
      ->capture_default_str();
  list->add_option("--limit", list_opts.limit, "stop after this many locks");

  rlockctl::hold_options hold_opts;
  std::int64_t lease_ms = 0;
  std::int64_t wait_ms = 0;
  double hold_seconds = 0;
  auto* hold = app.add_subcommand("hold", "acquire, hold, release");
  hold->add_option("NAME", hold_opts.name, "lock name")->required();
  auto* lease_opt = hold->add_option("--lease", lease_ms, "lease in ms (no watchdog)")
                        ->check(CLI::Range(std::int64_t{1}, std::int64_t{0x7fffffff}));
  bool watchdog = false;
  auto* watchdog_opt =
      hold->add_flag("--watchdog", watchdog, "renew the lease until released (default)");
  lease_opt->excludes(watchdog_opt);
  auto* wait_opt = hold->add_option("--wait", wait_ms, "give up after this many ms (exit 1)")
                       ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
  auto* fenced_opt =
      hold->add_flag("--fenced", hold_opts.fenced,
                     "take it as a fenced lock (Redisson's RFencedLock) and print its token");
#define RLOCKCTL_WORD(type, word) word,
  const std::vector<std::string> owned_kinds{RLOCK_OWNED_LOCK_KINDS(RLOCKCTL_WORD)};
#undef RLOCKCTL_WORD
  hold->add_option("--kind", hold_opts.kind,
                   "the lock's kind: reentrant (RLock, default), fair (RFairLock: waits its turn "
                   "in the queue), non-reentrant, non-reentrant-fair, spin (RSpinLock: polls, no "
                   "pub/sub), read or write (a half of RReadWriteLock)")
      ->check(CLI::IsMember(owned_kinds))
      ->excludes(fenced_opt);
  auto* for_opt = hold->add_option("--for", hold_seconds, "seconds to hold (default: Ctrl-C)")
                      ->check(CLI::Range(0.0, 1e9));

  std::string unlock_name;
  bool force = false;
  auto* unlock = app.add_subcommand("unlock", "force-unlock a lock whoever holds it");
  unlock->add_option("NAME", unlock_name, "lock name")->required();
  unlock->add_flag("--force", force, "required: the lock is released whoever holds it");

  std::vector<std::string> watch_names;
  auto* watch = app.add_subcommand("watch", "print lock, unlock and expiry events live");
  watch->add_option("NAME", watch_names, "lock name(s)")->required();

  std::vector<std::string> leader_names;
  bool leader_watch = false;
  auto* leader =
      app.add_subcommand("leader", "who leads an election, its term, since when, who waits");
  leader->add_option("NAME", leader_names, "election name(s)")->required();
  leader->add_flag("--watch", leader_watch, "then print every change of leader until Ctrl-C");

  rlockctl::bench_options bench_opts;
  double bench_seconds = 5;
  auto* bench = app.add_subcommand("bench", "quick S1 (lock+unlock) and S3 (handoff) runs");
  bench->add_option("--seconds", bench_seconds, "per scenario")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  bench->add_option("--contenders", bench_opts.contenders, "clients contending in S3")
      ->check(CLI::Range(2U, 64U))
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help answers in text; a usage error honours --json like every other error. The flag
    // may sit after the mistake CLI11 stopped at, so argv is looked through for it.
    const bool wants_json =
        json || std::any_of(argv + 1, argv + argc, [](const char* a) { return a == "--json"sv; });
    if (e.get_exit_code() != 0 && wants_json) {
      rlockctl::output(true).error("usage", e.what());
      return rlockctl::exit_error;
    }
    const int rc = app.exit(e);
    return rc == 0 ? rlockctl::exit_ok : rlockctl::exit_error;
  }

  rlockctl::context ctx{rlock::config{}, rlockctl::output(json)};
  try {
    ctx.cfg = rlock::config::from_url(url);
  } catch (const boost::system::system_error& e) {
    ctx.out.error("invalid-url", e.what());
    return rlockctl::exit_error;
  }
  if (ctx.cfg.tls.enabled) {
    tls.enabled = true;
    ctx.cfg.tls = tls;
  } else if (!tls.ca_file.empty() || !tls.cert_file.empty()) {
    ctx.out.error("usage", "--tls-* options need a rediss:// URL");
    return rlockctl::exit_error;
  }
  if (sentinels.empty() != master_name.empty()) {
    ctx.out.error("usage", "--sentinel and --master-name go together");
    return rlockctl::exit_error;
  }
  for (const auto& node : sentinels) {
    const auto colon = node.rfind(':');
    unsigned port = 0;
    const char* digits = colon == std::string::npos ? nullptr : node.c_str() + colon + 1;
    const auto parsed = digits == nullptr
                            ? std::from_chars_result{nullptr, std::errc::invalid_argument}
                            : std::from_chars(digits, node.c_str() + node.size(), port);
    if (colon == 0 || digits == nullptr || parsed.ec != std::errc{} ||
        parsed.ptr != node.c_str() + node.size() || port == 0 || port > 65535) {
      ctx.out.error("usage", "--sentinel takes HOST:PORT, got '" + node + "'");
      return rlockctl::exit_error;
    }
    ctx.cfg.sentinel.nodes.push_back({node.substr(0, colon), static_cast<std::uint16_t>(port)});
  }
  ctx.cfg.sentinel.master_name = master_name;
  if (!cluster_nodes.empty() && !sentinels.empty()) {
    ctx.out.error("usage", "--cluster and --sentinel do not go together");
    return rlockctl::exit_error;
  }
  for (const auto& node : cluster_nodes) {
    if (node.find(':') == std::string::npos || node.find('/') != std::string::npos) {
      ctx.out.error("usage", "--cluster takes HOST:PORT, got '" + node + "'");
      return rlockctl::exit_error;
    }
    // The URL's scheme and credentials, the node's address: parsed (and checked) as a URL.
    std::string seed = ctx.cfg.tls.enabled ? "rediss://" : "redis://";
    if (!ctx.cfg.password.empty()) seed += ctx.cfg.username + ":" + ctx.cfg.password + "@";
    ctx.cfg.cluster.nodes.push_back(seed + node);
  }
  ctx.cfg.key_prefix = prefix;
  ctx.cfg.client_name = "rlockctl";

  try {
    if (*status && !quorum_urls.empty()) {
      return rlockctl::run_quorum_status(ctx, quorum_urls, status_names);
    }
    if (*status) return rlockctl::run_status(ctx, status_names);
    if (*list) return rlockctl::run_list(ctx, list_opts);
    if (*unlock) return rlockctl::run_unlock(ctx, unlock_name, force);
    if (*watch) return rlockctl::run_watch(ctx, watch_names);
    if (*leader) return rlockctl::run_leader(ctx, leader_names, leader_watch);
    if (*hold) {
      if (*lease_opt) hold_opts.lease = ms(lease_ms);
      if (*wait_opt) hold_opts.wait = ms(wait_ms);
      if (*for_opt) hold_opts.hold_for = ms(static_cast<std::int64_t>(hold_seconds * 1000));
      return rlockctl::run_hold(ctx, hold_opts);
    }
    if (*bench) {
      bench_opts.duration = ms(static_cast<std::int64_t>(bench_seconds * 1000));
      return rlockctl::run_bench(ctx, bench_opts);
    }
  } catch (const boost::system::system_error& e) {
    ctx.out.error(e.code().message(), e.what());
    return rlockctl::exit_error;
  } catch (const std::exception& e) {
    ctx.out.error("error", e.what());
    return rlockctl::exit_error;
  }
  return rlockctl::exit_error;
}
