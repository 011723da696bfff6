#pragma once

// The answer of the election_leader script (scripts.hpp) read into who leads, and into the
// snapshot an observer is told after its channel is (re)confirmed. Sans I/O: a server may answer
// anything, and an answer of another shape is reported, never guessed at.
#include "resp3/value.hpp"
#include "rlock/election.hpp"
#include "rlock/election_change.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace rlock::detail {

/// `{owner, term, value, since, seq, now}` (election_leader's reply).
struct leader_record {
  std::string owner;  // the field holding the lock; empty: nobody leads
  std::int64_t term = 0;
  std::string value;
  std::int64_t since_ms = 0;  // server ms; 0: unknown (a holder that never campaigned)
  std::uint64_t seq = 0;
  std::int64_t now_ms = 0;  // the server's clock when it was read
};

/// The reply as a record; none if it is not election_leader's shape.
inline std::optional<leader_record> read_leader_record(const resp3::value& reply) {
  if (reply.type != resp3::type::array || reply.elements.size() != 6) return std::nullopt;
  const auto& e = reply.elements;
  const auto text = [](const resp3::value& v) {
    return v.type == resp3::type::blob_string || v.type == resp3::type::simple_string;
  };
  if (!text(e[0]) || !text(e[2])) return std::nullopt;
  for (const std::size_t i : {1u, 3u, 4u, 5u}) {
    if (e[i].type != resp3::type::number || e[i].integer < 0) return std::nullopt;
  }
  leader_record r;
  r.owner = e[0].str;
  r.term = e[1].integer;
  r.value = e[2].str;
  r.since_ms = e[3].integer;
  r.seq = static_cast<std::uint64_t>(e[4].integer);
  r.now_ms = e[5].integer;
  return r;
}

/// Who leads, as election::leader() tells it; none when nobody holds the lock.
inline std::optional<leader_info> leader_of(const leader_record& r) {
  if (r.owner.empty()) return std::nullopt;
  leader_info info;
  info.owner = r.owner;
  info.value = r.value;
  info.term = r.term;
  info.seq = r.seq;
  if (r.since_ms > 0) {
    info.since = std::chrono::system_clock::time_point(std::chrono::milliseconds(r.since_ms));
    info.led_for = std::chrono::milliseconds(r.now_ms > r.since_ms ? r.now_ms - r.since_ms : 0);
  }
  return info;
}

/// The record as an observer's snapshot (observer_sequence::on_snapshot).
inline election_change snapshot_of(const leader_record& r) {
  election_change c;
  c.seq = r.seq;
  c.term = r.term;
  c.what = election_change::event::snapshot;
  c.leading = !r.owner.empty();
  c.value = r.value;
  return c;
}

}  // namespace rlock::detail
