#pragma once

#include "resp3/value.hpp"
#include "session/cluster/key_slot.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::detail {

/// A cluster node as the slot map names it.
struct cluster_node {
  std::string host;
  std::uint16_t port = 0;
  std::string id;  // the node's cluster id; empty for a node only a MOVED named

  /// "host:port", the node's identity in the client (two ids on one address are one node).
  std::string address() const;
};

/// Sans-I/O: which master owns each of the 16 384 slots, as `CLUSTER SHARDS` told it and
/// `-MOVED` replies corrected it since. The router asks it where a key goes; it does no I/O.
class slot_map {
 public:
  using node_index = std::uint16_t;
  static constexpr node_index none = 0xffff;

  slot_map() : slots_(slot_count, none) {}

  /// Decodes a `CLUSTER SHARDS` reply (Redis 7): every shard's slot ranges and its master (the
  /// node with role "master", preferring one whose health is "online"), reached at its
  /// "endpoint" (else "ip") and "port", or "tls-port" when `tls`. Nothing, and why in
  /// `diagnostic`, for a reply of another shape or an error reply (Redis's text).
  static std::optional<slot_map> from_shards(const resp3::value& reply, bool tls,
                                             std::string& diagnostic);

  /// Decodes a `CLUSTER SLOTS` reply: per range [from, to, master, replicas...], the master as
  /// [endpoint, port, id, ...], its port being the one for this connection's kind (TLS or
  /// not). Only to complete a CLUSTER SHARDS map (fill_unserved): nothing, and why, for another
  /// shape.
  static std::optional<slot_map> from_slots(const resp3::value& reply, std::string& diagnostic);
  /// Gives every slot this map leaves unserved the owner `other` names for it (if any).
  void fill_unserved(const slot_map& other);

  /// The master owning `slot`, or nullptr when no node serves it (an uncovered slot).
  const cluster_node* owner(std::uint16_t slot) const noexcept {
    const node_index i = slots_[slot];
    return i == none ? nullptr : &nodes_[i];
  }
  node_index owner_index(std::uint16_t slot) const noexcept { return slots_[slot]; }
  const cluster_node& node(node_index i) const noexcept { return nodes_[i]; }
  const std::vector<cluster_node>& nodes() const noexcept { return nodes_; }

  /// A `-MOVED slot host:port` reply: `slot` is served there now. True if that changed the map.
  bool move(std::uint16_t slot, std::string_view host, std::uint16_t port);

  /// Slots some node serves (16 384 when the cluster is fully covered).
  std::size_t covered() const noexcept;
  /// Whether every slot has the same owner (by address) in both maps.
  bool same_owners(const slot_map& other) const;
  /// Whether the node at `address` ("host:port") owns at least one slot.
  bool serves(std::string_view address) const;
  /// The addresses of the nodes that own at least one slot, sorted.
  std::vector<std::string> master_addresses() const;
  /// The same joined with ',': a summary for logs and for telling that the masters changed.
  std::string masters() const;

 private:
  node_index add_node(cluster_node n);
  /// Per node (by index), whether it owns at least one slot.
  std::vector<bool> owning() const;

  std::vector<cluster_node> nodes_;
  std::vector<node_index> slots_;
};

}  // namespace rlock::detail
