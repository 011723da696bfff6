#pragma once

// Redlock's delayed restart, kept by the client: a node that restarted without its data has
// forgotten the grants it made, so until every lease it could have granted has run out it could
// grant a second holder a lock the first still believes. A node whose connection came back is
// therefore not counted in a round for `delay` after its client saw it back, whichever lock
// asks and whenever that lock was made (the moment is the session's, not the lock's). Sans I/O:
// the shell reads session_stats::reconnected_at on the node's client's executor and asks here.
#include <chrono>

namespace rlock::detail {

/// How long the node must still sit out at `now`, its client having last reconnected at
/// `back_at` (the epoch: never, the first connection is not a restart this client saw); zero:
/// it votes.
inline std::chrono::milliseconds restart_wait(std::chrono::steady_clock::time_point back_at,
                                              std::chrono::steady_clock::time_point now,
                                              std::chrono::milliseconds delay) noexcept {
  if (back_at == std::chrono::steady_clock::time_point{} || delay.count() <= 0) return {};
  const auto until = back_at + delay;
  if (now >= until) return {};
  return std::chrono::ceil<std::chrono::milliseconds>(until - now);
}

}  // namespace rlock::detail
