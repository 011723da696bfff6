#pragma once

// The library's own way to a handle's state (the blocking facade keeps one owner per thread and
// starts the operations on it directly). Not in the public headers: they only name this struct
// as a friend.
#include "lock/lock_state.hpp"
#include "rlock/reentrant_lock.hpp"

#include <memory>

namespace rlock::detail {

struct lock_access {
  static const std::shared_ptr<lock_state>& state(const reentrant_lock& l) noexcept {
    return l.state_;
  }
};

}  // namespace rlock::detail
