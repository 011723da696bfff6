#include "session/cluster/slot_map.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

namespace rlock::detail {

namespace {

/// The value under `name` in a RESP3 map (or a RESP2-style flat array of pairs), or nullptr.
const resp3::value* field(const resp3::value& m, std::string_view name) {
  for (std::size_t i = 0; i + 1 < m.elements.size(); i += 2) {
    if (m.elements[i].str == name) return &m.elements[i + 1];
  }
  return nullptr;
}

bool is_map_like(const resp3::value& v) {
  return v.type == resp3::type::map || v.type == resp3::type::array;
}

std::string text_of(const resp3::value* v) {
  if (v == nullptr) return {};
  if (v->type == resp3::type::number) return std::to_string(v->integer);
  return v->str;
}

std::int64_t number_of(const resp3::value* v) {
  if (v == nullptr) return -1;
  if (v->type == resp3::type::number) return v->integer;
  std::int64_t n = -1;
  const auto [end, ec] = std::from_chars(v->str.data(), v->str.data() + v->str.size(), n);
  return ec == std::errc{} && end == v->str.data() + v->str.size() ? n : -1;
}

/// A range of slots a reply may name: within 0..16383, and not backwards.
bool is_slot_range(std::int64_t from, std::int64_t to) {
  return from >= 0 && from <= to && to < slot_count;
}

}  // namespace

std::string cluster_node::address() const { return fmt::format("{}:{}", host, port); }

slot_map::node_index slot_map::add_node(cluster_node n) {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].host == n.host && nodes_[i].port == n.port) {
      if (nodes_[i].id.empty()) nodes_[i].id = std::move(n.id);
      return static_cast<node_index>(i);
    }
  }
  nodes_.push_back(std::move(n));
  return static_cast<node_index>(nodes_.size() - 1);
}

std::optional<slot_map> slot_map::from_shards(const resp3::value& reply, bool tls,
                                              std::string& diagnostic) {
  if (reply.is_error()) {
    diagnostic = fmt::format("CLUSTER SHARDS failed: {}", reply.str);
    return std::nullopt;
  }
  if (reply.type != resp3::type::array) {
    diagnostic = "CLUSTER SHARDS did not answer with an array";
    return std::nullopt;
  }
  slot_map map;
  for (const auto& shard : reply.elements) {
    if (!is_map_like(shard)) {
      diagnostic = "CLUSTER SHARDS: a shard is not a map";
      return std::nullopt;
    }
    const auto* slots = field(shard, "slots");
    const auto* nodes = field(shard, "nodes");
    if (slots == nullptr || nodes == nullptr || slots->elements.size() % 2 != 0) {
      diagnostic = "CLUSTER SHARDS: a shard without slot ranges or nodes";
      return std::nullopt;
    }
    if (slots->elements.empty()) continue;  // a master that serves nothing
    const resp3::value* master = nullptr;
    // After a failover the shard lists the promoted replica as master (online) and the old
    // master as master too, with health "fail", until it rejoins: the online one serves.
    for (const auto& n : nodes->elements) {
      if (!is_map_like(n) || text_of(field(n, "role")) != "master") continue;
      const bool online = text_of(field(n, "health")) == "online";
      if (master == nullptr || (online && text_of(field(*master, "health")) != "online")) {
        master = &n;
      }
    }
    if (master == nullptr) continue;  // no master: its slots are not served
    cluster_node node;
    node.id = text_of(field(*master, "id"));
    node.host = text_of(field(*master, "endpoint"));
    if (node.host.empty() || node.host == "?") node.host = text_of(field(*master, "ip"));
    const auto port = number_of(field(*master, tls ? "tls-port" : "port"));
    if (node.host.empty() || port <= 0 || port > 65535) {
      diagnostic =
          fmt::format("CLUSTER SHARDS: master {} has no {}address", node.id, tls ? "TLS " : "");
      return std::nullopt;
    }
    node.port = static_cast<std::uint16_t>(port);
    const node_index index = map.add_node(std::move(node));
    for (std::size_t i = 0; i < slots->elements.size(); i += 2) {
      const auto from = number_of(&slots->elements[i]);
      const auto to = number_of(&slots->elements[i + 1]);
      if (!is_slot_range(from, to)) {
        diagnostic = fmt::format("CLUSTER SHARDS: bad slot range {}-{}", from, to);
        return std::nullopt;
      }
      std::fill(map.slots_.begin() + from, map.slots_.begin() + to + 1, index);
    }
  }
  return map;
}

std::optional<slot_map> slot_map::from_slots(const resp3::value& reply, std::string& diagnostic) {
  if (reply.is_error()) {
    diagnostic = fmt::format("CLUSTER SLOTS failed: {}", reply.str);
    return std::nullopt;
  }
  if (reply.type != resp3::type::array) {
    diagnostic = "CLUSTER SLOTS did not answer with an array";
    return std::nullopt;
  }
  slot_map map;
  for (const auto& range : reply.elements) {
    if (range.type != resp3::type::array || range.elements.size() < 3 ||
        range.elements[2].type != resp3::type::array || range.elements[2].elements.size() < 2) {
      diagnostic = "CLUSTER SLOTS: a range without a master";
      return std::nullopt;
    }
    const auto from = number_of(&range.elements[0]);
    const auto to = number_of(&range.elements[1]);
    const auto& master = range.elements[2].elements;
    const auto port = number_of(&master[1]);
    cluster_node node;
    node.host = text_of(&master[0]);
    if (master.size() > 2) node.id = text_of(&master[2]);
    if (!is_slot_range(from, to)) {
      diagnostic = fmt::format("CLUSTER SLOTS: bad slot range {}-{}", from, to);
      return std::nullopt;
    }
    // "?" (or nothing): the master's endpoint is unknown; its slots stay unserved here.
    if (node.host.empty() || node.host == "?" || port <= 0 || port > 65535) continue;
    node.port = static_cast<std::uint16_t>(port);
    const node_index index = map.add_node(std::move(node));
    std::fill(map.slots_.begin() + from, map.slots_.begin() + to + 1, index);
  }
  return map;
}

void slot_map::fill_unserved(const slot_map& other) {
  for (std::size_t s = 0; s < slot_count; ++s) {
    if (slots_[s] != none || other.slots_[s] == none) continue;
    slots_[s] = add_node(other.nodes_[other.slots_[s]]);
  }
}

bool slot_map::move(std::uint16_t slot, std::string_view host, std::uint16_t port) {
  if (slot >= slot_count) return false;
  const node_index index = add_node(cluster_node{std::string(host), port, {}});
  if (slots_[slot] == index) return false;
  slots_[slot] = index;
  return true;
}

std::size_t slot_map::covered() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(slots_.begin(), slots_.end(), [](node_index i) { return i != none; }));
}

bool slot_map::same_owners(const slot_map& other) const {
  for (std::size_t s = 0; s < slot_count; ++s) {
    const auto* a = owner(static_cast<std::uint16_t>(s));
    const auto* b = other.owner(static_cast<std::uint16_t>(s));
    if ((a == nullptr) != (b == nullptr)) return false;
    if (a != nullptr && (a->host != b->host || a->port != b->port)) return false;
  }
  return true;
}

std::vector<bool> slot_map::owning() const {
  std::vector<bool> used(nodes_.size(), false);
  for (const node_index i : slots_) {
    if (i != none) used[i] = true;
  }
  return used;
}

bool slot_map::serves(std::string_view address) const {
  const auto used = owning();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (used[i] && nodes_[i].address() == address) return true;
  }
  return false;
}

std::vector<std::string> slot_map::master_addresses() const {
  const auto owns = owning();
  std::set<std::string> used;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (owns[i]) used.insert(nodes_[i].address());
  }
  return {used.begin(), used.end()};
}

std::string slot_map::masters() const {
  std::string out;
  for (const auto& a : master_addresses()) {
    if (!out.empty()) out += ',';
    out += a;
  }
  return out;
}

}  // namespace rlock::detail
