#pragma once

#include "support/redis_server.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rlock::test {

/// A Redis Cluster on loopback for tests: `masters` masters with `replicas` replicas each, from
/// Debian's `redis-server --cluster-enabled yes` and `redis-cli --cluster create …
/// --cluster-replicas N --cluster-yes`; the constructor returns once every node says
/// `cluster_state:ok` and sees every slot served, and every master has its replicas attached.
/// The destructor stops every node (redis_server's).
///
/// Every wait is bounded and throws std::runtime_error with what was last seen.
class cluster_topology {
 public:
  explicit cluster_topology(std::size_t masters = 3, std::size_t replicas = 1,
                            redis_server::options node_options = cluster_options());

  /// The options of every node: cluster on, node timeout 2 s.
  static redis_server::options cluster_options() {
    redis_server::options o;
    o.cluster = true;
    return o;
  }

  /// `redis://127.0.0.1:<port>` of every node (config::cluster::nodes).
  std::vector<std::string> seeds() const;
  std::size_t size() const noexcept { return nodes_.size(); }
  redis_server& node(std::size_t i) { return *nodes_.at(i); }
  /// The node on `port`; throws if none.
  redis_server& node_on(std::uint16_t port);

  /// The port of the master serving `slot`, as the node on `ask` (else any live node) says.
  std::uint16_t owner_of(std::uint16_t slot, std::uint16_t ask = 0) const;
  /// The ports of the masters that serve slots, sorted.
  std::vector<std::uint16_t> master_ports() const;
  /// The port of a replica of the master on `port` (its first, as `INFO replication` lists
  /// them); throws if it has none.
  std::uint16_t replica_of(std::uint16_t port) const;
  /// The node's cluster id.
  std::string node_id(std::uint16_t port) const;

  /// Waits until every live node says `cluster_state:ok`, they all see the same slot map, and
  /// each master has `replicas` replicas online.
  void wait_ok(std::chrono::seconds limit = std::chrono::seconds(60));

  /// After `old` (a master) died: waits until every live node says `cluster_state:ok` and
  /// names another master for `slot` (its replica, promoted); returns that master's port.
  std::uint16_t wait_failover(std::uint16_t slot, std::uint16_t old,
                              std::chrono::seconds limit = std::chrono::seconds(60));

  /// `CONFIG SET name value` on the node on `port`; throws with Redis's text if refused.
  static void config_set(std::uint16_t port, const std::string& name, const std::string& value);

  /// Makes the node on `port` announce `client_port` for clients and replicas and `bus_port`
  /// for the other nodes' bus links (`CONFIG SET cluster-announce-port / -bus-port`; 0: its own
  /// ports), e.g. a fault proxy's, and waits until every other live node's `CLUSTER NODES`
  /// shows both. The other nodes then open their bus links to it on `bus_port`; its own links
  /// to them, and connections opened before, are not moved.
  void announce(std::uint16_t port, std::uint16_t client_port, std::uint16_t bus_port,
                std::chrono::seconds limit = std::chrono::seconds(30));

  /// Resharding of one slot, in the three steps of the cluster spec's "live resharding":
  /// begin_migration sets `to` IMPORTING and `from` MIGRATING; move_keys MIGRATEs every key of
  /// the slot from `from` to `to`; end_migration assigns the slot to `to` on both and on every
  /// other master (`CLUSTER SETSLOT … NODE`).
  void begin_migration(std::uint16_t slot, std::uint16_t from, std::uint16_t to);
  std::size_t move_keys(std::uint16_t slot, std::uint16_t from, std::uint16_t to);
  void end_migration(std::uint16_t slot, std::uint16_t from, std::uint16_t to);

 private:
  /// The first live node that does not say `cluster_state:ok`, and what it says; empty if none.
  std::string not_ok() const;

  std::vector<std::unique_ptr<redis_server>> nodes_;
  std::size_t replicas_ = 0;
};

}  // namespace rlock::test
