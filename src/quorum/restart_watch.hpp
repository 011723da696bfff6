#pragma once

// Redlock's delayed restart, kept by the client: a node that restarted without its data has
// forgotten the grants it made, so until every lease it could have granted has run out it could
// grant a second holder a lock the first still believes. A node whose connection came back is
// therefore not counted in a round for `delay` after this client saw it back (no later than it
// came back: the delay only grows). Sans I/O: the shell reads the node's reconnect count on its
// client's executor and asks here.
#include <chrono>
#include <cstdint>

namespace rlock::detail {

class restart_watch {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  /// The reconnects the node's client had made when the lock was made: not restarts of its own.
  void baseline(std::uint64_t reconnects) noexcept {
    reconnects_ = reconnects;
    known_ = true;
  }
  /// Whether the node may vote at `now`, its client having made `reconnects` so far. Until a
  /// baseline is known, any reconnect counts as one seen now.
  bool counted(std::uint64_t reconnects, time_point now, std::chrono::milliseconds delay) noexcept {
    if (!known_ || reconnects != reconnects_) {
      if (known_ || reconnects > 0) back_at_ = now;
      reconnects_ = reconnects;
      known_ = true;
    }
    return back_at_ == time_point{} || now >= back_at_ + delay;
  }
  /// When the node was last seen back (epoch: never).
  time_point back_at() const noexcept { return back_at_; }

 private:
  std::uint64_t reconnects_ = 0;
  time_point back_at_{};
  bool known_ = false;
};

}  // namespace rlock::detail
