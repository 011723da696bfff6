#pragma once

// The former name of basic_owned_lock (it is also the base of read_lock, which is not exclusive).
#include "rlock/basic_owned_lock.hpp"

namespace rlock {

/// The former name of basic_owned_lock.
/// @deprecated Use rlock::basic_owned_lock.
template <typename Lock>
using exclusive_lock [[deprecated("use rlock::basic_owned_lock")]] = basic_owned_lock<Lock>;

}  // namespace rlock
