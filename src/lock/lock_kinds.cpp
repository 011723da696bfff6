// The two kinds the engine runs today, as descriptors: the reentrant lock (Redisson's RLock) and
// the fenced lock (RFencedLock). They share the hash, the release, the channel and the renewal;
// they differ in the acquire script, its reply and what a lost acquire's reconciliation reads.
#include "lock/lock_kind.hpp"
#include "lock/names.hpp"
#include "resp3/request.hpp"

#include <charconv>

namespace rlock::detail {

namespace {

std::int64_t integer_of(const resp3::value& v) noexcept {
  if (v.type == resp3::type::number) return v.integer;
  std::int64_t n = 0;
  if (!v.is_null()) std::from_chars(v.str.data(), v.str.data() + v.str.size(), n);
  return n;
}

// --- shared by both kinds ---------------------------------------------------------------------

void release_call(const lock_identity& s, const release_inputs& in, release_script_call& call) {
  call.which = script::release;
  call.keys = {s.key, in.channel, in.latch};
  call.key_count = 3;
  call.args = {"0", in.lease_ms, s.field, in.publish, in.latch_ttl};
  call.arg_count = 5;
}

void transfer_call(const lock_identity& s, const release_inputs& in, release_script_call& call) {
  release_call(s, in, call);
  call.which = script::transfer;
  call.args[5] = in.to_field;
  call.args[6] = in.to_lease_ms;
  call.arg_count = 7;
}

/// Redisson publishes "0" (an unlock: one waiter per process may take it) or "1" (a read
/// unlock, or a forced one: everybody tries).
wake_policy on_unlock_message(std::string_view payload) noexcept {
  return payload == "1" ? wake_policy::all : wake_policy::one;
}

/// The owner's hold count now against the holds it had where the question ran: more means the
/// lost attempt ran. A hold two questions both see is claimed by the first answer only (the
/// shell raises server_holds as it records the hold).
bool ran(std::uint64_t server_holds, const resp3::value& count) noexcept {
  return integer_of(count) > static_cast<std::int64_t>(server_holds);
}

// --- reentrant --------------------------------------------------------------------------------

void reentrant_acquire(const lock_identity& s, std::string_view lease_ms,
                       acquire_script_call& call) {
  call.which = script::acquire;
  call.keys[0] = s.key;
  call.key_count = 1;
  call.args[0] = lease_ms;
  call.args[1] = s.field;
  call.arg_count = 2;
}

acquire_reply reentrant_decode(const resp3::value& reply) noexcept {
  acquire_reply out;
  if (reply.is_null()) {
    out.what = acquire_reply::outcome::acquired;
  } else if (reply.type == resp3::type::number) {
    out.what = acquire_reply::outcome::busy;
    out.ttl = std::chrono::milliseconds(reply.integer);
  }
  return out;
}

command reentrant_question(const lock_identity& s) {
  return command(command_kind::query, "HGET", {std::string_view(s.key)},
                 {std::string_view(s.field)});
}

reconcile_result reentrant_judge(std::uint64_t holds, const resp3::value& answer) noexcept {
  return {ran(holds, answer) ? reconcile_result::outcome::ran : reconcile_result::outcome::not_run};
}

// --- fenced -----------------------------------------------------------------------------------

void fenced_acquire(const lock_identity& s, std::string_view lease_ms, acquire_script_call& call) {
  call.which = script::acquire_fenced;
  if (call.scratch.empty()) call.scratch = token_counter(s.key);
  call.keys[0] = s.key;
  call.keys[1] = call.scratch;
  call.key_count = 2;
  call.args[0] = lease_ms;
  call.args[1] = s.field;
  call.arg_count = 2;
}

acquire_reply fenced_decode(const resp3::value& reply) noexcept {
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
    out.ttl = std::chrono::milliseconds(first.integer);
  }
  return out;
}

/// The hold count and the token counter, in one round trip (the counter shares the key's slot).
command fenced_question(const lock_identity& s) {
  command c = reentrant_question(s);
  const std::string counter = token_counter(s.key);
  c.then(command(command_kind::query, "GET", {std::string_view(counter)}).take_payload());
  return c;
}

/// A fenced acquisition whose answer (with its token) was lost: while the owner holds the lock
/// nobody else can acquire, so the counter moved since the lost attempt only by this owner's own
/// acquisitions: the value read is this acquisition's token or a later one of the same owner,
/// above every token an earlier holder got, which is what a fenced resource checks.
reconcile_result fenced_judge(std::uint64_t holds, const resp3::value& answer) noexcept {
  if (answer.type != resp3::type::array || answer.elements.size() != 2) return {};
  if (!ran(holds, answer.elements[0])) return {};
  const std::int64_t token = integer_of(answer.elements[1]);
  if (token <= 0) return {reconcile_result::outcome::ran_no_token};
  return {reconcile_result::outcome::ran, token};
}

}  // namespace

const lock_kind reentrant_kind{
    .name = "reentrant",
    .acquire_call = &reentrant_acquire,
    .decode = &reentrant_decode,
    .reconcile_question = &reentrant_question,
    .judge = &reentrant_judge,
    .release_call = &release_call,
    .transfer_call = &transfer_call,
    .renew = script::renew,
    .channel = &append_unlock_channel,
    .on_message = &on_unlock_message,
};

const lock_kind fenced_kind{
    .name = "fenced",
    .acquire_call = &fenced_acquire,
    .decode = &fenced_decode,
    .reconcile_question = &fenced_question,
    .judge = &fenced_judge,
    .release_call = &release_call,
    .transfer_call = nullptr,  // every acquisition takes a new token: no handoff
    .renew = script::renew,
    .channel = &append_unlock_channel,
    .on_message = &on_unlock_message,
};

}  // namespace rlock::detail
