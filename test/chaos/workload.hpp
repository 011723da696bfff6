#pragma once

#include "chaos/history.hpp"

#include <chrono>
#include <cstdint>
#include <rlock/config.hpp>
#include <string>
#include <vector>

namespace rlock::chaos {

/// Contention recorded into a history: coroutines on one async client (each its own owner) and
/// threads on one blocking client, taking random locks of `names` with lock() or try_lock(wait),
/// holding them a random while, and unlocking, until `duration` has passed. Every acquisition,
/// lost() and operation goes to the recorder; see history.hpp for what is recorded when.
struct workload_options {
  rlock::config cfg;  // where to connect, leases, timeouts
  std::string process = "p";
  std::vector<std::string> names;
  int coroutines = 8;
  int threads = 2;
  std::chrono::milliseconds duration{2'000};
  std::chrono::milliseconds max_hold{20};
  std::chrono::milliseconds try_wait{300};
  std::uint64_t seed = 1;
  /// The lock kind every worker takes (issue 25's lock family): an owned kind's word in
  /// RLOCK_OWNED_LOCK_KINDS but "read" (the checker's rule: exclusion), or "read-write" (two rounds
  /// in three take the read half; the rule: readers share, a writer excludes everyone), or "multi"
  /// (coroutines take multi-locks over two names given in random order; exclusion per name).
  std::string kind = "reentrant";
  /// Upper bound on iterations per worker, so a loop ends even if time stood still.
  int max_iterations = 100'000;
};

/// Runs the workload to its end: every worker stops starting operations at `duration`, and the
/// call returns when every operation has completed (a lock() still waiting then is given up to
/// `drain` to complete; one that does not is left recorded as never completed). Afterwards, it
/// waits (bounded) for both clients to become idle and records any activity left in
/// `h.left.client_activity`. Returns the history.
history run_workload(const workload_options& opts, recorder& rec,
                     std::chrono::milliseconds drain = std::chrono::seconds(30));

/// The server's leftovers under `prefix`: channels (PUBSUB CHANNELS) and keys (SCAN).
void record_server_leftovers(std::uint16_t port, const std::string& prefix, history& h);

}  // namespace rlock::chaos
