#pragma once

#include "rlock/basic_owned_lock.hpp"
#include "rlock/blocking.hpp"
#include "rlock/client.hpp"
#include "rlock/config.hpp"
#include "rlock/connection_state.hpp"
#include "rlock/count_down_latch.hpp"
#include "rlock/detail/kind_list.hpp"
#include "rlock/election.hpp"
#include "rlock/error.hpp"
#include "rlock/fair_lock.hpp"
#include "rlock/fenced_lock.hpp"
#include "rlock/hold.hpp"
#include "rlock/inspect.hpp"
#include "rlock/lock_handle.hpp"
#include "rlock/multi_lock.hpp"
#include "rlock/non_reentrant_lock.hpp"
#include "rlock/quorum_election.hpp"
#include "rlock/quorum_lock.hpp"
#include "rlock/read_write_lock.hpp"
#include "rlock/reentrant_lock.hpp"
#include "rlock/semaphore.hpp"
#include "rlock/spin_lock.hpp"
#include "rlock/version.hpp"
#include "rlock/with_lock.hpp"

/// @namespace rlock
/// Redisson-compatible distributed locks, semaphores and latches on Redis for C++20 coroutines:
/// rlock::client and the handles it makes, each operation in an awaitable and an `async_*` form.

/// @namespace rlock::blocking
/// The synchronous facade for threads that run no coroutines: blocking::client and its locks
/// (std's Lockable, TimedLockable and SharedLockable shapes), semaphore and count_down_latch.
