#pragma once

// How a kind's public type gets its state from a client without the client knowing the kind: a
// kind whose factory is its own constructor (count_down_latch(client&, name)) asks here, so
// adding it touches neither client.hpp nor the client's sources. Inspection (rlock/inspect.hpp)
// asks here for the context its queries run on.
#include "engine/engine_context.hpp"
#include "engine/lock_kind.hpp"
#include "engine/lock_state.hpp"

#include <cstdint>
#include <memory>
#include <string_view>

namespace rlock {
class client;  // the engine does not include the client: src/api defines these
}  // namespace rlock

namespace rlock::detail {

struct kind_access {
  /// The state of a new owner of `name` on `c`, of `kind` (owner_table::new_owner).
  /// Thread-safe.
  static std::shared_ptr<lock_state> new_owner(client& c, std::string_view name,
                                               const lock_kind& kind);
  /// The same with the id `owner` (a read-write lock's write half shares its read half's).
  static std::shared_ptr<lock_state> new_owner(client& c, std::string_view name,
                                               const lock_kind& kind, std::uint64_t owner);
  /// The state of (name, owner) of `kind`, shared by every handle of that owner
  /// (owner_table::state_for). Thread-safe.
  static std::shared_ptr<lock_state> state_for(client& c, std::string_view name,
                                               std::uint64_t owner, const lock_kind& kind);
  /// The client's validated config, for a kind's constructor that reads its own section (it
  /// lives as long as the client). Thread-safe: it never changes.
  static const config& config_of(client& c);
  /// The client's engine context, kept alive by the pointer. Thread-safe.
  static std::shared_ptr<engine_context> context(client& c);
};

}  // namespace rlock::detail
