#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace rlock::test {

/// A private redis-server on a free loopback port, for integration tests.
///
/// The constructor picks a free port on 127.0.0.1, spawns `redis-server` (from
/// $RLOCK_REDIS_SERVER, else PATH, else /usr/bin/redis-server) with persistence off and its
/// working directory in a fresh temporary directory, and returns once the server answers PING
/// (at most 10 s; it retries up to 5 times with a new port if the port was taken in between).
/// On failure it throws std::runtime_error carrying the end of the server's log.
///
/// The destructor sends SIGTERM, waits up to 5 s, then SIGKILLs, and removes the directory.
class redis_server {
 public:
  struct options {
    /// Append-only file with `appendfsync always`: every write is on disk before it is
    /// answered, so a SIGKILL loses nothing.
    bool aof = false;
    /// TLS beside the plaintext port (which the start-up probe and raw clients keep using): a
    /// second free port, `--tls-port`, with these PEM files. Empty cert: no TLS.
    std::string tls_cert;
    std::string tls_key;
    std::string tls_ca;
    /// `--tls-auth-clients`: "yes" (a client certificate is required), "no", "optional".
    std::string tls_auth_clients = "no";

    /// `--replicaof 127.0.0.1 <port>`: a replica of the server on that port.
    std::uint16_t replica_of = 0;
    /// A sentinel (`redis-server <conf> --sentinel`) instead of a data node, monitoring the
    /// master on this port as `master_name` with `quorum`, down-after 1000 ms and
    /// failover-timeout 3000 ms.
    std::uint16_t sentinel_of = 0;
    std::string master_name = "rlock-master";
    int quorum = 2;

    /// A Redis Cluster node (`--cluster-enabled yes`) with its bus on a second free port
    /// (`--cluster-port`) and this node timeout; not part of a cluster until one is created
    /// (cluster_topology.hpp).
    bool cluster = false;
    int cluster_node_timeout_ms = 2000;
    /// With TLS and cluster: `--tls-cluster yes --tls-replication yes`, which is what makes
    /// Redis 7.0 announce the TLS port to clients (CLUSTER SHARDS' `tls-port`).
    bool tls_cluster = false;

    /// TLS beside the plaintext port with `files`' server certificate (tls_files.hpp).
    template <typename Files>
    options& with_tls(const Files& files, const std::string& server = "server",
                      const std::string& auth_clients = "no") {
      tls_cert = files.path(server + ".crt");
      tls_key = files.path(server + ".key");
      tls_ca = files.path("ca.crt");
      tls_auth_clients = auth_clients;
      return *this;
    }

    /// Persistence on (aof), everything else default.
    static options with_aof() {
      options o;
      o.aof = true;
      return o;
    }
  };

  redis_server();
  explicit redis_server(options opts);
  ~redis_server();

  redis_server(const redis_server&) = delete;
  redis_server& operator=(const redis_server&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  /// The TLS port (options::tls_cert set), else 0.
  std::uint16_t tls_port() const noexcept { return tls_port_; }
  /// The cluster bus port (options::cluster), else 0.
  std::uint16_t bus_port() const noexcept { return bus_port_; }
  std::string host() const { return "127.0.0.1"; }
  /// The server's pid, e.g. to SIGSTOP/SIGCONT it in a test.
  pid_t pid() const noexcept { return pid_; }
  /// The file the server's stdout and stderr go to.
  std::string log_path() const;

  /// SIGKILLs the server and reaps it: no shutdown, no final save.
  void kill_hard() noexcept;
  /// Makes the next restart() start the server as a replica of `port` (0: as a master).
  void replicate_on_restart(std::uint16_t port) noexcept { opts_.replica_of = port; }
  /// Starts the server again on the same port and directory (so an AOF is replayed); returns
  /// once it answers PING. Throws like the constructor.
  void restart();

 private:
  /// One attempt on `port`: true once the server answers, false if the port turned out to be
  /// taken (the child has been reaped then); throws on any other failure.
  bool try_start(std::uint16_t port);
  void stop() noexcept;

  options opts_;
  std::string dir_;
  std::uint16_t port_ = 0;
  std::uint16_t tls_port_ = 0;
  std::uint16_t bus_port_ = 0;
  pid_t pid_ = -1;
  pid_t owner_ = -1;  // the process that spawned pid_
};

/// Where program `name` is: $`env_var` if set, else the first in PATH, else /usr/bin/<name>.
std::string find_program(std::string_view name, const char* env_var);

/// The one server of this test binary, started on first use and stopped at process exit.
redis_server& shared_server();

/// "<test-suite>.<test-name>:<8 random hex digits>:" for the running gtest test (or
/// "no-test.no-test:…:" outside a test): a key prefix no other test or run shares.
std::string unique_prefix();

}  // namespace rlock::test
