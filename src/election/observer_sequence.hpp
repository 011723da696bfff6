#pragma once

// What an election's observers are told, in order: every change of leader or value that the
// leader record's change counter (`seq`) numbers, each once, none after a later one. Messages
// come from the election's channel; after a (re)subscription the record itself is read, since
// Redis does not replay what was published while the connection was down. Sans I/O: the shell
// feeds what it hears and reads, and delivers what this returns (src/ELECTION_PLAN.md).
#include "rlock/election_change.hpp"

#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace rlock::detail {

/// One change of an election (rlock/election_change.hpp).
using election_change = rlock::election_change;

/// The channel's words for an event; nothing for `snapshot` (never published).
constexpr std::string_view election_event_word(election_change::event e) noexcept {
  switch (e) {
    case election_change::event::elected:
      return "elected";
    case election_change::event::proclaimed:
      return "proclaimed";
    case election_change::event::resigned:
      return "resigned";
    case election_change::event::snapshot:
      break;
  }
  return {};
}

/// A message of the election's channel, `<seq>:<term>:<event>:<value>` (the value may hold any
/// bytes, colons too), or why it is not one: a server or a foreign publisher may send anything.
struct parsed_election_message {
  std::optional<election_change> change;
  std::string error;  // empty when parsed
};

inline parsed_election_message parse_election_message(std::string_view payload) {
  parsed_election_message out;
  const std::string_view whole = payload;
  const auto fail = [&](std::string_view why) {
    out.error = "election message '";
    out.error.append(whole.substr(0, 64)).append("': ").append(why);
    return out;
  };
  election_change c;
  const auto number = [&](auto& n) {
    const auto colon = payload.find(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    const auto [end, ec] = std::from_chars(payload.data(), payload.data() + colon, n);
    if (ec != std::errc{} || end != payload.data() + colon) return false;
    payload.remove_prefix(colon + 1);
    return true;
  };
  if (!number(c.seq) || c.seq == 0) {
    return fail("no change counter (expected <seq>:<term>:<event>:<value>)");
  }
  if (!number(c.term) || c.term < 0) {
    return fail("no term (expected <seq>:<term>:<event>:<value>)");
  }
  const auto colon = payload.find(':');
  const auto word = payload.substr(0, colon);
  bool known = false;
  for (const auto e : {election_change::event::elected, election_change::event::proclaimed,
                       election_change::event::resigned}) {
    if (word == election_event_word(e)) {
      c.what = e;
      known = true;
    }
  }
  if (!known) return fail("unknown event (expected elected, proclaimed or resigned)");
  if (colon == std::string_view::npos) {
    return fail("no value (expected <seq>:<term>:<event>:<value>)");
  }
  c.value = std::string(payload.substr(colon + 1));
  c.leading = c.what != election_change::event::resigned;
  out.change = std::move(c);
  return out;
}

/// How an observer's changes are numbered.
enum class election_numbering : std::uint8_t {
  /// One record on one deployment: its `seq` counts every change; a record numbered below the
  /// last change told was written again from nothing (the server lost its data).
  one_record,
  /// A quorum-backed election: a record per node, written by the leader with `(term, seq)`
  /// (terms from the quorum's token; `seq` counted on from the highest a majority held). Changes
  /// are ordered by term, then by seq; a node that answers lower is behind (it missed writes
  /// while down), never a restart.
  term_then_seq,
};

/// One observer's order: what it was told last, and what to tell next.
class observer_sequence {
 public:
  explicit observer_sequence(election_numbering n = election_numbering::one_record) noexcept
      : numbering_(n) {}

  /// A change heard on the channel: returned to be delivered when it is newer than every
  /// change delivered, with `skipped` set; nothing when it is not (a repeat, or one overtaken
  /// by a snapshot read meanwhile).
  std::optional<election_change> on_message(election_change c) { return take(std::move(c)); }

  /// The record read after the channel was (re)confirmed, or after a message numbered below
  /// the last one told (stale_message()): the state as it is, delivered as a snapshot when it is
  /// newer than every change delivered. With one record, a record numbered *below* the last
  /// change told was written again from nothing: the server lost its data (a restart without
  /// persistence, a FLUSHALL), and the order starts again from it (told, skipped 0). A record
  /// never written (seq 0) tells nothing.
  std::optional<election_change> on_snapshot(election_change c) {
    c.what = election_change::event::snapshot;
    if (numbering_ == election_numbering::one_record && c.seq > 0 && c.seq < last_seq_) {
      last_seq_ = c.seq;
      last_term_ = c.term;
      c.skipped = 0;
      return c;
    }
    if (c.seq == 0) return std::nullopt;
    return take(std::move(c));
  }

  /// A message older than the last change told: stale, or (one record) the first of a record
  /// written again after the server lost its data. Only a read of the record can tell which.
  bool stale_message(const election_change& c) const noexcept {
    if (last_seq_ == 0) return false;
    if (numbering_ == election_numbering::one_record) return c.seq < last_seq_;
    return c.term < last_term_ || (c.term == last_term_ && c.seq < last_seq_);
  }

  /// The change counter of the latest change delivered (0: none yet).
  std::uint64_t last_seq() const noexcept { return last_seq_; }
  /// The latest term delivered (0: none yet).
  std::int64_t last_term() const noexcept { return last_term_; }

 private:
  bool newer(const election_change& c) const noexcept {
    if (numbering_ == election_numbering::one_record) return c.seq > last_seq_;
    return c.term > last_term_ || (c.term == last_term_ && c.seq > last_seq_);
  }

  std::optional<election_change> take(election_change c) {
    if (!newer(c)) return std::nullopt;
    // The first change an observer hears is where it starts: nothing before it was owed. A new
    // term counted from a lower seq (a quorum's change after writes a majority never had)
    // skipped nothing that can be counted.
    c.skipped = last_seq_ == 0 || c.seq <= last_seq_ ? 0 : c.seq - last_seq_ - 1;
    last_seq_ = c.seq;
    if (numbering_ == election_numbering::term_then_seq || c.term > last_term_) {
      last_term_ = c.term;
    }
    return c;
  }

  election_numbering numbering_;
  std::uint64_t last_seq_ = 0;
  std::int64_t last_term_ = 0;
};

}  // namespace rlock::detail
