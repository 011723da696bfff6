#pragma once

#include "rlock/error.hpp"

// A lock kind as data: everything the acquire engine (acquire_fsm, the acquire and release
// operations), the wait hub and the watchdog need to know about one kind of Redisson lock. The
// engine branches on nothing else, so a new kind is a new descriptor, its scripts and its API
// header (docs/design/adding-a-kind.md).
#include "engine/acquire_reply.hpp"
#include "engine/decimal.hpp"
#include "notify/wake_policy.hpp"
#include "resp3/value.hpp"
#include "script/scripts.hpp"
#include "session/command.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace rlock {
struct config;
}  // namespace rlock

namespace rlock::detail {

struct engine_config;
struct probe_row;

/// What a kind sees of a lock: the key and the owner's hash field. Nothing of the client: a kind
/// builds commands and reads replies, the engine does the I/O.
struct lock_identity {
  std::string_view key;
  std::string_view field;
  /// A semaphore hold's size (lock_state::permits); 1 for every lock.
  std::uint32_t permits = 1;
};

/// The keys and arguments of one script call, viewing the lock's state and `scratch` (keys the
/// kind derives, such as the fenced lock's token counter or the fair lock's queue): filled in
/// place, no allocation for a kind that derives nothing. Built per request, never kept while a
/// waiter sleeps.
template <std::size_t Keys, std::size_t Args>
struct basic_script_call {
  script which{};
  std::array<std::string_view, Keys> keys{};
  std::array<std::string_view, Args> args{};
  std::uint8_t key_count = 0;
  std::uint8_t arg_count = 0;
  std::string scratch;
  /// The request latch a latched call run by run_script names among its keys: deleted once the
  /// call is answered (the latch sweeper), as an unlock's is; empty: none.
  std::string_view latch;

  std::span<const std::string_view> key_span() const noexcept { return {keys.data(), key_count}; }
  std::span<const std::string_view> arg_span() const noexcept { return {args.data(), arg_count}; }
};
/// An acquire attempt: up to 5 keys and 7 arguments (a semaphore's counter, holds, sizes,
/// channel and total; a fair lock's queue, timeouts and handoff registrations, its allowance,
/// ticket, registration and nap).
using acquire_script_call = basic_script_call<5, 7>;
/// A release or a handoff: the fair lock's 6 keys (its own 5 and the latch), or the latched
/// unlock's 3; up to 7 arguments. Also a fair waiter's leave and a force unlock.
using release_script_call = basic_script_call<6, 7>;

/// What an acquire attempt needs beyond the state. The engine sets the lease, the publish
/// command and the caller's argument; the rest are a kind's own arguments, set by its
/// prepare_attempt (empty otherwise).
struct acquire_inputs {
  std::string_view lease_ms;
  /// `publish` or `spublish` (a semaphore's attempt tells waiters of the permits it gives back).
  std::string_view publish;
  /// Fair kinds: the allowance for the waiter's queue deadline (Redisson's threadWaitTime), the
  /// same for every waiter (config::fair_lock::wait_timeout).
  std::string_view wait_ms;
  /// Fair kinds: the caller's own wait (its config::fair_lock::wait_timeout without one), whose
  /// half a waiting attempt sleeps at most before it looks again (a dead head is passed then).
  std::string_view nap_base_ms;
  /// Fair kinds: the acquisition's ticket in decimal, naming it in a handoff by push; empty for
  /// a single attempt (which never joins the queue).
  std::string_view ticket;
  /// Fair kinds: `<lease>:<wait>` to register for a handoff by push; empty: Redisson's protocol.
  std::string_view handoff;
  /// How long a waiting acquisition's mark on the lock lives (config::read_write_lock's
  /// writer_mark_lease), for a kind whose waiters mark it (a writer under rw_priority::writers);
  /// empty for a single attempt, which waits for nothing and so marks nothing.
  std::string_view mark_ms;
  /// How long a counter the kind keeps beside the lock lives after this acquisition
  /// (config::fenced_lock's token_idle_ttl, for the fenced kind's clock-bounded tokens); empty:
  /// forever (Redisson's counter).
  std::string_view token_ttl_ms;
  /// What the caller gave the acquisition beyond the lease (lock_state::argument, set by the
  /// engine for a kind that takes_argument): an election campaign's value; empty otherwise.
  std::string_view argument;
  /// How long what a waiting attempt leaves on the server lasts (a fair queue entry, a writer's
  /// mark): the bound of the leave that undoes it (lock_kind::leave_call).
  std::chrono::milliseconds trace_lasts{};
};

/// An acquisition as a kind's prepare_attempt sees it.
struct attempt_facts {
  /// The client's settings: a kind reads its own section (config::fair_lock, ...).
  const engine_config& settings;
  std::optional<std::chrono::milliseconds> lease;  // none: the watchdog's, renewed
  std::optional<std::chrono::milliseconds> wait;   // none: no bound; zero: a single attempt
  std::uint32_t ticket = 0;                        // the acquisition's (engine_context)
  /// Not a single attempt: it may wait, so it may leave a trace (a place in a queue, a mark).
  bool waits() const noexcept { return !wait || wait->count() != 0; }
};

/// Where a kind formats the arguments it adds to one attempt (acquire_inputs views them): kept
/// until the call is written, never while a waiter sleeps.
struct attempt_room {
  decimal numbers[3];
  std::string text;
};

/// What a release script call needs beyond the state: views the release operation owns.
struct release_inputs {
  std::string_view channel;
  std::string_view latch;      // the unlock latch key (one per unlock, reused by retries)
  std::string_view lease_ms;   // what a nested release sets the TTL to
  std::string_view latch_ttl;  // how long the latch keeps the first answer
  std::string_view publish;    // `publish` or `spublish`
  /// A local handoff (lock_kind::transfer_call): the owner the lock goes to, and its lease.
  std::string_view to_field;
  std::string_view to_lease_ms;
};

/// What a waiter that gives up needs to leave a fair queue, or to take back its mark.
struct leave_inputs {
  std::string_view channel;  // the lock's unlock channel (the next waiter's is derived)
  /// What its attempts were given (prepared again: the allowance to give back, its ticket).
  const acquire_inputs& attempt;
};

/// What the answer to a reconcile question says about a lost attempt.
struct reconcile_result {
  enum class outcome : std::uint8_t {
    ran,           // the attempt took a hold
    not_run,       // it did not (and should not any more)
    ran_no_token,  // it ran, but its result (the fenced token) cannot be recovered
  };
  outcome what = outcome::not_run;
  std::int64_t token = 0;
};

/// An error reply a kind's script makes on purpose, by the word it carries, and the rlock error
/// it stands for (Redis's text travels beside the code). The session layer knows no such words.
struct refusal {
  std::string_view word;
  errc code;
};

/// How a kind's waiters wait for their turn.
enum class wait_mode : std::uint8_t {
  /// On the lock's channel, which its unlocks publish on; a message wakes one or all.
  lock_channel,
  /// In a queue on the server, each on its own channel `<channel>:<owner field>`, where a release
  /// may hand it the lock (a grant by push, named by the acquisition's ticket); a waiter that
  /// gives up leaves the queue (`leave_call`). The fair locks.
  queue,
  /// On nothing: it sleeps with config::spin_lock's backoff and tries again. The spin lock, whose
  /// releases publish nothing (and so hand nothing over locally either).
  poll,
};

/// A polling waiter's sleeps so far (wait_mode::poll): what lock_kind::backoff reads and moves.
struct backoff_state {
  std::uint8_t naps = 0;      // sleeps so far (the jitter grows with them)
  std::uint32_t next_ms = 0;  // the next sleep; 0: none yet
};

/// A kind's descriptor. Every field has a default, so a kind sets what it has; the rules that
/// tie the fields together are checked when it is defined (define_kind.hpp).
struct lock_kind {
  /// For logs and the owner table ("reentrant", "fenced", "fair", ...).
  std::string_view name = {};

  /// The acquire attempt: KEYS and ARGV of the kind's acquire script.
  void (*acquire_call)(const lock_identity& s, const acquire_inputs& in,
                       acquire_script_call& call) = nullptr;
  /// Its reply: acquired (with a token, if the kind has them) or busy (with the holder's TTL, or
  /// how long to sleep without a message), malformed otherwise. An error reply (a refusal such
  /// as NON_REENTRANT_REACQUIRE) never reaches it: `refusals` name it.
  acquire_reply (*decode)(const resp3::value& reply) noexcept = nullptr;

  /// After an attempt's answer was lost: one round trip whose answer, judged against the holds
  /// the server counted for this owner as answers in order tell it (lock_state::server_holds),
  /// says whether the attempt ran. Queries only: they may be asked again after a reconnect.
  command (*reconcile_question)(const lock_identity& s) = nullptr;
  reconcile_result (*judge)(std::uint64_t server_holds,
                            const resp3::value& answer) noexcept = nullptr;

  /// The release of one hold (Redisson's latched unlock): KEYS and ARGV of its script; the reply
  /// is nil (not the owner), 0 (still held) or 1 (released and published).
  void (*release_call)(const lock_identity& s, const release_inputs& in,
                       release_script_call& call) = nullptr;
  /// A final release that hands the lock to another owner of this client in the same script
  /// (config::local_handoff): the release's KEYS and ARGV plus `in.to_field` and
  /// `in.to_lease_ms`; the reply is nil, 0, or 2 (handed over: the new owner holds it once).
  /// Null: the kind does not hand off locally (a fenced acquisition must take a new token; a
  /// fair lock hands over to the head of its queue only).
  void (*transfer_call)(const lock_identity& s, const release_inputs& in,
                        release_script_call& call) = nullptr;
  /// force_unlock: deletes the lock whoever holds it and tells its waiters; 1 if it was locked.
  /// Latched as a release is (`in.latch`, `in.latch_ttl`; `in.channel`, `in.publish`; the rest
  /// unused): written again after a lost answer, its retry answers the first run's answer and
  /// deletes nothing, not even a lock another owner took since.
  void (*force_call)(const lock_identity& s, const release_inputs& in,
                     release_script_call& call) = nullptr;

  /// The script a waiter that gives up (out of time, cancelled, failed) runs to undo what its
  /// waiting attempts left on the server: a fair waiter leaves the queue (wait_mode::queue), a
  /// writer takes back its mark (rw_priority::writers). Idempotent (a release-kind command,
  /// written again after a reconnect). Null: a waiter leaves nothing.
  void (*leave_call)(const lock_identity& s, const leave_inputs& in,
                     release_script_call& call) = nullptr;

  /// The watchdog's batched renewal: KEYS = lock keys, ARGV[1] = lease ms, ARGV[i + 1] = the
  /// owner field of KEYS[i]; one 1 (renewed) or 0 (no longer ours) per key.
  script renew = script::renew;

  /// The channel its unlocks publish on (appended to `out`), and whom a message there wakes.
  void (*channel)(std::string_view key, std::string& out) = nullptr;
  /// How its waiters wait for their turn (the shell's only question about waiting).
  wait_mode waiting = wait_mode::lock_channel;
  message_policy on_message = nullptr;
  /// This owner's hold count in one round trip (is_held(), hold_count()), for a kind whose
  /// holds are not counts in the lock's hash (a semaphore's are in its holds zset); null: `HGET
  /// <key> <field>`.
  command (*count_question)(const lock_identity& s) = nullptr;
  std::int64_t (*count_of)(const resp3::value& answer) noexcept = nullptr;
  /// Appended to `<client uuid>:<owner>` to make the owner's hash field: `:write` for the
  /// read-write lock's write half, so one owner's two halves are two fields of one hash.
  std::string_view field_suffix = {};
  /// The owner's field is a Redisson permit id (RPermitExpirableSemaphore): 16 bytes on the wire
  /// (permit_id.hpp), shown as 32 lowercase hex digits; false: `<client uuid>:<owner>` + suffix.
  bool permit_id_field = false;
  /// The refusals its acquire script makes (a re-acquire of a non-reentrant lock by its holder,
  /// a write by an owner that reads, more permits than a semaphore has): what they mean.
  std::span<const refusal> refusals = {};
  /// What is wrong with the client's settings for this kind (its own section of the config:
  /// config::fair_lock, ...), in words naming the setting and what it must be; empty: nothing.
  /// Every registered kind is asked when a client is made (kinds/registry.hpp), so a setting's
  /// check lives beside the kind that reads it.
  std::string (*settings_error)(const config& c) = nullptr;
  /// A kind's own attempt arguments (acquire_inputs' fair, mark and token fields) from its own
  /// settings and the acquisition's facts, formatted into `room`; null: none.
  void (*prepare_attempt)(const attempt_facts& f, attempt_room& room, acquire_inputs& in) = nullptr;
  /// A kind whose releases grant the lock by push (the fair kinds with handoff_by_push): what
  /// the server gives a waiter renewed by the watchdog, until its renewal runs
  /// (config::fair_lock::handoff_claim). Null, or zero: no grant by push.
  std::chrono::milliseconds (*push_claim)(const engine_config& c) = nullptr;
  /// wait_mode::poll: how long a waiter sleeps before its next attempt (at most until its next
  /// look at the lock anyway), advancing `state`; null for the other modes.
  std::chrono::milliseconds (*backoff)(const engine_config& c, backoff_state& state) = nullptr;
  /// A wake of one (wake_policy::one) goes to this kind's oldest waiter before any older one of
  /// another kind on the channel: the write half under rw_priority::writers, whom the readers
  /// sharing its channel wait for (a reader woken first would only find the writer's mark).
  bool woken_first = false;
  /// Whether other owners' holds change the key while this owner holds it (read holds of a
  /// read-write lock, a semaphore's permits): a tracking invalidation of the key then says
  /// nothing about this hold, and is not checked (a FLUSHALL or a reconnection still is).
  bool shared_key = false;
  /// Whether its acquisitions pass the caller's argument (lock_state::argument,
  /// acquire_inputs::argument): an election's campaign value. Asked per attempt, so a kind
  /// without one costs no lookup.
  bool takes_argument = false;
  /// Whether an acquisition takes a hold. False for a kind that only waits for a condition on
  /// the server (a count-down latch's zero): "acquired" means the condition holds; nothing is
  /// recorded, renewed, released or given back, and no acquisition metrics are counted.
  bool takes_hold = true;
  /// How rlock::inspect tells this kind's keys apart (engine/probe_row.hpp); null: the kind
  /// reads as another's (a spin or non-reentrant lock as a reentrant one, a read half as its
  /// write half). One row per key_kind, on one of the kind's descriptors.
  const probe_row* probe = nullptr;
};

/// The rlock error an error reply of `kind`'s script stands for: its refusal's, if the text
/// carries one of its words, else `otherwise` (what the session made of it).
inline std::error_code refusal_code(const lock_kind& kind, std::string_view text,
                                    std::error_code otherwise) noexcept {
  for (const auto& r : kind.refusals) {
    if (text.find(r.word) != std::string_view::npos) return make_error_code(r.code);
  }
  return otherwise;
}

}  // namespace rlock::detail
