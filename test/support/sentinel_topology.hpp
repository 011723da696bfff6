#pragma once

#include "rlock/config.hpp"
#include "support/redis_server.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rlock::test {

/// Redis Sentinel on loopback, from Debian's redis-server: two data nodes (a master and its
/// replica) and three sentinels monitoring the master with quorum 2 (down-after 1000 ms).
/// Every wait is bounded and throws std::runtime_error, with what was last seen, when its bound
/// passes.
class sentinel_topology {
 public:
  explicit sentinel_topology(std::string master_name = "rlock-master");

  const std::string& master_name() const noexcept { return name_; }
  /// The sentinels' addresses, for config::sentinel::nodes.
  std::vector<rlock::config::endpoint> sentinels() const;
  /// The sentinel processes (to kill one in a test).
  redis_server& sentinel(std::size_t i) { return *sentinels_.at(i); }

  /// The data node on `port`.
  redis_server& node(std::uint16_t port);
  /// The other data node.
  redis_server& other(std::uint16_t port);

  /// The master's port as sentinel `i` names it (0 if it names none).
  std::uint16_t master_port(std::size_t i = 0) const;

  /// Waits until every sentinel names `master`, knows the two other sentinels and sees the
  /// other data node as a replica in sync, with `master`'s ROLE "master": a failover may start.
  void wait_ready(std::uint16_t master, std::chrono::seconds limit = std::chrono::seconds(60));
  /// wait_ready() for whichever node the sentinels name (they may fail over again on their own
  /// after a node comes back); returns its port.
  std::uint16_t wait_settled(std::chrono::seconds limit = std::chrono::seconds(60));
  /// Waits until every sentinel names a master other than `old`; returns its port. The default
  /// limit outlasts a TILT period (30 s: a sentinel whose timer ran late, as on a loaded CI
  /// machine, acts on nothing for that long) plus a failover.
  std::uint16_t wait_switched(std::uint16_t old,
                              std::chrono::seconds limit = std::chrono::seconds(60));
  /// Waits until the node on `port` says it is a replica (ROLE), or is down.
  void wait_demoted(std::uint16_t port, std::chrono::seconds limit = std::chrono::seconds(30));

  /// `SENTINEL FAILOVER` on sentinel 0 (the master stays up and is demoted afterwards).
  void failover();

 private:
  std::string name_;
  std::unique_ptr<redis_server> a_;
  std::unique_ptr<redis_server> b_;
  std::vector<std::unique_ptr<redis_server>> sentinels_;
};

}  // namespace rlock::test
