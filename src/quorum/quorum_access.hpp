#pragma once

// What a type built over a quorum lock (a quorum-backed election) reads of it without reaching
// into its core: each node's owner state (its key, its hash field, its client) and the count of
// the work it has away on the nodes.
#include "engine/lock_state.hpp"
#include "rlock/detail/quorum_flights.hpp"
#include "rlock/quorum_lock.hpp"

#include <memory>
#include <vector>

namespace rlock::detail {

struct quorum_access {
  /// Each node's owner state, in the order the lock was given its clients.
  static std::vector<std::shared_ptr<lock_state>> node_states(const quorum_lock& q);
  /// The lock's count of work away on the nodes (quorum_flights::ticket).
  static std::shared_ptr<quorum_flights> flights(const quorum_lock& q);
  /// A lock sharing `flights` (blocking forms wait for them when they end).
  static quorum_lock make(std::vector<std::reference_wrapper<client>> nodes, std::string_view name,
                          quorum_options options, std::shared_ptr<quorum_flights> flights) {
    return quorum_lock(std::move(nodes), name, options, std::move(flights));
  }
};

}  // namespace rlock::detail
