#pragma once

#include "rlock/export.hpp"

#include <string_view>

namespace rlock {

/// How the latest acquisition through a handle came about (diagnostics, demos, tests).
enum class wake_reason {
  /// Acquired without sleeping: the first attempt, or the retry right after subscribing.
  immediate,
  /// Woken by an unlock notification on the lock's channel.
  notification,
  /// Slept until the holder's lease ran out (key expiry publishes nothing).
  expiry,
  /// Handed over: by a final unlock of another owner of this client, in that unlock's round
  /// trip (config::local_handoff), or by a fair lock's release, from any client, that made this
  /// waiter the holder and told it by a message on its channel (handoff by push).
  handoff,
};

/// "immediate", "notification", "expiry", "handoff".
RLOCK_EXPORT std::string_view to_string(wake_reason reason) noexcept;

}  // namespace rlock
