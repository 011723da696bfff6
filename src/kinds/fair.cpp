// Redisson's RFairLock and RNonReentrantFairLock: a queue on the server, a channel per waiter,
// and rlock's handoff by push (scripts.hpp, RLOCK_FAIR_LUA).
#include "engine/define_kind.hpp"
#include "engine/engine_config.hpp"
#include "engine/probe_row.hpp"
#include "kinds/hash_lock.hpp"
#include "kinds/registry.hpp"
#include "rlock/config.hpp"
#include "watchdog/watchdog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace rlock::detail {

namespace {

using namespace hash_lock;

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
  call.args = {in.lease_ms, s.field, in.wait_ms, in.ticket, in.handoff, refusal, in.nap_base_ms};
  call.arg_count = 7;
}

/// What a release that grants the lock by push gives a waiter renewed by the watchdog:
/// config::fair_lock::handoff_claim, at most the watchdog's lease and at least four times its
/// margin (watchdog::margin: a shorter claim is lost before its renewal can answer). Zero
/// without handoff_by_push, and with sync_replicas (a grant would skip the replicas).
std::chrono::milliseconds fair_push_claim(const engine_config& c) {
  if (!c.fair_lock.handoff_by_push || c.sync_replicas.replicas > 0) return {};
  const auto margin = watchdog::margin_for(c.watchdog_timeout);
  return std::clamp(c.fair_lock.handoff_claim, 4 * margin, c.watchdog_timeout);
}

/// A fair attempt's arguments. The queue allowance is config::fair_lock::wait_timeout, the same
/// for every waiter whatever its caller's wait (which bounds the caller, not the queue): each
/// waiter's deadline is the one ahead of it plus its allowance, and a take moves every deadline
/// back by the taker's. With the callers' waits as allowances (before F1 found it), a take by a
/// waiter that asked to wait longer moved the deadlines behind it into the past: a live waiter
/// asleep until its push was dropped from the queue as stale and came back at its end, 2 s
/// later. Its naps are halves of its own wait (at most longest_server_wait); a single attempt
/// is never queued (no ticket); a waiter registers for a handoff by push with its lease (the
/// claim, renewed by the watchdog) and its allowance.
void fair_prepare(const attempt_facts& f, attempt_room& room, acquire_inputs& in) {
  const auto allowance = f.settings.fair_lock.wait_timeout;
  room.numbers[0].assign(allowance.count());
  in.wait_ms = room.numbers[0].view();
  in.trace_lasts = allowance;
  if (f.wait && f.wait->count() > 0) {
    room.numbers[1].assign(std::min(f.wait->count(), longest_server_wait.count()));
    in.nap_base_ms = room.numbers[1].view();
  } else {
    in.nap_base_ms = in.wait_ms;
  }
  if (!f.waits()) return;
  room.numbers[2].assign(f.ticket);
  in.ticket = room.numbers[2].view();
  if (const auto claim = fair_push_claim(f.settings); claim.count() > 0) {
    if (f.lease) {
      room.text.append(in.lease_ms);
    } else {
      room.text.append(decimal(claim.count()).view());
    }
    room.text.push_back(':');
    room.text.append(in.wait_ms);
    in.handoff = room.text;
  }
}

/// config::fair_lock: the queue allowance is added to the server's clock (a deadline past 2^31
/// ms is none a reader can use), and a grant by push must hold for some time.
std::string fair_settings_error(const config& c) {
  const auto& f = c.fair_lock;
  if (f.wait_timeout.count() <= 0 || f.wait_timeout > longest_server_wait) {
    return fmt::format("fair_lock.wait_timeout must be positive and at most {} ms, got {} ms",
                       longest_server_wait.count(), f.wait_timeout.count());
  }
  if (f.handoff_claim.count() <= 0) {
    return fmt::format("fair_lock.handoff_claim must be positive, got {} ms",
                       f.handoff_claim.count());
  }
  return {};
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

void fair_force(const lock_identity& s, const release_inputs& in, release_script_call& call) {
  call.which = script::force_unlock_fair;
  fair_keys(s.key, call);
  call.keys[4] = in.channel;
  call.keys[5] = in.latch;
  call.key_count = 6;
  call.args[0] = in.publish;
  call.args[1] = in.latch_ttl;
  call.arg_count = 2;
}

void fair_leave(const lock_identity& s, const leave_inputs& in, release_script_call& call) {
  call.which = script::leave_fair;
  fair_keys(s.key, call);
  call.keys[4] = in.channel;
  call.key_count = 5;
  call.args = {s.field, in.attempt.wait_ms, in.attempt.ticket, in.attempt.publish};
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

// rlock::inspect: the queue, each waiter's deadline and its registration for a grant by push.
void fair_probe_commands(std::string_view key, std::string_view, std::vector<probe_command>& out) {
  out.push_back({"LRANGE", probe_tagged(fair_queue_prefix, key), "0", "-1"});
  out.push_back({"ZRANGE", probe_tagged(fair_timeout_prefix, key), "0", "-1", "WITHSCORES"});
  out.push_back({"HGETALL", probe_tagged(fair_handoff_prefix, key)});
}

void fair_probe_read(const probe_answers& a, lock_info& info) {
  info.queue_key = probe_tagged(fair_queue_prefix, info.key);
  const auto& deadlines = a.own[1];
  const auto& handoffs = a.own[2].elements;
  for (const auto& e : a.own[0].elements) {
    queued_waiter w;
    w.owner = e.str;
    probe_each_scored(deadlines, [&](std::string_view member, const resp3::value* score) {
      if (member == w.owner && score != nullptr && a.now)
        w.deadline_in = probe_until(*score, *a.now);
    });
    // A registration for the handoff by push is the waiter's wait; "g:<n>" marks a grant.
    for (std::size_t i = 0; i + 1 < handoffs.size(); i += 2) {
      if (handoffs[i].str == w.owner) w.by_push = !handoffs[i + 1].str.starts_with("g:");
    }
    info.queue.push_back(std::move(w));
  }
}

bool fair_probe_claim(const probe_answers&, lock_info& info) { return !info.queue.empty(); }

constexpr probe_row fair_probe{
    .kind = key_kind::fair,
    .stored_as = "hash",
    .order = 20,  // a fair lock without waiters reads as a reentrant one
    .command_count = 3,
    .commands = &fair_probe_commands,
    .read = &fair_probe_read,
    .claim = &fair_probe_claim,
};

}  // namespace

constinit const lock_kind fair_kind = define_kind({
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
    .settings_error = &fair_settings_error,
    .prepare_attempt = &fair_prepare,
    .push_claim = &fair_push_claim,
    .probe = &fair_probe,
});

constinit const lock_kind non_reentrant_fair_kind = define_kind({
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
    .settings_error = &fair_settings_error,
    .prepare_attempt = &fair_prepare,
    .push_claim = &fair_push_claim,
});

}  // namespace rlock::detail
