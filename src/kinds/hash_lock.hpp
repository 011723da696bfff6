#pragma once

// What the kinds built on Redisson's lock hash share (RLock's: `<owner field>` -> hold count,
// a PTTL answer when busy, a latched unlock that publishes on the lock's channel): the
// reentrant, non-reentrant, fenced, fair, spin and read-write kinds take their pieces from here.
// Inline: each kind's descriptor points at them.
#include "engine/lock_kind.hpp"
#include "names/names.hpp"
#include "resp3/request.hpp"

#include <charconv>
#include <cstdint>
#include <string_view>

namespace rlock::detail::hash_lock {

inline std::int64_t integer_of(const resp3::value& v) noexcept {
  if (v.type == resp3::type::number) return v.integer;
  std::int64_t n = 0;
  if (!v.is_null()) std::from_chars(v.str.data(), v.str.data() + v.str.size(), n);
  return n;
}

/// Redisson's refusal of a re-acquire by a non-reentrant lock's holder.
inline constexpr std::string_view reentry_refusal = "NON_REENTRANT_REACQUIRE";
inline constexpr refusal reentry_refusals[] = {{"NON_REENTRANT_REACQUIRE", errc::reentry_refused}};

inline void release_call(const lock_identity& s, const release_inputs& in,
                         release_script_call& call) {
  call.which = script::release;
  call.keys = {s.key, in.channel, in.latch};
  call.key_count = 3;
  call.args = {"0", in.lease_ms, s.field, in.publish, in.latch_ttl};
  call.arg_count = 5;
}

inline void transfer_call(const lock_identity& s, const release_inputs& in,
                          release_script_call& call) {
  release_call(s, in, call);
  call.which = script::transfer;
  call.args[5] = in.to_field;
  call.args[6] = in.to_lease_ms;
  call.arg_count = 7;
}

inline void force_call(const lock_identity& s, const release_inputs& in,
                       release_script_call& call) {
  call.which = script::force_unlock;
  call.keys = {s.key, in.channel, in.latch};
  call.key_count = 3;
  call.args = {"0", in.publish, in.latch_ttl};
  call.arg_count = 3;
}

/// Redisson publishes "0" (an unlock: one waiter per process may take it) or "1" (a read
/// unlock, or a forced one: everybody tries).
inline wake_policy on_unlock_message(std::string_view payload, std::uint32_t&) noexcept {
  return payload == "1" ? wake_policy::all : wake_policy::one;
}

/// The owner's hold count now against the holds it had where the question ran: more means the
/// lost attempt ran. A hold two questions both see is claimed by the first answer only (the
/// shell raises server_holds as it records the hold).
inline bool ran(std::uint64_t server_holds, const resp3::value& count) noexcept {
  return integer_of(count) > static_cast<std::int64_t>(server_holds);
}

// --- RLock ------------------------------------------------------------------------------------

inline void reentrant_acquire(const lock_identity& s, const acquire_inputs& in,
                              acquire_script_call& call) {
  call.which = script::acquire;
  call.keys[0] = s.key;
  call.key_count = 1;
  call.args[0] = in.lease_ms;
  call.args[1] = s.field;
  call.arg_count = 2;
}

inline acquire_reply reentrant_decode(const resp3::value& reply) noexcept {
  acquire_reply out;
  if (reply.is_null()) {
    out.what = acquire_reply::outcome::acquired;
  } else if (reply.type == resp3::type::number) {
    out.what = acquire_reply::outcome::busy;
    out.ttl = server_wait(reply.integer);
  }
  return out;
}

inline command reentrant_question(const lock_identity& s) {
  return command(command_kind::query, "HGET", {std::string_view(s.key)},
                 {std::string_view(s.field)});
}

inline reconcile_result reentrant_judge(std::uint64_t holds, const resp3::value& answer) noexcept {
  return {ran(holds, answer) ? reconcile_result::outcome::ran : reconcile_result::outcome::not_run};
}

// --- RFencedLock: acquisitions that answer a token ----------------------------------------------

/// A fenced acquisition's reply (the fenced lock's, the election's campaign).
inline acquire_reply token_decode(const resp3::value& reply) noexcept {
  // {-1, token} or {pttl, -1}. A token is positive (an INCR result); a busy lock's PTTL is >= 0,
  // or -1 for a key without a TTL, which reads {-1, -1}: busy, not a token.
  acquire_reply out;
  if (reply.type != resp3::type::array || reply.elements.size() != 2) return out;
  const auto& first = reply.elements[0];
  const auto& second = reply.elements[1];
  if (first.type != resp3::type::number || second.type != resp3::type::number) return out;
  if (first.integer == -1 && second.integer > 0) {
    out.what = acquire_reply::outcome::acquired;
    out.token = second.integer;
  } else if (second.integer == -1 && first.integer >= -1) {
    out.what = acquire_reply::outcome::busy;
    out.ttl = server_wait(first.integer);
  }
  return out;
}

/// A fenced acquisition whose answer (with its token) was lost, asked `{hold count, token}`: while
/// the owner holds the lock nobody else can acquire, so the counter moved since the lost attempt
/// only by this owner's own acquisitions: the value read is this acquisition's token or a later one
/// of the same owner, above every token an earlier holder got, which is what a fenced resource
/// checks.
inline reconcile_result token_judge(std::uint64_t holds, const resp3::value& answer) noexcept {
  if (answer.type != resp3::type::array || answer.elements.size() != 2) return {};
  if (!ran(holds, answer.elements[0])) return {};
  const std::int64_t token = integer_of(answer.elements[1]);
  if (token <= 0) return {reconcile_result::outcome::ran_no_token};
  return {reconcile_result::outcome::ran, token};
}

}  // namespace rlock::detail::hash_lock
