// The kinds the engine runs, as descriptors: the reentrant lock (Redisson's RLock), the fenced
// lock (RFencedLock), the non-reentrant lock (RNonReentrantLock) and the fair locks (RFairLock,
// RNonReentrantFairLock). They share the hash and the renewal; they differ in the acquire script,
// its reply, what a lost acquire's reconciliation reads, and (fair) the queue, the channel per
// waiter and the release that passes the lock on.
#include "lock/lock_kind.hpp"
#include "lock/names.hpp"
#include "resp3/request.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <string>

namespace rlock::detail {

namespace {

std::int64_t integer_of(const resp3::value& v) noexcept {
  if (v.type == resp3::type::number) return v.integer;
  std::int64_t n = 0;
  if (!v.is_null()) std::from_chars(v.str.data(), v.str.data() + v.str.size(), n);
  return n;
}

// --- shared by both kinds ---------------------------------------------------------------------

/// Redisson's refusal of a re-acquire by a non-reentrant lock's holder.
constexpr std::string_view reentry_refusal = "NON_REENTRANT_REACQUIRE";
constexpr refusal reentry_refusals[] = {{"NON_REENTRANT_REACQUIRE", errc::reentry_refused}};

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

void force_call(const lock_identity& s, std::string_view channel, std::string_view publish,
                release_script_call& call) {
  call.which = script::force_unlock;
  call.keys = {s.key, channel};
  call.key_count = 2;
  call.args = {"0", publish};
  call.arg_count = 2;
}

/// Redisson publishes "0" (an unlock: one waiter per process may take it) or "1" (a read
/// unlock, or a forced one: everybody tries).
wake_policy on_unlock_message(std::string_view payload, std::uint32_t&) noexcept {
  return payload == "1" ? wake_policy::all : wake_policy::one;
}

/// The owner's hold count now against the holds it had where the question ran: more means the
/// lost attempt ran. A hold two questions both see is claimed by the first answer only (the
/// shell raises server_holds as it records the hold).
bool ran(std::uint64_t server_holds, const resp3::value& count) noexcept {
  return integer_of(count) > static_cast<std::int64_t>(server_holds);
}

// --- reentrant --------------------------------------------------------------------------------

void reentrant_acquire(const lock_identity& s, const acquire_inputs& in,
                       acquire_script_call& call) {
  call.which = script::acquire;
  call.keys[0] = s.key;
  call.key_count = 1;
  call.args[0] = in.lease_ms;
  call.args[1] = s.field;
  call.arg_count = 2;
}

acquire_reply reentrant_decode(const resp3::value& reply) noexcept {
  acquire_reply out;
  if (reply.is_null()) {
    out.what = acquire_reply::outcome::acquired;
  } else if (reply.type == resp3::type::number) {
    out.what = acquire_reply::outcome::busy;
    out.ttl = server_wait(reply.integer);
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

void fenced_acquire(const lock_identity& s, const acquire_inputs& in, acquire_script_call& call) {
  call.which = script::acquire_fenced;
  if (call.scratch.empty()) call.scratch = token_counter(s.key);
  call.keys[0] = s.key;
  call.keys[1] = call.scratch;
  call.key_count = 2;
  call.args[0] = in.lease_ms;
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
    out.ttl = server_wait(first.integer);
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

// --- non-reentrant ----------------------------------------------------------------------------

void non_reentrant_acquire(const lock_identity& s, const acquire_inputs& in,
                           acquire_script_call& call) {
  reentrant_acquire(s, in, call);
  call.which = script::acquire_non_reentrant;
  call.args[2] = reentry_refusal;
  call.arg_count = 3;
}

// --- fair ---------------------------------------------------------------------------------------

/// The fair lock's keys: the lock, its queue, its timeouts and the handoff registrations (in
/// `scratch`, views taken once it is complete), then the channel.
template <typename Call>
void fair_keys(std::string_view key, Call& call) {
  auto& names = call.scratch;
  names.clear();
  names.reserve(3 * key.size() + 72);
  append_tagged_name(fair_queue_prefix, key, names);
  const std::size_t queue_end = names.size();
  append_tagged_name(fair_timeout_prefix, key, names);
  const std::size_t timeouts_end = names.size();
  append_tagged_name(fair_handoff_prefix, key, names);
  const std::string_view all(names);
  call.keys[0] = key;
  call.keys[1] = all.substr(0, queue_end);
  call.keys[2] = all.substr(queue_end, timeouts_end - queue_end);
  call.keys[3] = all.substr(timeouts_end);
  call.key_count = 4;
}

void fair_acquire_with(const lock_identity& s, const acquire_inputs& in, std::string_view refusal,
                       acquire_script_call& call) {
  call.which = script::acquire_fair;
  fair_keys(s.key, call);
  call.args = {in.lease_ms, s.field, in.wait_ms, in.ticket, in.handoff, refusal};
  call.arg_count = 6;
}

void fair_acquire(const lock_identity& s, const acquire_inputs& in, acquire_script_call& call) {
  fair_acquire_with(s, in, {}, call);
}

void non_reentrant_fair_acquire(const lock_identity& s, const acquire_inputs& in,
                                acquire_script_call& call) {
  fair_acquire_with(s, in, reentry_refusal, call);
}

/// nil: acquired; -3: handed over by push already (the attempt restarted the lease); a number
/// >= -1: busy, sleep that long (-1: the holder has no TTL).
acquire_reply fair_decode(const resp3::value& reply) noexcept {
  acquire_reply out;
  if (reply.is_null() || (reply.type == resp3::type::number && reply.integer == -3)) {
    out.what = acquire_reply::outcome::acquired;
  } else if (reply.type == resp3::type::number && reply.integer >= -1) {
    out.what = acquire_reply::outcome::busy;
    out.ttl = server_wait(reply.integer);
  }
  return out;
}

void fair_release(const lock_identity& s, const release_inputs& in, release_script_call& call) {
  call.which = script::release_fair;
  fair_keys(s.key, call);
  call.keys[4] = in.channel;
  call.keys[5] = in.latch;
  call.key_count = 6;
  call.args = {in.lease_ms, s.field, in.publish, in.latch_ttl};
  call.arg_count = 4;
}

void fair_force(const lock_identity& s, std::string_view channel, std::string_view publish,
                release_script_call& call) {
  call.which = script::force_unlock_fair;
  fair_keys(s.key, call);
  call.keys[4] = channel;
  call.key_count = 5;
  call.args[0] = publish;
  call.arg_count = 1;
}

void fair_leave(const lock_identity& s, const leave_inputs& in, release_script_call& call) {
  call.which = script::leave_fair;
  fair_keys(s.key, call);
  call.keys[4] = in.channel;
  call.key_count = 5;
  call.args = {s.field, in.wait_ms, in.ticket, in.publish};
  call.arg_count = 4;
}

/// On a waiter's own channel: Redisson's "0" (the lock is free and it is this waiter's turn: it
/// acquires), or rlock's `g<ticket>` (the lock was handed to the acquisition with that ticket).
wake_policy on_fair_message(std::string_view payload, std::uint32_t& ticket) noexcept {
  if (payload.size() > 1 && payload.front() == 'g') {
    const auto* end = payload.data() + payload.size();
    auto [p, ec] = std::from_chars(payload.data() + 1, end, ticket);
    return ec == std::errc{} && p == end ? wake_policy::grant : wake_policy::none;
  }
  return payload == "1" ? wake_policy::all : wake_policy::one;
}

// --- spin ---------------------------------------------------------------------------------------

void spin_release(const lock_identity& s, const release_inputs& in, release_script_call& call) {
  call.which = script::release_spin;
  call.keys[0] = s.key;
  call.keys[1] = in.latch;
  call.key_count = 2;
  call.args = {in.lease_ms, s.field, in.latch_ttl};
  call.arg_count = 3;
}

void spin_force(const lock_identity& s, std::string_view, std::string_view,
                release_script_call& call) {
  call.which = script::force_unlock_spin;
  call.keys[0] = s.key;
  call.key_count = 1;
  call.arg_count = 0;
}

// --- read-write ---------------------------------------------------------------------------------

/// A write acquisition by an owner that holds the read lock would wait for itself.
constexpr std::string_view upgrade_refusal =
    "WRITE_AFTER_READ the owner holds this lock's read half; its write half would wait for "
    "itself (release the read holds first)";
constexpr refusal upgrade_refusals[] = {{"WRITE_AFTER_READ", errc::upgrade_refused}};

/// The read half's derived names in `scratch`: the owner's hold timeouts, then its write field.
void read_names(const lock_identity& s, std::string& names, std::size_t& timeouts_end) {
  names.clear();
  names.reserve(2 * s.key.size() + 2 * s.field.size() + 24);
  append_read_timeouts(s.key, s.field, names);
  timeouts_end = names.size();
  names.append(s.field).append(write_field_suffix);
}

void read_acquire(const lock_identity& s, const acquire_inputs& in, acquire_script_call& call) {
  call.which = script::acquire_read;
  std::size_t timeouts_end = 0;
  read_names(s, call.scratch, timeouts_end);
  const std::string_view names(call.scratch);
  call.keys[0] = s.key;
  call.keys[1] = names.substr(0, timeouts_end);
  call.key_count = 2;
  call.args = {in.lease_ms, s.field, names.substr(timeouts_end)};
  call.arg_count = 3;
}

/// The owner's read field: its write field without `:write`.
std::string_view read_field_of(std::string_view write_field) noexcept {
  return write_field.substr(0, write_field.size() - write_field_suffix.size());
}

void write_acquire(const lock_identity& s, const acquire_inputs& in, acquire_script_call& call) {
  call.which = script::acquire_write;
  call.keys[0] = s.key;
  call.key_count = 1;
  call.args = {in.lease_ms, s.field, read_field_of(s.field), upgrade_refusal};
  call.arg_count = 4;
}

void read_release(const lock_identity& s, const release_inputs& in, release_script_call& call) {
  call.which = script::release_read;
  auto& names = call.scratch;
  names.clear();
  names.reserve(2 * s.key.size() + s.field.size() + 24);
  append_read_timeouts(s.key, s.field, names);
  const std::size_t timeouts_end = names.size();
  append_read_timeouts(s.key, {}, names);
  const std::string_view all(names);
  call.keys = {s.key, in.channel, all.substr(0, timeouts_end), all.substr(timeouts_end), in.latch};
  call.key_count = 5;
  call.args = {"0", s.field, in.publish, in.latch_ttl};
  call.arg_count = 4;
}

void write_release(const lock_identity& s, const release_inputs& in, release_script_call& call) {
  call.which = script::release_write;
  call.scratch.clear();
  append_read_timeouts(s.key, {}, call.scratch);
  call.keys = {s.key, in.channel, in.latch, call.scratch};
  call.key_count = 4;
  call.args = {"1", in.lease_ms, s.field, in.publish, in.latch_ttl};
  call.arg_count = 5;
}

void read_force(const lock_identity& s, std::string_view channel, std::string_view publish,
                release_script_call& call) {
  call.which = script::force_unlock_read_write;
  call.keys[0] = s.key;
  call.keys[1] = channel;
  call.key_count = 2;
  call.args = {"read", "0", publish};
  call.arg_count = 3;
}

void write_force(const lock_identity& s, std::string_view channel, std::string_view publish,
                 release_script_call& call) {
  read_force(s, channel, publish, call);
  call.args[0] = "write";
  call.args[1] = "1";
}

// --- semaphore ----------------------------------------------------------------------------------

/// An acquisition of more permits than the total (try_set_permits') can never succeed.
constexpr std::string_view permits_refusal =
    "PERMITS_EXCEED_TOTAL the acquisition asks for more permits than the semaphore has in all";
/// Bad input: it can never succeed.
constexpr refusal permits_refusals[] = {{"PERMITS_EXCEED_TOTAL", errc::invalid_argument}};

/// The semaphore's derived keys (scripts.hpp, RLOCK_SEMAPHORE_LUA): holds, sizes, channel and
/// total in `names`, as views in keys[1..4] (keys[0] is the counter).
template <std::size_t Keys>
void semaphore_keys(std::string_view key, std::string& names,
                    std::array<std::string_view, Keys>& keys) {
  names.clear();
  names.reserve(4 * key.size() + 128);  // and room for a count: no reallocation after
  append_read_timeouts(key, {}, names);
  names.append(":timeout");
  const std::size_t holds_end = names.size();
  append_tagged_name(semaphore_sizes_prefix, key, names);
  const std::size_t sizes_end = names.size();
  append_semaphore_channel(key, names);
  const std::size_t channel_end = names.size();
  append_tagged_name(semaphore_total_prefix, key, names);
  const std::string_view all(names);
  keys[0] = key;
  keys[1] = all.substr(0, holds_end);
  keys[2] = all.substr(holds_end, sizes_end - holds_end);
  keys[3] = all.substr(sizes_end, channel_end - sizes_end);
  keys[4] = all.substr(channel_end);
}

void semaphore_acquire(const lock_identity& s, const acquire_inputs& in,
                       acquire_script_call& call) {
  call.which = script::acquire_semaphore;
  semaphore_keys(s.key, call.scratch, call.keys);
  call.key_count = 5;
  // The count after the names: the views above stay valid (reserved), this one is taken last.
  const std::size_t count_at = call.scratch.size();
  call.scratch.append(std::to_string(s.permits));
  call.args = {std::string_view(call.scratch).substr(count_at), s.field, in.lease_ms, in.publish,
               permits_refusal};
  call.arg_count = 5;
}

void semaphore_release(const lock_identity& s, const release_inputs& in,
                       release_script_call& call) {
  call.which = script::release_semaphore;
  semaphore_keys(s.key, call.scratch, call.keys);
  call.keys[5] = in.latch;
  call.key_count = 6;
  call.args = {s.field, in.publish, in.latch_ttl};
  call.arg_count = 3;
}

void semaphore_force(const lock_identity& s, std::string_view, std::string_view publish,
                     release_script_call& call) {
  call.which = script::force_release_semaphore;
  semaphore_keys(s.key, call.scratch, call.keys);
  call.key_count = 5;
  call.args = {s.field, publish};
  call.arg_count = 2;
}

/// The hold's expiry in the holds zset: present means the lost attempt took it.
command semaphore_question(const lock_identity& s) {
  std::string holds;
  append_read_timeouts(s.key, {}, holds);
  holds.append(":timeout");
  return command(command_kind::query, "ZSCORE", {std::string_view(holds)},
                 {std::string_view(s.field)});
}

reconcile_result semaphore_judge(std::uint64_t holds, const resp3::value& answer) noexcept {
  // One hold per owner: an owner that holds already counts nothing more.
  const bool ran = !answer.is_null() && !answer.is_error() && holds == 0;
  return {ran ? reconcile_result::outcome::ran : reconcile_result::outcome::not_run};
}

/// A hold is there or not: 1 or 0.
std::int64_t semaphore_count(const resp3::value& answer) noexcept {
  return answer.is_null() || answer.is_error() ? 0 : 1;
}

/// Redisson's semaphore message is the new count: wake as many waiters (each takes what it
/// asked for, or sleeps again).
wake_policy on_semaphore_message(std::string_view payload, std::uint32_t& count) noexcept {
  std::int64_t value = 0;
  const auto* end = payload.data() + payload.size();
  auto [p, ec] = std::from_chars(payload.data(), end, value);
  if (ec != std::errc{} || p != end || value <= 0) return wake_policy::none;
  count = static_cast<std::uint32_t>(std::min<std::int64_t>(value, 1 << 30));
  return wake_policy::some;
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
    .force_call = &force_call,
    .leave_call = nullptr,
    .renew = script::renew,
    .channel = &append_unlock_channel,
    .waiting = wait_mode::lock_channel,
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
    .force_call = &force_call,
    .leave_call = nullptr,
    .renew = script::renew,
    .channel = &append_unlock_channel,
    .waiting = wait_mode::lock_channel,
    .on_message = &on_unlock_message,
};

const lock_kind non_reentrant_kind{
    .name = "non-reentrant",
    .acquire_call = &non_reentrant_acquire,
    .decode = &reentrant_decode,
    .reconcile_question = &reentrant_question,
    .judge = &reentrant_judge,
    .release_call = &release_call,
    .transfer_call = &transfer_call,  // the new owner holds it once, as its acquire would
    .force_call = &force_call,
    .leave_call = nullptr,
    .renew = script::renew,
    .channel = &append_unlock_channel,
    .waiting = wait_mode::lock_channel,
    .on_message = &on_unlock_message,
    .refusals = reentry_refusals,
};

const lock_kind fair_kind{
    .name = "fair",
    .acquire_call = &fair_acquire,
    .decode = &fair_decode,
    .reconcile_question = &reentrant_question,
    .judge = &reentrant_judge,
    .release_call = &fair_release,
    .transfer_call = nullptr,  // the queue's head is next, not a waiter of this client
    .force_call = &fair_force,
    .leave_call = &fair_leave,
    .renew = script::renew,
    .channel = &append_unlock_channel,
    .waiting = wait_mode::queue,
    .on_message = &on_fair_message,
};

const lock_kind non_reentrant_fair_kind{
    .name = "non-reentrant-fair",
    .acquire_call = &non_reentrant_fair_acquire,
    .decode = &fair_decode,
    .reconcile_question = &reentrant_question,
    .judge = &reentrant_judge,
    .release_call = &fair_release,
    .transfer_call = nullptr,
    .force_call = &fair_force,
    .leave_call = &fair_leave,
    .renew = script::renew,
    .channel = &append_unlock_channel,
    .waiting = wait_mode::queue,
    .on_message = &on_fair_message,
    .refusals = reentry_refusals,
};

const lock_kind spin_kind{
    .name = "spin",
    .acquire_call = &reentrant_acquire,  // RSpinLock's acquire is RLock's
    .decode = &reentrant_decode,
    .reconcile_question = &reentrant_question,
    .judge = &reentrant_judge,
    .release_call = &spin_release,
    .transfer_call = nullptr,  // its waiters are not in the hub: nobody to hand over to
    .force_call = &spin_force,
    .leave_call = nullptr,
    .renew = script::renew,
    .channel = &append_unlock_channel,  // names the latch's neighbour only: never subscribed
    .waiting = wait_mode::poll,
    .on_message = &on_unlock_message,
};

const lock_kind read_kind{
    .name = "read",
    .acquire_call = &read_acquire,
    .decode = &reentrant_decode,
    .reconcile_question = &reentrant_question,  // the owner's read count
    .judge = &reentrant_judge,
    .release_call = &read_release,
    .transfer_call = nullptr,  // readers share: nothing to hand over
    .force_call = &read_force,
    .leave_call = nullptr,
    .renew = script::renew_read_write,
    .channel = &append_rwlock_channel,
    .waiting = wait_mode::lock_channel,
    .on_message = &on_unlock_message,  // "0" after the last reader: one; "1" after a writer: all
    .field_suffix = {},
};

const lock_kind write_kind{
    .name = "write",
    .acquire_call = &write_acquire,
    .decode = &reentrant_decode,
    .reconcile_question = &reentrant_question,  // the owner's write count
    .judge = &reentrant_judge,
    .release_call = &write_release,
    .transfer_call = nullptr,
    .force_call = &write_force,
    .leave_call = nullptr,
    .renew = script::renew_read_write,
    .channel = &append_rwlock_channel,
    .waiting = wait_mode::lock_channel,
    .on_message = &on_unlock_message,
    .field_suffix = write_field_suffix,
    .refusals = upgrade_refusals,
};

void semaphore_admin_call(const lock_identity& s, std::string_view what, std::string_view n,
                          std::string_view publish, std::string_view latch,
                          std::string_view latch_ttl, release_script_call& call) {
  call.which = script::semaphore_admin;
  semaphore_keys(s.key, call.scratch, call.keys);
  call.keys[5] = latch;
  call.key_count = 6;
  call.args = {what, n, publish, latch_ttl};
  call.arg_count = 4;
}

const lock_kind semaphore_kind{
    .name = "semaphore",
    .acquire_call = &semaphore_acquire,
    .decode = &reentrant_decode,  // nil: taken; a number: how long to sleep at most
    .reconcile_question = &semaphore_question,
    .judge = &semaphore_judge,
    .release_call = &semaphore_release,
    .transfer_call = nullptr,
    .force_call = &semaphore_force,
    .leave_call = nullptr,
    .renew = script::renew_semaphore,
    .channel = &append_semaphore_channel,
    .waiting = wait_mode::lock_channel,
    .on_message = &on_semaphore_message,
    .count_question = &semaphore_question,
    .count_of = &semaphore_count,
    .field_suffix = {},
    .permit_id_field = true,
    .refusals = permits_refusals,
};

}  // namespace rlock::detail
