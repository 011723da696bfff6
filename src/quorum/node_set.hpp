#pragma once

// A set of a quorum lock's nodes, by index: what a round asks, holds, cancels or releases.
#include <bit>
#include <cstddef>
#include <cstdint>

namespace rlock::detail {

/// A set of nodes, by index (at most 32).
using node_set = std::uint32_t;

/// The set of node i alone.
constexpr node_set node_bit(std::size_t i) noexcept { return node_set{1} << i; }

/// Every node of `nodes` (at most 32).
constexpr node_set all_nodes(std::size_t nodes) noexcept {
  return nodes >= 32 ? ~node_set{0} : node_bit(nodes) - 1;
}

/// How many nodes `s` holds.
constexpr std::size_t size_of(node_set s) noexcept {
  return static_cast<std::size_t>(std::popcount(s));
}

}  // namespace rlock::detail
