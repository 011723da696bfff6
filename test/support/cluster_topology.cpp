#include "support/cluster_topology.hpp"

#include "support/child_process.hpp"
#include "support/raw_client.hpp"
#include "support/settle.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <thread>

namespace rlock::test {

namespace resp3 = rlock::detail::resp3;
using namespace std::chrono_literals;

namespace {

/// slot range start → master port, from `CLUSTER SLOTS` (independent of the client's own
/// `CLUSTER SHARDS` decoding).
std::map<std::int64_t, std::pair<std::int64_t, std::uint16_t>> slots_of(std::uint16_t port) {
  raw_client raw(port);
  const auto reply = raw.command({"CLUSTER", "SLOTS"});
  if (reply.is_error()) throw std::runtime_error("CLUSTER SLOTS: " + reply.str);
  std::map<std::int64_t, std::pair<std::int64_t, std::uint16_t>> out;
  for (const auto& range : reply.elements) {
    if (range.elements.size() < 3 || range.elements[2].elements.size() < 2) continue;
    out[range.elements[0].integer] = {
        range.elements[1].integer,
        static_cast<std::uint16_t>(range.elements[2].elements[1].integer)};
  }
  return out;
}

std::string info_field(const std::string& info, std::string_view name) {
  const auto at = info.find(std::string(name) + ":");
  if (at == std::string::npos) return {};
  const auto from = at + name.size() + 1;
  return info.substr(from, info.find_first_of("\r\n", from) - from);
}

}  // namespace

cluster_topology::cluster_topology(std::size_t masters, std::size_t replicas,
                                   redis_server::options node_options)
    : replicas_(replicas) {
  const std::size_t total = masters * (1 + replicas);
  for (std::size_t i = 0; i < total; ++i) {
    nodes_.push_back(std::make_unique<redis_server>(node_options));
  }
  std::vector<std::string> argv{find_program("redis-cli", "RLOCK_REDIS_CLI"), "--cluster",
                                "create"};
  for (const auto& n : nodes_) argv.push_back("127.0.0.1:" + std::to_string(n->port()));
  argv.insert(argv.end(), {"--cluster-replicas", std::to_string(replicas), "--cluster-yes"});
  const auto done = run_process(argv, 60s);
  if (!done.code || *done.code != 0) {
    throw std::runtime_error("cluster_topology: redis-cli --cluster create failed: " + done.out +
                             done.err);
  }
  wait_ok(60s);
}

std::vector<std::string> cluster_topology::seeds() const {
  std::vector<std::string> out;
  for (const auto& n : nodes_) out.push_back("redis://127.0.0.1:" + std::to_string(n->port()));
  return out;
}

redis_server& cluster_topology::node_on(std::uint16_t port) {
  for (auto& n : nodes_) {
    if (n->port() == port) return *n;
  }
  throw std::runtime_error("cluster_topology: no node on port " + std::to_string(port));
}

std::uint16_t cluster_topology::owner_of(std::uint16_t slot, std::uint16_t ask) const {
  if (ask == 0) {
    for (const auto& n : nodes_) {
      if (n->pid() > 0) {
        ask = n->port();
        break;
      }
    }
  }
  for (const auto& [from, range] : slots_of(ask)) {
    if (slot >= from && slot <= range.first) return range.second;
  }
  return 0;
}

std::vector<std::uint16_t> cluster_topology::master_ports() const {
  std::set<std::uint16_t> ports;
  for (const auto& n : nodes_) {
    if (n->pid() <= 0) continue;
    for (const auto& [from, range] : slots_of(n->port())) ports.insert(range.second);
    break;
  }
  return {ports.begin(), ports.end()};
}

std::uint16_t cluster_topology::replica_of(std::uint16_t port) const {
  raw_client raw(port);
  const auto info = raw.command({"INFO", "replication"}).str;
  const auto line = info_field(info, "slave0");  // ip=…,port=N,state=…
  const auto at = line.find("port=");
  if (at == std::string::npos) {
    throw std::runtime_error("cluster_topology: node " + std::to_string(port) + " has no replica");
  }
  return static_cast<std::uint16_t>(std::stoi(line.substr(at + 5)));
}

std::string cluster_topology::node_id(std::uint16_t port) const {
  raw_client raw(port);
  return raw.command({"CLUSTER", "MYID"}).str;
}

std::string cluster_topology::not_ok() const {
  for (const auto& n : nodes_) {
    if (n->pid() <= 0) continue;
    raw_client raw(n->port());
    const auto info = raw.command({"CLUSTER", "INFO"}).str;
    if (info_field(info, "cluster_state") != "ok") {
      return "node " + std::to_string(n->port()) +
             " says cluster_state:" + info_field(info, "cluster_state");
    }
  }
  return {};
}

void cluster_topology::wait_ok(std::chrono::seconds limit) {
  settle("cluster_topology", "the cluster did not settle", limit, [&]() -> std::string {
    if (auto why = not_ok(); !why.empty()) return why;
    std::optional<std::map<std::int64_t, std::pair<std::int64_t, std::uint16_t>>> first;
    for (const auto& n : nodes_) {
      if (n->pid() <= 0) continue;
      auto slots = slots_of(n->port());
      if (!first) {
        first = std::move(slots);
      } else if (slots != *first) {
        return "node " + std::to_string(n->port()) + " sees another slot map";
      }
    }
    if (!first) return "no node is running";
    std::set<std::uint16_t> masters;
    for (const auto& [from, range] : *first) masters.insert(range.second);
    for (const auto port : masters) {
      raw_client raw(port);
      const auto info = raw.command({"INFO", "replication"}).str;
      // Online, not only connected: a replica still syncing cannot take over.
      std::size_t online = 0;
      for (std::size_t at = info.find("state=online"); at != std::string::npos;
           at = info.find("state=online", at + 1)) {
        ++online;
      }
      if (online != replicas_) {
        return "master " + std::to_string(port) + " has " + std::to_string(online) +
               " replicas online";
      }
    }
    return {};
  });
}

std::uint16_t cluster_topology::wait_failover(std::uint16_t slot, std::uint16_t old,
                                              std::chrono::seconds limit) {
  std::uint16_t now_at = 0;
  settle("cluster_topology", "no replica took over", limit, [&]() -> std::string {
    if (auto why = not_ok(); !why.empty()) return why;
    for (const auto& n : nodes_) {
      if (n->pid() <= 0) continue;
      const auto owner = owner_of(slot, n->port());
      if (owner == old || owner == 0) {
        return "node " + std::to_string(n->port()) + " still names " + std::to_string(owner);
      }
      now_at = owner;
    }
    return {};
  });
  return now_at;
}

void cluster_topology::config_set(std::uint16_t port, const std::string& name,
                                  const std::string& value) {
  const auto r = raw_client(port).command({"CONFIG", "SET", name, value});
  if (r.is_error()) throw std::runtime_error("CONFIG SET " + name + ": " + r.str);
}

void cluster_topology::announce(std::uint16_t port, std::uint16_t client_port,
                                std::uint16_t bus_port, std::chrono::seconds limit) {
  auto& node = node_on(port);
  config_set(port, "cluster-announce-port", std::to_string(client_port));
  config_set(port, "cluster-announce-bus-port", std::to_string(bus_port));
  const std::string id = node_id(port);
  const std::string address = "127.0.0.1:" + std::to_string(client_port ? client_port : port) +
                              "@" + std::to_string(bus_port ? bus_port : node.bus_port());
  settle("cluster_topology", "the cluster did not learn the announced ports", limit,
         [&]() -> std::string {
           for (const auto& n : nodes_) {
             if (n->pid() <= 0 || n->port() == port) continue;
             raw_client other(n->port());
             const auto nodes = other.command({"CLUSTER", "NODES"}).str;
             // The node's own line starts with its id (a replica's line names it later).
             auto line = nodes.rfind(id + " ", 0) == 0 ? 0 : nodes.find("\n" + id + " ");
             if (line == std::string::npos)
               return "node " + std::to_string(n->port()) + " lost " + id;
             if (line != 0) ++line;
             const auto from = line + id.size() + 1;
             const auto seen = nodes.substr(from, nodes.find_first_of(", ", from) - from);
             if (seen != address) {
               return "node " + std::to_string(n->port()) + " sees " + seen + ", not " + address;
             }
           }
           return {};
         });
}

void cluster_topology::begin_migration(std::uint16_t slot, std::uint16_t from, std::uint16_t to) {
  const auto s = std::to_string(slot);
  raw_client target(to);
  auto r = target.command({"CLUSTER", "SETSLOT", s, "IMPORTING", node_id(from)});
  if (r.is_error()) throw std::runtime_error("SETSLOT IMPORTING: " + r.str);
  raw_client source(from);
  r = source.command({"CLUSTER", "SETSLOT", s, "MIGRATING", node_id(to)});
  if (r.is_error()) throw std::runtime_error("SETSLOT MIGRATING: " + r.str);
}

std::size_t cluster_topology::move_keys(std::uint16_t slot, std::uint16_t from, std::uint16_t to) {
  raw_client source(from);
  std::size_t moved = 0;
  for (int round = 0; round < 1000; ++round) {
    const auto keys = source.command({"CLUSTER", "GETKEYSINSLOT", std::to_string(slot), "100"});
    if (keys.elements.empty()) return moved;
    std::vector<std::string> args{"MIGRATE", "127.0.0.1", std::to_string(to), "", "0",
                                  "5000",    "KEYS"};
    for (const auto& k : keys.elements) args.push_back(k.str);
    std::vector<std::string_view> views(args.begin(), args.end());
    const auto r = source.command(std::span<const std::string_view>(views));
    if (r.is_error()) throw std::runtime_error("MIGRATE: " + r.str);
    moved += keys.elements.size();
  }
  throw std::runtime_error("cluster_topology: slot " + std::to_string(slot) + " never emptied");
}

void cluster_topology::end_migration(std::uint16_t slot, std::uint16_t from, std::uint16_t to) {
  const auto s = std::to_string(slot);
  const auto id = node_id(to);
  // The target first (it then claims the slot with a new epoch), then the source, then the
  // other masters, as the cluster spec and redis-cli do.
  std::vector<std::uint16_t> order{to, from};
  for (const auto port : master_ports()) {
    if (port != to && port != from) order.push_back(port);
  }
  for (const auto port : order) {
    raw_client raw(port);
    const auto r = raw.command({"CLUSTER", "SETSLOT", s, "NODE", id});
    if (r.is_error()) throw std::runtime_error("SETSLOT NODE: " + r.str);
  }
}

}  // namespace rlock::test
