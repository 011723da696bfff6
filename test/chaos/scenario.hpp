#pragma once

// What every chaos scenario shares: a private redis-server, the fault proxy in front of it, a
// recorder, the workload in the background, and the checks at the end.
#include "chaos/checker.hpp"
#include "chaos/fault_proxy.hpp"
#include "chaos/history.hpp"
#include "chaos/workload.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"

#include <chrono>
#include <functional>
#include <future>
#include <rlock/config.hpp>
#include <string>
#include <vector>

namespace rlock::chaos {

using rlock::test::direction;
using rlock::test::fault_proxy;

/// Timeouts short enough that faults play out in seconds: a 1 s watchdog lease, 300 ms
/// command timeout, health check every 200 ms, reconnect backoff 20 ms → 200 ms.
rlock::config chaos_config(std::uint16_t port, const std::string& prefix, const std::string& name);

/// Polls `pred` every millisecond for at most `timeout` (a fault aimed at a moment has no event
/// to wait for: the moment is a state of other threads). Returns whether it held.
bool wait_until(const std::function<bool()>& pred,
                std::chrono::milliseconds timeout = std::chrono::seconds(5));

/// Whether a scenario's clients talk to the server over TLS (through the same proxy: it
/// forwards bytes, whatever they are).
enum class transport_kind { tcp, tls };

/// Waits for every workload in `running`, takes the history from `rec` with what each
/// workload's clients and the server on `port` left under `prefix`, checks it, prints the
/// report and returns the verdict (the history in `checked`, if given).
verdict finish_workloads(std::vector<std::future<history>>& running, recorder& rec,
                         std::uint16_t port, const std::string& prefix,
                         const checker_options& copts = {}, history* checked = nullptr);
/// The same, with the leftovers of every node in `ports` (a cluster's masters).
verdict finish_workloads(std::vector<std::future<history>>& running, recorder& rec,
                         const std::vector<std::uint16_t>& ports, const std::string& prefix,
                         const checker_options& copts = {}, history* checked = nullptr);

class scenario {
 public:
  explicit scenario(rlock::test::redis_server::options server_opts = {},
                    transport_kind kind = transport_kind::tcp);

  const transport_kind kind;
  rlock::test::redis_server server;
  fault_proxy proxy;
  const std::string prefix;
  recorder rec;

  /// A client's config aimed at the proxy (`through_proxy`) or the server directly, over this
  /// scenario's transport.
  rlock::config client_config(const std::string& name, bool through_proxy = true) const;
  /// Workload options aimed at the proxy (`through_proxy`) or the server directly.
  workload_options workload(const std::string& process, bool through_proxy = true) const;
  /// Starts `opts` in the background.
  void start(workload_options opts);
  /// Waits for every workload started, adds the server's leftovers, checks, prints the report
  /// and returns the verdict.
  verdict finish(checker_options copts = {});
  /// The history finish() checked.
  const history& last() const noexcept { return last_; }

  // Faults applied directly to the server.
  /// CLIENT KILL of every client but the caller's (normal and pub/sub): returns how many were
  /// killed.
  std::int64_t kill_clients();
  /// CLIENT PAUSE for `d` (every client's commands wait).
  void pause_clients(std::chrono::milliseconds d);
  /// SIGSTOP for `d`, then SIGCONT.
  void stop_server(std::chrono::milliseconds d);
  /// SIGKILL and restart on the same port; records in the history whether a marker written just
  /// before survived. Returns whether it did.
  bool restart_server();
  /// When each restarted server answered again (for recovery times).
  std::vector<nanos> back_at;

 private:
  std::vector<std::future<history>> running_;
  int markers_ = 0;
  history last_;
};

}  // namespace rlock::chaos
