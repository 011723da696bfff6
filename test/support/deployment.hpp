#pragma once

// Where an interop case runs: this binary's private server, or a 3-master cluster started once
// per binary, with the node that owns a key and the publish command Redisson uses there
// (`spublish` on a Cluster: sharded messages).
#include "session/cluster/key_slot.hpp"
#include "support/cluster_topology.hpp"
#include "support/lock_env.hpp"

#include <cstdint>
#include <functional>
#include <rlock/config.hpp>
#include <string>
#include <string_view>

namespace rlock::test {

struct deployment {
  rlock::config cfg;
  std::function<std::uint16_t(std::string_view key)> node_of;
  std::string publish;
};

inline deployment one_server() {
  const auto cfg = make_config();
  return {cfg, [port = cfg.port](std::string_view) { return port; }, "publish"};
}

inline cluster_topology& shared_cluster() {
  static cluster_topology topology(3, 0);
  return topology;
}

inline deployment a_cluster() {
  rlock::config cfg;
  cfg.cluster.nodes = shared_cluster().seeds();
  cfg.key_prefix = unique_prefix();
  return {
      cfg,
      [](std::string_view key) { return shared_cluster().owner_of(rlock::detail::key_slot(key)); },
      "spublish"};
}

}  // namespace rlock::test
