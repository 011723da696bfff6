#pragma once

#include "chaos/history.hpp"

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace rlock::chaos {

struct checker_options {
  /// Allowed on top of an operation's stated bound: scheduling, sanitizers, a loaded CI machine.
  /// It is not a performance margin; an operation that hangs overruns any slack.
  nanos slack = 2'000'000'000;
  /// The writer rule (read-write locks under rw_priority::writers): a write acquisition that
  /// waited longer than this while readers that asked after it entered first starved. -1: not
  /// checked (a run whose faults may cut a writer off while other processes keep reading).
  nanos writer_wait_bound = -1;
  /// Readers that asked within this of the writer may have crossed its mark on the wire (the
  /// mark is written by the writer's first attempt): they do not count as passing it.
  nanos writer_mark_delay = 100'000'000;
};

/// What check() found. Each list is a kind of failure, with one line per finding; a run is clean
/// only when all are empty.
struct verdict {
  /// Two owners believed they held the same lock at the same time, and no data loss explains it.
  /// Also a fencing token not above one granted before it was asked for.
  /// Also a fair lock's grant out of turn: an owner granted before a lock() waiter that was
  /// ahead of it in the queue and kept waiting until it was granted too.
  std::vector<std::string> violations;
  /// Restarts that lost the server's data, each with the overlaps it explains (a first grant
  /// requested before the kill, a second seen after it). Never a pass: a lock on a server that
  /// forgets is not a lock, and the report says so apart from violations.
  std::vector<std::string> data_loss;
  /// Operations that completed later than their bound (+ slack).
  std::vector<std::string> overruns;
  /// Writers that waited past checker_options::writer_wait_bound while readers that came after
  /// them went first.
  std::vector<std::string> starved;
  /// Operations that never completed, acquisitions never ended.
  std::vector<std::string> stuck;
  /// Channels, keys, client activity left at the end.
  std::vector<std::string> leftovers;
  /// Not a failure: what the clients logged around each violation of exclusion (lines naming
  /// its lock, and lines naming no lock: connections), from a second before the first grant was
  /// requested to the second's end.
  std::vector<std::string> context;

  std::size_t acquisitions = 0;
  std::size_t operations = 0;
  /// What was seen, for the report: how beliefs ended ("released", "lost", "not_owner") and what
  /// operations returned ("try_lock: not acquired", "unlock: operation timed out"...).
  std::map<std::string, std::size_t> ends;
  std::map<std::string, std::size_t> outcomes;

  bool clean() const noexcept {
    return violations.empty() && data_loss.empty() && overruns.empty() && starved.empty() &&
           stuck.empty() && leftovers.empty();
  }
  /// A multi-line summary for test output.
  std::string report() const;
};

/// Checks a history (see history.hpp for what its intervals mean).
verdict check(const history& h, const checker_options& opts = {});

}  // namespace rlock::chaos
