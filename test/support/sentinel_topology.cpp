#include "support/sentinel_topology.hpp"

#include "support/raw_client.hpp"
#include "support/settle.hpp"

#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <thread>

namespace rlock::test {

namespace resp3 = rlock::detail::resp3;
using namespace std::chrono_literals;

namespace {

/// The value of `key` in a map reply (RESP3) or a flat key/value array (RESP2).
std::string field(const resp3::value& entry, std::string_view key) {
  for (std::size_t k = 0; k + 1 < entry.elements.size(); k += 2) {
    if (entry.elements[k].str == key) return entry.elements[k + 1].str;
  }
  return {};
}

std::uint16_t to_port(std::string_view text) {
  unsigned v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return static_cast<std::uint16_t>(v);
}

std::string role_of(std::uint16_t port) {
  raw_client raw(port);
  const auto role = raw.command({"ROLE"});
  return role.elements.empty() ? std::string("?") : role.elements[0].str;
}

}  // namespace

sentinel_topology::sentinel_topology(std::string master_name) : name_(std::move(master_name)) {
  a_ = std::make_unique<redis_server>();
  redis_server::options replica;
  replica.replica_of = a_->port();
  b_ = std::make_unique<redis_server>(replica);
  for (int i = 0; i < 3; ++i) {
    redis_server::options s;
    s.sentinel_of = a_->port();
    s.master_name = name_;
    s.quorum = 2;
    sentinels_.push_back(std::make_unique<redis_server>(s));
  }
}

std::vector<rlock::config::endpoint> sentinel_topology::sentinels() const {
  std::vector<rlock::config::endpoint> out;
  for (const auto& s : sentinels_) out.push_back({s->host(), s->port()});
  return out;
}

redis_server& sentinel_topology::node(std::uint16_t port) {
  if (a_->port() == port) return *a_;
  if (b_->port() == port) return *b_;
  throw std::runtime_error("sentinel_topology: no data node on port " + std::to_string(port));
}

redis_server& sentinel_topology::other(std::uint16_t port) {
  return a_->port() == port ? *b_ : *a_;
}

std::uint16_t sentinel_topology::master_port(std::size_t i) const {
  raw_client raw(sentinels_.at(i)->port());
  const auto reply = raw.command({"SENTINEL", "get-master-addr-by-name", name_});
  if (reply.elements.size() != 2) return 0;
  return to_port(reply.elements[1].str);
}

void sentinel_topology::wait_ready(std::uint16_t master, std::chrono::seconds limit) {
  const std::uint16_t replica = other(master).port();
  settle("sentinel_topology", "the topology did not settle", limit, [&]() -> std::string {
    if (const auto role = role_of(master); role != "master") {
      std::string views;
      for (std::size_t i = 0; i < sentinels_.size(); ++i) {
        views +=
            " sentinel " + std::to_string(i) + " names " + std::to_string(master_port(i)) + ";";
      }
      return "node " + std::to_string(master) + " says ROLE " + role + ";" + views;
    }
    for (std::size_t i = 0; i < sentinels_.size(); ++i) {
      raw_client raw(sentinels_[i]->port());
      const auto where = raw.command({"SENTINEL", "get-master-addr-by-name", name_});
      if (where.elements.size() != 2 || to_port(where.elements[1].str) != master) {
        return "sentinel " + std::to_string(i) + " names another master";
      }
      const auto peers = raw.command({"SENTINEL", "sentinels", name_});
      if (peers.elements.size() != sentinels_.size() - 1) {
        return "sentinel " + std::to_string(i) + " knows " + std::to_string(peers.elements.size()) +
               " other sentinels";
      }
      const auto replicas = raw.command({"SENTINEL", "replicas", name_});
      bool good = false;
      std::string seen;
      for (const auto& r : replicas.elements) {
        seen += " [" + field(r, "port") + " " + field(r, "flags") + " link " +
                field(r, "master-link-status") + " info " + field(r, "info-refresh") + " ms]";
        // Sentinel picks only a replica whose INFO is recent (5 s; it asks every 10 s): a
        // failover started with an older one waits for the next INFO, or aborts. Only
        // sentinel 0 runs the failovers a test asks for (failover()).
        const auto refresh = std::atoll(field(r, "info-refresh").c_str());
        good = good || (to_port(field(r, "port")) == replica && field(r, "flags") == "slave" &&
                        field(r, "master-link-status") == "ok" && (i > 0 || refresh < 2500));
      }
      if (!good) {
        return "sentinel " + std::to_string(i) + " sees no good replica of " +
               std::to_string(master) + " on " + std::to_string(replica) + " yet:" + seen;
      }
    }
    return {};
  });
}

std::uint16_t sentinel_topology::wait_settled(std::chrono::seconds limit) {
  std::uint16_t master = 0;
  settle("sentinel_topology", "the sentinels did not settle on a master", limit,
         [&]() -> std::string {
           master = master_port(0);
           if (master == 0) return "sentinel 0 names no master";
           try {
             wait_ready(master, std::chrono::seconds(1));
           } catch (const std::exception& e) {
             return e.what();
           }
           return {};
         });
  return master;
}

std::uint16_t sentinel_topology::wait_switched(std::uint16_t old, std::chrono::seconds limit) {
  std::uint16_t now = 0;
  settle("sentinel_topology", "the sentinels did not switch masters", limit, [&]() -> std::string {
    for (std::size_t i = 0; i < sentinels_.size(); ++i) {
      const auto port = master_port(i);
      if (port == 0 || port == old) return "sentinel " + std::to_string(i) + " names the old one";
      now = port;
    }
    return {};
  });
  return now;
}

void sentinel_topology::wait_demoted(std::uint16_t port, std::chrono::seconds limit) {
  settle("sentinel_topology", "the old master was not demoted", limit, [&]() -> std::string {
    if (node(port).pid() <= 0) return {};
    const auto role = role_of(port);
    return role == "slave" ? std::string() : "ROLE says " + role;
  });
}

void sentinel_topology::failover() {
  raw_client raw(sentinels_.at(0)->port());
  const auto reply = raw.command({"SENTINEL", "FAILOVER", name_});
  if (reply.is_error()) throw std::runtime_error("SENTINEL FAILOVER: " + reply.str);
}

}  // namespace rlock::test
