#pragma once

/// @file
/// The owned lock kinds, listed once.

/// Every owned lock kind (rlock::owned_lock: `lock()` completes with nothing, `try_lock()` with
/// whether it took the lock), once, with the word that tools and tests call it by:
/// `X(type, word)` for each. A client makes any of them with client::get<type>(name) (the
/// kind's own constructor), a blocking client with blocking::client::get<type>(name). rlockctl's
/// `hold --kind`, the chaos workload and the tests' lists expand this list, so a new owned kind
/// is one line here and nothing in them. The fenced lock is not here: its acquisitions answer
/// a token.
#define RLOCK_OWNED_LOCK_KINDS(X)                  \
  X(reentrant_lock, "reentrant")                   \
  X(non_reentrant_lock, "non-reentrant")           \
  X(fair_lock, "fair")                             \
  X(non_reentrant_fair_lock, "non-reentrant-fair") \
  X(spin_lock, "spin")                             \
  X(read_lock, "read")                             \
  X(write_lock, "write")
