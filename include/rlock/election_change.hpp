#pragma once

#include <cstdint>
#include <string>

namespace rlock {

/// One change of an election, as its observers are told it (election_observer::next()): the
/// state after the change. Changes are numbered by the leader record's change counter `seq`;
/// an observer is told each at most once and never one older than the last it was told.
struct election_change {
  /// What changed.
  enum class event : std::uint8_t {
    elected,     ///< a new leader won: a new term
    proclaimed,  ///< the leader announced another value
    resigned,    ///< the leader gave up the lead (term: the one that ended)
    /// Read from the leader record when the observer's channel was (re)confirmed: the state as
    /// it is. Redis does not replay what was published while a connection was down, so after a
    /// reconnect `skipped` (and the terms) say what this observer missed.
    snapshot,
  };
  std::uint64_t seq = 0;         ///< the record's change counter: one more at every change
  std::int64_t term = 0;         ///< the leader's term (the fenced token it won); 0: none ever
  event what = event::snapshot;  ///< what changed
  /// Whether somebody leads after this change (false after a resignation, or in a snapshot of
  /// a record whose leader's lock is gone: a leader that died, its lease run out).
  bool leading = false;
  std::string value;  ///< what the leader announces (campaign or proclaim); empty if none
  /// Changes numbered between the previous one told and this one, never told: a gap that a
  /// reconnect left. The first change an observer hears skips nothing.
  std::uint64_t skipped = 0;
};

}  // namespace rlock
