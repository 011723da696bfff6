#include "chaos/scenario.hpp"

#include "support/tls_files.hpp"

#include <csignal>
#include <cstdio>
#include <thread>

namespace rlock::chaos {

using namespace std::chrono_literals;

rlock::config chaos_config(std::uint16_t port, const std::string& prefix, const std::string& name) {
  rlock::config cfg;
  cfg.port = port;
  cfg.key_prefix = prefix;
  cfg.client_name = name;
  cfg.watchdog_timeout = 1000ms;
  cfg.command_timeout = 300ms;
  cfg.connect_timeout = 500ms;
  cfg.health_check_interval = 200ms;
  cfg.reconnect.backoff_initial = 20ms;
  cfg.reconnect.backoff_cap = 200ms;
  return cfg;
}

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

namespace {

rlock::test::redis_server::options with_transport(rlock::test::redis_server::options opts,
                                                  transport_kind kind) {
  if (kind == transport_kind::tls) opts.with_tls(rlock::test::tls_files::shared());
  return opts;
}

}  // namespace

scenario::scenario(rlock::test::redis_server::options server_opts, transport_kind k)
    : kind(k),
      server(with_transport(server_opts, k)),
      proxy(k == transport_kind::tls ? server.tls_port() : server.port()),
      prefix(rlock::test::unique_prefix()) {}

rlock::config scenario::client_config(const std::string& name, bool through_proxy) const {
  const bool tls = kind == transport_kind::tls;
  const std::uint16_t direct = tls ? server.tls_port() : server.port();
  auto cfg = chaos_config(through_proxy ? proxy.port() : direct, prefix, name);
  if (tls) {
    cfg.tls.enabled = true;
    cfg.tls.ca_file = rlock::test::tls_files::shared().path("ca.crt");
  }
  return cfg;
}

workload_options scenario::workload(const std::string& process, bool through_proxy) const {
  workload_options o;
  o.cfg = client_config("chaos-" + process, through_proxy);
  o.process = process;
  o.names = {"alpha", "beta"};
  o.coroutines = 4;
  o.threads = 1;
  o.duration = 3s;
  o.seed = 7;
  return o;
}

void scenario::start(workload_options opts) {
  running_.push_back(
      std::async(std::launch::async, [this, opts] { return run_workload(opts, rec); }));
}

verdict finish_workloads(std::vector<std::future<history>>& running, recorder& rec,
                         std::uint16_t port, const std::string& prefix,
                         const checker_options& copts, history* checked) {
  return finish_workloads(running, rec, std::vector<std::uint16_t>{port}, prefix, copts, checked);
}

verdict finish_workloads(std::vector<std::future<history>>& running, recorder& rec,
                         const std::vector<std::uint16_t>& ports, const std::string& prefix,
                         const checker_options& copts, history* checked) {
  // The workloads share the recorder; each reports what its own clients left behind.
  std::vector<std::string> activity;
  for (auto& f : running) {
    const auto part = f.get();
    activity.insert(activity.end(), part.left.client_activity.begin(),
                    part.left.client_activity.end());
  }
  running.clear();
  auto h = rec.finish();
  h.left.client_activity = std::move(activity);
  for (const auto port : ports) record_server_leftovers(port, prefix, h);
  const auto v = check(h, copts);
  std::printf("%s", v.report().c_str());
  if (checked != nullptr) *checked = std::move(h);
  return v;
}

verdict scenario::finish(checker_options copts) {
  return finish_workloads(running_, rec, server.port(), prefix, copts, &last_);
}

std::int64_t scenario::kill_clients() {
  // A connection with subscriptions is of type pubsub, not normal: kill both.
  rlock::test::raw_client raw(server.port());
  return raw.command_int({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}) +
         raw.command_int({"CLIENT", "KILL", "TYPE", "pubsub", "SKIPME", "yes"});
}

void scenario::pause_clients(std::chrono::milliseconds d) {
  rlock::test::raw_client raw(server.port());
  raw.command({"CLIENT", "PAUSE", std::to_string(d.count())});
}

void scenario::stop_server(std::chrono::milliseconds d) {
  ::kill(server.pid(), SIGSTOP);
  std::this_thread::sleep_for(d);
  ::kill(server.pid(), SIGCONT);
}

bool scenario::restart_server() {
  const std::string marker = prefix + "marker";
  const std::string value = std::to_string(++markers_);
  {
    rlock::test::raw_client raw(server.port());
    raw.command({"SET", marker, value});
  }
  const nanos killed_at = now_ns();
  server.kill_hard();
  server.restart();
  back_at.push_back(now_ns());
  // The clients' fences (CLIENT KILL ID of their previous connection) run right after the
  // restart, when those ids name new connections, ours perhaps (docs/guide/faults.md): ask again.
  auto ask = [&](std::initializer_list<std::string_view> command) {
    for (int attempt = 1;; ++attempt) {
      try {
        rlock::test::raw_client raw(server.port());
        return raw.command(command);  // GET and DEL may both run twice
      } catch (const std::exception&) {
        if (attempt == 3) throw;
      }
    }
  };
  const bool survived = ask({"GET", marker}).str == value;
  rec.restarted(survived, killed_at);
  ask({"DEL", marker});
  return survived;
}

}  // namespace rlock::chaos
