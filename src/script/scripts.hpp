#pragma once

// All Lua rlock sends, in one place. The lock scripts are Redisson's own, byte for byte in
// meaning, so that a Java service using Redisson and a C++ service using rlock share one lock.

#include "session/command.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rlock::detail {

enum class script : std::uint8_t {
  acquire,
  release,
  renew,
  force_unlock,
  acquire_fenced,
  acquire_fenced_clocked,
  transfer,
  acquire_non_reentrant,
  acquire_fair,
  release_fair,
  leave_fair,
  force_unlock_fair,
  release_spin,
  force_unlock_spin,
  acquire_read,
  acquire_write,
  acquire_read_writers_first,
  acquire_write_writers_first,
  leave_write,
  release_read,
  release_write,
  renew_read_write,
  force_unlock_read_write,
  acquire_semaphore,
  release_semaphore,
  renew_semaphore,
  force_release_semaphore,
  semaphore_admin,
  latch_wait,
  latch_try_set,
  latch_count_down,
  latch_delete,
  raise_quorum_token,
  election_campaign,
  election_resign,
  election_proclaim,
  election_leader,
  quorum_election_announce,
  count,  // not a script: how many there are (script_table has a row for each)
};

/// Why a script whose answer was lost may be written again (or why it is not): the fault
/// model's table (docs/design/fault-model.md), said of each script where its Lua is.
enum class on_retry : std::uint8_t {
  reconciled,  // an acquire: never written again; the lock asks the server whether it ran
  reads_only,  // changes nothing: asked again
  same_twice,  // its second run changes nothing more and answers the same (a renewal)
  latched,     // its first answer is kept under a request latch key, which a retry returns
};

/// One script of the table below.
struct script_row {
  script id;
  command_kind kind;
  bool changes_lock;
  on_retry retry;
  std::string_view source;
};

// The fair lock's shared Lua (Redisson's RFairLock, with rlock's handoff by push), pasted into
// each of its scripts by the preprocessor. Every fair script takes the same first keys: KEYS[1] =
// lock key, KEYS[2] = queue `redisson_lock_queue:{<key>}` (owner fields, FIFO), KEYS[3] = timeouts
// `redisson_lock_timeout:{<key>}` (owner field -> deadline, ms since the epoch), KEYS[4] = handoff
// registrations `rlock_fair_handoff:{<key>}` (rlock's only key), KEYS[5] = the unlock channel
// `redisson_lock__channel:{<key>}` (a waiter listens on `<channel>:<owner field>`).
//
// The handoff hash: an rlock waiter that will take the lock from a push alone registers
// `<lease>:<wait>:<ticket>` under its owner field (the ticket names its acquisition); a release
// that finds it at the queue's head makes it the holder inside the script (what its own acquire
// would have done), records `granted` = `<ticket>:<owner field>` and publishes `g<ticket>` on its
// channel. A Redisson waiter (never registered) gets Redisson's `0` and runs its own acquire. The
// grant is claimed by the acquisition's own attempt if the push was lost, or given back by its
// leave script if it gave up meanwhile; a ticket names one acquisition only, so a grant nobody
// claims needs no deleting: the hash goes when the queue is empty at a release, or expires with
// the last registration it needs (the grant is written before the head's registration goes, so
// the hash never empties there and keeps that expiry).
//
// Deadlines use the server's clock (`TIME`); Redisson's scripts use their client's clock, so a
// skew between them shifts whose deadline is taken as passed: fairness, never exclusion (the
// hash's PEXPIRE is the server's). Written for few calls: the release runs on every handoff.
#define RLOCK_FAIR_LUA                                                                       \
  "local function now_ms() local t = redis.call('time'); "                                   \
  "return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000); end; "                  \
  "local function keep(ms) ms = math.max(math.floor(ms), 1000); "                            \
  "if redis.call('pttl', KEYS[4]) < ms then redis.call('pexpire', KEYS[4], ms); end; end; "  \
  "local function head_after_stale(now) while true do "                                      \
  "local head = redis.call('lindex', KEYS[2], 0); if head == false then return false; end; " \
  "local d = redis.call('zscore', KEYS[3], head); "                                          \
  "if d == false or tonumber(d) > now then return head; end; "                               \
  "redis.call('zrem', KEYS[3], head); redis.call('lpop', KEYS[2]); "                         \
  "redis.call('hdel', KEYS[4], head); end; end; "                                            \
  "local function take(field, lease, wait) "                                                 \
  "redis.call('lpop', KEYS[2]); redis.call('zrem', KEYS[3], field); "                        \
  "local ws = redis.call('zrange', KEYS[3], 0, -1); "                                        \
  "for i = 1, #ws, 1 do redis.call('zincrby', KEYS[3], -tonumber(wait), ws[i]); end; "       \
  "redis.call('hset', KEYS[1], field, 1); redis.call('pexpire', KEYS[1], lease); end; "      \
  "local function pass_on(head, publish) "                                                   \
  "if head == false then redis.call('del', KEYS[4]); return; end; "                          \
  "local r = redis.call('hget', KEYS[4], head); "                                            \
  "if r ~= false then "                                                                      \
  "local lease, wait, ticket = string.match(r, '^(%d+):(%d+):(%d+)$'); "                     \
  "if lease ~= nil then "                                                                    \
  "take(head, lease, wait); "                                                                \
  "redis.call('hset', KEYS[4], 'granted', ticket .. ':' .. head); "                          \
  "redis.call('hdel', KEYS[4], head); "                                                      \
  "redis.call(publish, KEYS[5] .. ':' .. head, 'g' .. ticket); return; end; end; "           \
  "redis.call(publish, KEYS[5] .. ':' .. head, '0'); end; "

// A request latch (the unlock latch's mechanism, for any change): the key the script names
// `latch` first (`redisson_unlock_latch:{<key>}:<request id>`, named once per call and reused by
// every retry) keeps the first run's integer answer for `latch_ttl` ms. A run that finds it
// returns it and changes nothing; `return latched(r)` keeps `r` and answers it.
#define RLOCK_LATCHED_LUA                                                                     \
  "local done = redis.call('get', latch); if done ~= false then return tonumber(done); end; " \
  "local function latched(r) redis.call('set', latch, r, 'px', latch_ttl); return r; end; "

// The server's clock in ms, as `now` (rlock's scripts that keep times on the server).
#define RLOCK_NOW_MS_LUA           \
  "local t = redis.call('time'); " \
  "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000); "

// Redisson's read acquire after `mode` (KEYS, ARGV: acquire_read's): the lock is taken when
// free, shared when read, entered by its writer (a downgrade); otherwise the PTTL.
#define RLOCK_READ_ACQUIRE_LUA                                                                 \
  "if (mode == false) then "                                                                   \
  "redis.call('hset', KEYS[1], 'mode', 'read'); "                                              \
  "redis.call('hset', KEYS[1], ARGV[2], 1); "                                                  \
  "redis.call('set', KEYS[2] .. ':1', 1, 'px', ARGV[1]); "                                     \
  "redis.call('pexpire', KEYS[1], ARGV[1]); "                                                  \
  "return nil; "                                                                               \
  "end; "                                                                                      \
  "if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) " \
  "then "                                                                                      \
  "local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1); "                                   \
  "redis.call('set', KEYS[2] .. ':' .. ind, 1, 'px', ARGV[1]); "                               \
  "redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1]))); " \
  "return nil; "                                                                               \
  "end; "                                                                                      \
  "return redis.call('pttl', KEYS[1]);"

// Redisson's write acquire up to its busy answer (KEYS, ARGV: acquire_write's), running
// `taken` when it takes a free lock: taken or re-entered, nil; the owner reads, the refusal.
#define RLOCK_WRITE_ACQUIRE_LUA(taken)                                            \
  "local mode = redis.call('hget', KEYS[1], 'mode'); "                            \
  "if (mode == false) then "                                                      \
  "redis.call('hset', KEYS[1], 'mode', 'write'); "                                \
  "redis.call('hset', KEYS[1], ARGV[2], 1); "                                     \
  "redis.call('pexpire', KEYS[1], ARGV[1]); " taken                               \
  "return nil; "                                                                  \
  "end; "                                                                         \
  "if (mode == 'write') and (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " \
  "redis.call('hincrby', KEYS[1], ARGV[2], 1); "                                  \
  "redis.call('pexpire', KEYS[1], redis.call('pttl', KEYS[1]) + ARGV[1]); "       \
  "return nil; "                                                                  \
  "end; "                                                                         \
  "if redis.call('hexists', KEYS[1], ARGV[3]) == 1 then "                         \
  "return redis.error_reply(ARGV[4]); end; "

// rlock's writers first (KEYS[1] lock, KEYS[2] marks, KEYS[3] queue, ARGV[2] this writer's
// field, `now`): `turn` is when the mark of the writer that has waited longest ends if a free
// lock is that writer's and not this one's, nil otherwise. Queued writers whose marks lapsed go
// (bounded: each pass drops one).
#define RLOCK_WRITER_TURN_LUA                                            \
  "local turn = nil; "                                                   \
  "if redis.call('exists', KEYS[1]) == 0 then "                          \
  "for i = 1, 1000 do "                                                  \
  "local first = redis.call('zrange', KEYS[3], 0, 0)[1]; "               \
  "if first == nil or first == ARGV[2] then break; end; "                \
  "local ends = tonumber(redis.call('zscore', KEYS[2], first) or '0'); " \
  "if ends > now then turn = ends; break; end; "                         \
  "redis.call('zrem', KEYS[3], first); "                                 \
  "end; end; "

// Taking the lock ends the writer's wait: its mark and its place go.
#define RLOCK_WRITER_TAKEN_LUA \
  "redis.call('zrem', KEYS[2], ARGV[2]); redis.call('zrem', KEYS[3], ARGV[2]); "

// A writer answered `ttl` that waits (ARGV[5], its mark's life, is not empty) marks the lock
// (expired marks go) and keeps its place or queues, and is answered at most half the mark's
// life, so that it comes back (renewing its mark) before the mark lapses.
#define RLOCK_WRITER_WAITS_LUA                                             \
  "if ARGV[5] ~= '' then "                                                 \
  "local life = tonumber(ARGV[5]); "                                       \
  "redis.call('zremrangebyscore', KEYS[2], '-inf', now); "                 \
  "redis.call('zadd', KEYS[2], now + life, ARGV[2]); "                     \
  "redis.call('zadd', KEYS[3], 'NX', now, ARGV[2]); "                      \
  "for _, k in ipairs({KEYS[2], KEYS[3]}) do "                             \
  "redis.call('pexpire', k, math.max(redis.call('pttl', k), life)); end; " \
  "local back = math.max(math.floor(life / 2), 1); "                       \
  "if ttl < 0 or ttl > back then ttl = back; end; "                        \
  "end; "

// The read-write lock's shared Lua: the longest remaining lease among the read holds of
// KEYS[1] (every owner field with a count; a writer's field has no hold timeouts), whose
// timeouts are `<base>:<owner field>:rwlock_timeout:<n>` with base = `{<key>}`.
#define RLOCK_READ_TIMEOUTS_LUA                                                                    \
  "local function longest_read_hold(key, base) local longest = -3; "                               \
  "for _, f in ipairs(redis.call('hkeys', key)) do "                                               \
  "local count = tonumber(redis.call('hget', key, f)); "                                           \
  "if type(count) == 'number' then for n = count, 1, -1 do "                                       \
  "longest = math.max(longest, redis.call('pttl', base .. ':' .. f .. ':rwlock_timeout:' .. n)); " \
  "end; end; end; return longest; end; "

// The semaphores' shared Lua. Every semaphore script takes the same first keys: KEYS[1] = the
// counter `<key>` (Redisson's RSemaphore and RPermitExpirableSemaphore), KEYS[2] = the holds
// `{<key>}:timeout` (RPermitExpirableSemaphore's zset: permit id -> expiry ms), KEYS[3] = the
// size of each hold of more than one permit `rlock_semaphore_permits:{<key>}` (rlock's; absent
// means 1), KEYS[4] = the channel `redisson_sc:{<key>}`, KEYS[5] = the total `rlock_semaphore_
// total:{<key>}` (rlock's, written by try_set_permits). rlock keeps every hold it makes in the
// zset, so a hold whose holder died comes back at its lease's end, for both kinds; Redisson's
// RSemaphore clients share the counter and the channel. Expiries use the server's clock
// (Redisson's the client's: a skew moves when a dead holder's permits come back). Hold ids are
// Redisson's permit ids: 16 bytes (permit_id.hpp). The total is certain only while the counter
// and the holds add up to it (total_certain): Redisson's addPermits, release(n) and RSemaphore
// acquisitions move the counter alone, and then the total proves nothing.
#define RLOCK_SEMAPHORE_LUA                                                       \
  "local function now_ms() local t = redis.call('time'); "                        \
  "return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000); end; "       \
  "local function reclaim(now, publish) "                                         \
  "local expired = redis.call('zrangebyscore', KEYS[2], '-inf', now); "           \
  "if #expired == 0 then return; end; "                                           \
  "local n = 0; for _, id in ipairs(expired) do "                                 \
  "n = n + (tonumber(redis.call('hget', KEYS[3], id)) or 1); "                    \
  "redis.call('hdel', KEYS[3], id); redis.call('zrem', KEYS[2], id); end; "       \
  "local value = redis.call('incrby', KEYS[1], n); "                              \
  "if value > 0 then redis.call(publish, KEYS[4], value); end; end; "             \
  "local function total_certain(total) "                                          \
  "local held = 0; for _, id in ipairs(redis.call('zrange', KEYS[2], 0, -1)) do " \
  "held = held + (tonumber(redis.call('hget', KEYS[3], id)) or 1); end; "         \
  "return (tonumber(redis.call('get', KEYS[1])) or 0) + held == total; end; "

/// The source of each script and what running it means, for the registry's policies (it knows
/// no lock semantics): the command kind (what a lost answer becomes, command.hpp) and whether it
/// changes a lock (then followed by `WAIT` under config::sync_replicas). One row per script, in
/// the order of `script`: a row missing, added or out of place does not compile.
inline constexpr script_row script_table[] = {
    {script::acquire, command_kind::acquire, true, on_retry::reconciled,
     // acquire — KEYS[1] = lock key; ARGV[1] = lease ms, ARGV[2] = owner field.
     // nil: acquired or re-entered; otherwise the holder's PTTL.
     "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) "
     "then "
     "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
     "redis.call('pexpire', KEYS[1], ARGV[1]); "
     "return nil; "
     "end; "
     "return redis.call('pttl', KEYS[1]);"},

    {script::release, command_kind::release, true, on_retry::latched,
     // release (with Redisson's unlock latch, 3.24.1+) — KEYS[1] = lock key, KEYS[2] = unlock
     // channel, KEYS[3] = latch key redisson_unlock_latch:{<key>}:<request id>;
     // ARGV[1] = message "0", ARGV[2] = lease ms, ARGV[3] = owner field, ARGV[4] = publish
     // command, ARGV[5] = latch TTL ms.
     // nil: not the owner; 0: still held (reentrant); 1: released and published. A retry with the
     // same request id returns the first attempt's answer, so a retried unlock is idempotent.
     "local val = redis.call('get', KEYS[3]); "
     "if val ~= false then return tonumber(val); end; "
     "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; "
     "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
     "if (counter > 0) then "
     "redis.call('pexpire', KEYS[1], ARGV[2]); "
     "redis.call('set', KEYS[3], 0, 'px', ARGV[5]); "
     "return 0; "
     "else "
     "redis.call('del', KEYS[1]); "
     "redis.call(ARGV[4], KEYS[2], ARGV[1]); "
     "redis.call('set', KEYS[3], 1, 'px', ARGV[5]); "
     "return 1; "
     "end;"},

    {script::renew, command_kind::renew, true, on_retry::same_twice,
     // renew — KEYS = lock keys; ARGV[1] = lease ms, ARGV[i + 1] = owner field of KEYS[i].
     // One 1 (renewed) or 0 (no longer ours) per key. Redisson's batch renewal, except that each
     // key is checked with redis.pcall: a key of the wrong type (WRONGTYPE) answers 0 for itself
     // instead of failing the renewal of the whole batch.
     "local result = {} "
     "for i = 1, #KEYS, 1 do "
     "if (redis.pcall('hexists', KEYS[i], ARGV[i + 1]) == 1) then "
     "redis.call('pexpire', KEYS[i], ARGV[1]); table.insert(result, 1); "
     "else table.insert(result, 0); end; "
     "end; "
     "return result;"},

    {script::force_unlock, command_kind::force_release, false, on_retry::latched,
     // No WAIT after it (changes_lock false): nobody's lease to protect.
     // force_unlock — KEYS[1] = lock key, KEYS[2] = unlock channel, KEYS[3] = request latch;
     // ARGV[1] = message "0", ARGV[2] = publish command (`publish`, or `spublish` with sharded
     // channels), ARGV[3] = latch TTL ms. 1: deleted and published; 0: was not locked. Latched:
     // a retry answers the first run's answer and deletes nothing, not a lock taken since.
     "local latch, latch_ttl = KEYS[3], ARGV[3]; " RLOCK_LATCHED_LUA "local r = 0; "
     "if (redis.call('del', KEYS[1]) == 1) then "
     "redis.call(ARGV[2], KEYS[2], ARGV[1]); r = 1; end; "
     "return latched(r);"},

    {script::acquire_fenced, command_kind::acquire, true, on_retry::reconciled,
     // acquire_fenced (Redisson's RFencedLock, 3.19.0+) — KEYS[1] = lock key, KEYS[2] = token
     // counter redisson_lock_token:{<key>}; ARGV[1] = lease ms, ARGV[2] = owner field.
     // {-1, token}: acquired or re-entered, the counter incremented to `token` (every acquisition,
     // re-entry included, gets a new one); {pttl, -1}: busy.
     "if (redis.call('exists', KEYS[1]) == 0 "
     "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then "
     "local token = redis.call('incr', KEYS[2]);"
     "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
     "redis.call('pexpire', KEYS[1], ARGV[1]); "
     "return {-1, token}; "
     "end; "
     "return {redis.call('pttl', KEYS[1]), -1};"},

    {script::acquire_fenced_clocked, command_kind::acquire, true, on_retry::reconciled,
     // acquire_fenced_clocked (rlock's clock-bounded tokens, config::fenced_lock's
     // token_idle_ttl) — KEYS and ARGV[1..2] as acquire_fenced; ARGV[3] = how long the counter
     // lives after this acquisition, ms. The token is the larger of the counter + 1 and the
     // server's clock in microseconds, so a counter that expired (idle that long) restarts above
     // every token it gave. A counter that is not an integer is refused, as Redisson's INCR
     // refuses it. Tokens stay below 2^53 (Lua's exact integers) until about 2255.
     "if (redis.call('exists', KEYS[1]) == 0 "
     "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then "
     "local last = redis.call('get', KEYS[2]); "
     "local counted = 0; "
     "if last ~= false then counted = tonumber(last); end; "
     "if counted == nil or counted ~= math.floor(counted) then "
     "return redis.error_reply('ERR the token counter ' .. KEYS[2] .. ' is not an integer'); "
     "end; "
     "local t = redis.call('time'); "
     "local now = tonumber(t[1]) * 1000000 + tonumber(t[2]); "
     "local token = math.max(counted + 1, now); "
     "redis.call('set', KEYS[2], string.format('%.0f', token), 'px', ARGV[3]); "
     "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
     "redis.call('pexpire', KEYS[1], ARGV[1]); "
     "return {-1, token}; "
     "end; "
     "return {redis.call('pttl', KEYS[1]), -1};"},

    {script::transfer, command_kind::release, true, on_retry::latched,
     // A release kind: latched like a release.
     // transfer (rlock's local handoff: not Redisson's, but it leaves only states Redisson's
     // own scripts produce) — the release above, except that the final release hands the
     // lock to another owner instead of deleting it and publishing. KEYS and ARGV[1..5] as
     // release; ARGV[6] = the new owner's field, ARGV[7] = its lease ms. nil: not the owner;
     // 0: still held (reentrant); 2: the hash now holds only ARGV[6] with one hold and the
     // new lease (a Redisson lock held by it); the latch keeps the answer.
     "local val = redis.call('get', KEYS[3]); "
     "if val ~= false then return tonumber(val); end; "
     "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; "
     "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
     "if (counter > 0) then "
     "redis.call('pexpire', KEYS[1], ARGV[2]); "
     "redis.call('set', KEYS[3], 0, 'px', ARGV[5]); "
     "return 0; "
     "end; "
     "redis.call('del', KEYS[1]); "
     "redis.call('hset', KEYS[1], ARGV[6], 1); "
     "redis.call('pexpire', KEYS[1], ARGV[7]); "
     "redis.call('set', KEYS[3], 2, 'px', ARGV[5]); "
     "return 2;"},

    {script::acquire_non_reentrant, command_kind::acquire, true, on_retry::reconciled,
     // acquire_non_reentrant (Redisson's RNonReentrantLock, 4.4.0) — KEYS and ARGV as acquire, plus
     // ARGV[3] = the refusal `NON_REENTRANT_REACQUIRE`. nil: acquired; an error reply: the owner
     // holds it already; otherwise the holder's PTTL.
     "if redis.call('exists', KEYS[1]) == 0 then "
     "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
     "redis.call('pexpire', KEYS[1], ARGV[1]); "
     "return nil; "
     "end; "
     "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then "
     "return redis.error_reply(ARGV[3]); "
     "end; "
     "return redis.call('pttl', KEYS[1]);"},

    {script::acquire_fair, command_kind::acquire, true, on_retry::reconciled,
     // acquire_fair (Redisson's RFairLock acquire, its effects on the hash, queue and timeouts
     // unchanged, with the server's clock and rlock's handoff) — KEYS[1..4] as RLOCK_FAIR_LUA;
     // ARGV[1] = lease ms, ARGV[2] = owner field, ARGV[3] = wait ms (the queue deadline's
     // allowance), ARGV[4] = the acquisition's ticket, or '' for a single attempt (never queued:
     // Redisson's tryLock() without a wait), ARGV[5] = '<lease>:<wait>' to register for a handoff
     // by push, or '' (Redisson's protocol: a `0` and an acquire of its own), ARGV[6] = '' for a
     // reentrant lock, else the refusal of a re-acquire (`NON_REENTRANT_REACQUIRE`), ARGV[7] = the
     // caller's own wait ms, whose half bounds the sleep answered.
     // nil: acquired or re-entered; -3: a handoff to this acquisition was already made (its lease
     // restarted now); otherwise busy, and how long to sleep without a message (ms; -1: the
     // holder has no TTL). A queued waiter's retry moves its deadline on (a live waiter is never
     // dropped as stale), and sleeps no longer than its allowance.
     RLOCK_FAIR_LUA
     "local now = now_ms(); local head = head_after_stale(now); "
     "if ARGV[4] ~= '' and redis.call('hget', KEYS[4], 'granted') == ARGV[4] .. ':' .. ARGV[2] "
     "and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then "
     "redis.call('pexpire', KEYS[1], ARGV[1]); return -3; "
     "end; "
     "if redis.call('exists', KEYS[1]) == 0 and (head == false or head == ARGV[2]) then "
     "take(ARGV[2], ARGV[1], ARGV[3]); redis.call('hdel', KEYS[4], ARGV[2]); return nil; "
     "end; "
     "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then "
     "if ARGV[6] ~= '' then return redis.error_reply(ARGV[6]); end; "
     "redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); "
     "return nil; "
     "end; "
     "local pttl = redis.call('pttl', KEYS[1]); "
     "if ARGV[4] == '' then return math.max(pttl, 0); end; "
     "local wait = tonumber(ARGV[3]); "
     "local deadline = redis.call('zscore', KEYS[3], ARGV[2]); "
     "if deadline ~= false then "
     "deadline = tonumber(deadline); "
     "local moved = now + math.max(pttl, 0) + wait; "
     "if moved > deadline then redis.call('zadd', KEYS[3], moved, ARGV[2]); deadline = moved; end; "
     "else "
     "local last = redis.call('lindex', KEYS[2], -1); local ttl = pttl; "
     "local last_deadline = last ~= false and last ~= ARGV[2] "
     "and redis.call('zscore', KEYS[3], last); "
     "if last_deadline then ttl = tonumber(last_deadline) - now; end; "
     "deadline = ttl + wait + now; "
     "if redis.call('zadd', KEYS[3], deadline, ARGV[2]) == 1 then "
     "redis.call('rpush', KEYS[2], ARGV[2]); end; "
     "if head == false then head = ARGV[2]; end; "
     "end; "
     "if ARGV[5] ~= '' then "
     "redis.call('hset', KEYS[4], ARGV[2], ARGV[5] .. ':' .. ARGV[4]); "
     "keep(deadline - now + tonumber(ARGV[1])); "
     "else redis.call('hdel', KEYS[4], ARGV[2]); end; "
     "local nap = math.floor(tonumber(ARGV[7]) / 2); "
     "if pttl == -2 then "
     "local d = head and redis.call('zscore', KEYS[3], head); "
     "if d then nap = math.min(nap, tonumber(d) - now + 1); end; "
     "elseif pttl >= 0 then nap = math.min(nap, pttl); "
     "end; "
     "return math.max(nap, 1);"},

    {script::release_fair, command_kind::release, true, on_retry::latched,
     // release_fair (Redisson's RFairLock unlock, latched; the next waiter gets the lock by push
     // if it registered for it) — KEYS[1..5] as RLOCK_FAIR_LUA, KEYS[6] = latch key;
     // ARGV[1] = lease ms, ARGV[2] = owner field, ARGV[3] = publish command, ARGV[4] = latch TTL
     // ms. nil: not the owner (a free lock's next waiter is told anyway); 0: still held; 1:
     // released and passed on. A retry with the same request id returns the first answer.
     RLOCK_FAIR_LUA
     "local val = redis.call('get', KEYS[6]); if val ~= false then return tonumber(val); end; "
     "if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then "
     "if redis.call('exists', KEYS[1]) == 0 then pass_on(head_after_stale(now_ms()), ARGV[3]); "
     "end; "
     "return nil; "
     "end; "
     "if redis.call('hincrby', KEYS[1], ARGV[2], -1) > 0 then "
     "redis.call('pexpire', KEYS[1], ARGV[1]); "
     "redis.call('set', KEYS[6], 0, 'px', ARGV[4]); return 0; "
     "end; "
     "redis.call('del', KEYS[1]); redis.call('set', KEYS[6], 1, 'px', ARGV[4]); "
     "pass_on(head_after_stale(now_ms()), ARGV[3]); return 1;"},

    {script::leave_fair, command_kind::release, true, on_retry::same_twice,
     // A release kind: idempotent (see below).
     // leave_fair (Redisson's acquireFailed: a waiter that gives up leaves the queue, later
     // deadlines move back by its allowance) — KEYS[1..5] as RLOCK_FAIR_LUA; ARGV[1] = owner
     // field, ARGV[2] = wait ms, ARGV[3] = the acquisition's ticket, ARGV[4] = publish
     // command. A handoff made to this acquisition meanwhile is given back (one hold: the
     // owner's other holds stay) and passed on; a registration of another acquisition of the
     // same owner keeps the owner's place. Running it twice is running it once. 1: a handoff
     // was given back.
     RLOCK_FAIR_LUA
     "if redis.call('hget', KEYS[4], 'granted') == ARGV[3] .. ':' .. ARGV[1] then "
     "redis.call('hdel', KEYS[4], 'granted'); "
     "if redis.call('hexists', KEYS[1], ARGV[1]) == 1 "
     "and redis.call('hincrby', KEYS[1], ARGV[1], -1) <= 0 then "
     "redis.call('del', KEYS[1]); pass_on(head_after_stale(now_ms()), ARGV[4]); end; "
     "return 1; "
     "end; "
     "local r = redis.call('hget', KEYS[4], ARGV[1]); "
     "if r ~= false then "
     "if string.match(r, ':(%d+)$') ~= ARGV[3] then return 0; end; "
     "redis.call('hdel', KEYS[4], ARGV[1]); end; "
     "local q = redis.call('lrange', KEYS[2], 0, -1); local i = 1; "
     "while i <= #q and q[i] ~= ARGV[1] do i = i + 1; end; "
     "if i > #q then return 0; end; "
     "for j = i + 1, #q, 1 do redis.call('zincrby', KEYS[3], -tonumber(ARGV[2]), q[j]); end; "
     "redis.call('zrem', KEYS[3], ARGV[1]); redis.call('lrem', KEYS[2], 0, ARGV[1]); "
     "if i == 1 and redis.call('exists', KEYS[1]) == 0 then "
     "pass_on(head_after_stale(now_ms()), ARGV[4]); end; "
     "return 0;"},

    {script::force_unlock_fair, command_kind::force_release, false, on_retry::latched,
     // force_unlock_fair (Redisson's RFairLock forceUnlock, latched) — KEYS[1..5] as
     // RLOCK_FAIR_LUA, KEYS[6] = request latch; ARGV[1] = publish command, ARGV[2] = latch TTL
     // ms. 1: deleted, and the next waiter told (or handed the lock); 0: was not locked.
     RLOCK_FAIR_LUA "local latch, latch_ttl = KEYS[6], ARGV[2]; " RLOCK_LATCHED_LUA
                    "if redis.call('del', KEYS[1]) == 1 then "
                    "pass_on(head_after_stale(now_ms()), ARGV[1]); "
                    "return latched(1); end; return latched(0);"},

    {script::release_spin, command_kind::release, true, on_retry::latched,
     // release_spin (Redisson's RSpinLock unlock, latched): the release without a publish —
     // nobody listens, waiters poll. KEYS[1] = lock key, KEYS[2] = latch key; ARGV[1] = lease ms,
     // ARGV[2] = owner field, ARGV[3] = latch TTL ms. nil: not the owner; 0: still held;
     // 1: released.
     "local val = redis.call('get', KEYS[2]); "
     "if val ~= false then return tonumber(val); end; "
     "if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then return nil; end; "
     "local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1); "
     "if (counter > 0) then "
     "redis.call('pexpire', KEYS[1], ARGV[1]); "
     "redis.call('set', KEYS[2], 0, 'px', ARGV[3]); "
     "return 0; "
     "end; "
     "redis.call('del', KEYS[1]); "
     "redis.call('set', KEYS[2], 1, 'px', ARGV[3]); "
     "return 1;"},

    {script::force_unlock_spin, command_kind::force_release, false, on_retry::latched,
     // force_unlock_spin (Redisson's RSpinLock forceUnlock, latched) — KEYS[1] = lock key,
     // KEYS[2] = request latch; ARGV[1] = latch TTL ms. 1: deleted; 0: was not locked.
     // Publishes nothing.
     "local latch, latch_ttl = KEYS[2], ARGV[1]; " RLOCK_LATCHED_LUA
     "return latched(redis.call('del', KEYS[1]));"},

    {script::acquire_read, command_kind::acquire, true, on_retry::reconciled,
     // acquire_read (Redisson's RReadWriteLock read lock) — KEYS[1] = lock key, KEYS[2] = this
     // owner's hold timeouts' prefix `{<key>}:<owner field>:rwlock_timeout`; ARGV[1] = lease ms,
     // ARGV[2] = owner field, ARGV[3] = its write field `<owner field>:write`.
     // nil: acquired (with no writer, or as a downgrade by the writer); otherwise the PTTL.
     // Each read hold n has its own key `<prefix>:<n>` carrying its lease; the hash lives as long
     // as the longest.
     "local mode = redis.call('hget', KEYS[1], 'mode'); " RLOCK_READ_ACQUIRE_LUA},

    {script::acquire_write, command_kind::acquire, true, on_retry::reconciled,
     // acquire_write (Redisson's write lock, plus a refusal) — KEYS[1] = lock key; ARGV[1] = lease
     // ms, ARGV[2] = write field `<owner field>:write`, ARGV[3] = the owner's read field, ARGV[4]
     // = the refusal. nil: acquired or re-entered (Redisson adds the lease to the TTL); the PTTL:
     // busy; an error reply: the owner holds the read lock, and waiting would wait for itself
     // (Redisson's client waits; the state is the same either way).
     RLOCK_WRITE_ACQUIRE_LUA("") "return redis.call('pttl', KEYS[1]);"},

    {script::acquire_read_writers_first, command_kind::acquire, true, on_retry::reconciled,
     // acquire_read_writers_first (rlock's read lock under rw_priority::writers) — KEYS[1..2]
     // and ARGV as acquire_read, KEYS[3] = the waiting writers' marks `{<key>}:rlock_writers`
     // (a zset: write field -> when its mark lapses, server ms). A reader that does not read
     // already, and is not the writer downgrading, does not enter while a mark lives: it is
     // answered the time to the earliest mark's end (it comes back then, or when the writer's
     // unlock or leave wakes it). Otherwise acquire_read's.
     "local mode = redis.call('hget', KEYS[1], 'mode'); "
     "if (mode ~= 'write') and "
     "(mode == false or redis.call('hexists', KEYS[1], ARGV[2]) == 0) then " RLOCK_NOW_MS_LUA
     "local first = redis.call('zrangebyscore', KEYS[3], '(' .. now, '+inf', 'WITHSCORES', "
     "'LIMIT', 0, 1); "
     "if first[2] ~= nil then return math.max(tonumber(first[2]) - now, 1); end; "
     "end; " RLOCK_READ_ACQUIRE_LUA},

    {script::acquire_write_writers_first, command_kind::acquire, true, on_retry::reconciled,
     // acquire_write_writers_first (rlock's write lock under rw_priority::writers) — KEYS[1] and
     // ARGV[1..4] as acquire_write, KEYS[2] = the marks (as above), KEYS[3] = the waiting
     // writers' queue `{<key>}:rlock_writer_queue` (a zset: write field -> when it first
     // waited, server ms), ARGV[5] = how long this writer's mark lives, ms; empty: a single
     // attempt, which leaves none. A free lock goes to the writer that has waited longest among
     // those whose marks live (a queued writer whose mark lapsed is dropped): another writer,
     // waiting or not, is answered the time to that writer's mark's end. Taking the lock removes
     // the writer's mark and place. Busy, a waiting writer marks the lock (expired marks go),
     // keeps its place or queues, and is answered at most half its mark's life: it comes back,
     // and so renews its mark, before the mark lapses; a writer that died stops holding readers
     // and writers back one mark life after its last attempt.
     RLOCK_NOW_MS_LUA RLOCK_WRITER_TURN_LUA
     "local ttl; "
     "if turn == nil then " RLOCK_WRITE_ACQUIRE_LUA(
         RLOCK_WRITER_TAKEN_LUA) "ttl = redis.call('pttl', KEYS[1]); "
                                 "else ttl = math.max(turn - now, 1); end; " RLOCK_WRITER_WAITS_LUA
                                 "return ttl;"},

    {script::leave_write, command_kind::release, true, on_retry::same_twice,
     // A release kind: idempotent (removing a mark twice removes nothing).
     // leave_write (a waiting writer that gives up, under rw_priority::writers) — KEYS[1] =
     // lock key, KEYS[2] = the marks, KEYS[3] = the channel, KEYS[4] = the writers' queue;
     // ARGV[1] = write field, ARGV[2] = publish command. Its mark and place go. Unless a writer
     // holds the lock, those it held back are told ("1": everybody tries, as after a write
     // unlock): the readers if it was the last live mark, or the writer next in turn if it was
     // the queue's head and the lock is free. Otherwise nobody could go in: nobody is woken.
     // 1: told; 0: nothing to tell.
     "local head = redis.call('zrange', KEYS[4], 0, 0)[1]; "
     "redis.call('zrem', KEYS[4], ARGV[1]); "
     "if redis.call('zrem', KEYS[2], ARGV[1]) == 0 then return 0; end; "
     "local mode = redis.call('hget', KEYS[1], 'mode'); "
     "if mode == 'write' then return 0; end; " RLOCK_NOW_MS_LUA
     "local marked = #redis.call('zrangebyscore', KEYS[2], '(' .. now, '+inf', 'LIMIT', 0, 1) > 0; "
     "if marked and not (head == ARGV[1] and mode == false) then return 0; end; "
     "redis.call(ARGV[2], KEYS[3], '1'); return 1;"},

    {script::release_read, command_kind::release, true, on_retry::latched,
     // release_read (Redisson's read unlock, latched) — KEYS[1] = lock key, KEYS[2] = channel
     // `redisson_rwlock:{<key>}`, KEYS[3] = this owner's timeouts' prefix, KEYS[4] = `{<key>}`
     // (every owner's timeouts start with it), KEYS[5] = latch; ARGV[1] = message "0", ARGV[2] =
     // owner field, ARGV[3] = publish command, ARGV[4] = latch TTL ms.
     // nil: not a reader; 0: this owner still reads; 1: its last read hold went. The lock goes
     // (and one waiter is told) with the last hold of all, or when only expired holds remain;
     // otherwise its TTL becomes the longest remaining hold's. Unlike Redisson, a writer's TTL
     // (a downgrade's) is never shortened, and the answer is this owner's, not the lock's.
     RLOCK_READ_TIMEOUTS_LUA
     "local val = redis.call('get', KEYS[5]); "
     "if val ~= false then return tonumber(val); end; "
     "local mode = redis.call('hget', KEYS[1], 'mode'); "
     "if (mode == false) then redis.call(ARGV[3], KEYS[2], ARGV[1]); return nil; end; "
     "if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then return nil; end; "
     "local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1); "
     "if (counter == 0) then redis.call('hdel', KEYS[1], ARGV[2]); end; "
     "redis.call('del', KEYS[3] .. ':' .. (counter + 1)); "
     "local result = 1; if counter > 0 then result = 0; end; "
     "if (redis.call('hlen', KEYS[1]) > 1) then "
     "if mode == 'write' then redis.call('set', KEYS[5], result, 'px', ARGV[4]); "
     "return result; end; "
     "local longest = longest_read_hold(KEYS[1], KEYS[4]); "
     "if longest > 0 then "
     "redis.call('pexpire', KEYS[1], longest); "
     "redis.call('set', KEYS[5], result, 'px', ARGV[4]); "
     "return result; "
     "end; "
     "end; "
     "redis.call('del', KEYS[1]); "
     "redis.call(ARGV[3], KEYS[2], ARGV[1]); "
     "redis.call('set', KEYS[5], 1, 'px', ARGV[4]); "
     "return 1;"},

    {script::release_write, command_kind::release, true, on_retry::latched,
     // release_write (Redisson's write unlock, latched) — KEYS[1] = lock key, KEYS[2] = channel,
     // KEYS[3] = latch, KEYS[4] = `{<key>}`; ARGV[1] = message "1" (everybody may try: readers
     // share), ARGV[2] = lease ms, ARGV[3] = write field, ARGV[4] = publish command, ARGV[5] =
     // latch TTL ms. nil: not the writer; 0: still held; 1: released. The last write hold of an
     // owner that also reads (a downgrade) turns the lock to `read`; unlike Redisson this keeps
     // the TTL the read holds need and tells waiting readers, who may now share it.
     RLOCK_READ_TIMEOUTS_LUA
     "local val = redis.call('get', KEYS[3]); "
     "if val ~= false then return tonumber(val); end; "
     "local mode = redis.call('hget', KEYS[1], 'mode'); "
     "if (mode == false) then redis.call(ARGV[4], KEYS[2], ARGV[1]); return nil; end; "
     "if (mode ~= 'write') or (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; "
     "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
     "if (counter > 0) then "
     "redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[2]))); "
     "redis.call('set', KEYS[3], 0, 'px', ARGV[5]); "
     "return 0; "
     "end; "
     "redis.call('hdel', KEYS[1], ARGV[3]); "
     "if (redis.call('hlen', KEYS[1]) == 1) then "
     "redis.call('del', KEYS[1]); "
     "else "
     "redis.call('hset', KEYS[1], 'mode', 'read'); "
     "local longest = longest_read_hold(KEYS[1], KEYS[4]); "
     "if longest > redis.call('pttl', KEYS[1]) then redis.call('pexpire', KEYS[1], longest); end; "
     "end; "
     "redis.call(ARGV[4], KEYS[2], ARGV[1]); "
     "redis.call('set', KEYS[3], 1, 'px', ARGV[5]); "
     "return 1;"},

    {script::renew_read_write, command_kind::renew, true, on_retry::same_twice,
     // renew_read_write (Redisson's read lock renewal, for both halves) — KEYS = lock keys;
     // ARGV[1] = lease ms, ARGV[i + 1] = the owner field of KEYS[i] (a writer's ends in `:write`
     // and has no hold timeouts). One 1 (renewed) or 0 (no longer ours) per key. A renewal only
     // ever lengthens the lock's TTL: a downgraded owner's holds share it.
     "local result = {} "
     "for i = 1, #KEYS, 1 do "
     "local field = ARGV[i + 1]; "
     "local count = redis.pcall('hget', KEYS[i], field); "
     "if type(count) == 'string' then "
     "if string.sub(field, -6) ~= ':write' then "
     "local base = KEYS[i]; "
     "if string.find(base, '{', 1, true) == nil then base = '{' .. base .. '}'; end; "
     "for n = tonumber(count), 1, -1 do "
     "redis.call('pexpire', base .. ':' .. field .. ':rwlock_timeout:' .. n, ARGV[1]); end; "
     "end; "
     "redis.call('pexpire', KEYS[i], math.max(redis.call('pttl', KEYS[i]), tonumber(ARGV[1]))); "
     "table.insert(result, 1); "
     "else table.insert(result, 0); end; "
     "end; "
     "return result;"},

    {script::force_unlock_read_write, command_kind::force_release, false, on_retry::latched,
     // force_unlock_read_write (Redisson's forceUnlock of either half, latched) — KEYS[1] =
     // lock key, KEYS[2] = channel, KEYS[3] = request latch; ARGV[1] = the mode this half clears
     // (`read` or `write`), ARGV[2] = the message ("0" for read, "1" for write, as Redisson),
     // ARGV[3] = publish command, ARGV[4] = latch TTL ms. 1: deleted and published; 0: not
     // locked in that mode.
     "local latch, latch_ttl = KEYS[3], ARGV[4]; " RLOCK_LATCHED_LUA
     "if (redis.call('hget', KEYS[1], 'mode') == ARGV[1]) then "
     "redis.call('del', KEYS[1]); redis.call(ARGV[3], KEYS[2], "
     "ARGV[2]); return latched(1); end; "
     "return latched(0);"},

    {script::acquire_semaphore, command_kind::acquire, true, on_retry::reconciled,
     // acquire_semaphore (RSemaphore's acquire and RPermitExpirableSemaphore's, as holds) —
     // KEYS[1..5] as RLOCK_SEMAPHORE_LUA; ARGV[1] = permits, ARGV[2] = the hold's id (its owner
     // field), ARGV[3] = lease ms, ARGV[4] = publish command, ARGV[5] = the refusal of more
     // permits than the total. nil: taken (or taken already by this id: a retry, a late run);
     // a number: not enough permits, sleep that long at most (the earliest end of a hold that
     // has one, or -1: Redisson's permits taken without a lease score 922337203685477, never:
     // permit_id.hpp's redisson_never_expires).
     // More permits than the total are refused only while the total is certain.
     RLOCK_SEMAPHORE_LUA
     "local now = now_ms(); reclaim(now, ARGV[4]); "
     "local lease = tonumber(ARGV[3]); "
     "if redis.call('zscore', KEYS[2], ARGV[2]) then "
     "redis.call('zadd', KEYS[2], 'XX', now + lease, ARGV[2]); return nil; end; "
     "local n = tonumber(ARGV[1]); "
     "local total = tonumber(redis.call('get', KEYS[5])); "
     "if total ~= nil and n > total and total_certain(total) then "
     "return redis.error_reply(ARGV[5]); end; "
     "local value = tonumber(redis.call('get', KEYS[1])) or 0; "
     "if value >= n then "
     "redis.call('decrby', KEYS[1], n); "
     "redis.call('zadd', KEYS[2], now + lease, ARGV[2]); "
     "if n ~= 1 then redis.call('hset', KEYS[3], ARGV[2], n); end; "
     "return nil; end; "
     "local first = redis.call('zrangebyscore', KEYS[2], '-inf', '(922337203685477', "
     "'WITHSCORES', 'LIMIT', 0, 1); "
     "if first[2] ~= nil then return math.max(tonumber(first[2]) - now, 1); end; "
     "return -1;"},

    {script::release_semaphore, command_kind::release, true, on_retry::latched,
     // release_semaphore (latched) — KEYS[1..5] as RLOCK_SEMAPHORE_LUA, KEYS[6] = latch;
     // ARGV[1] = the hold's id, ARGV[2] = publish command, ARGV[3] = latch TTL ms. nil: no such
     // hold (released, or expired and given back); 1: its permits are back and the new count is
     // published (Redisson's message).
     "local val = redis.call('get', KEYS[6]); "
     "if val ~= false then return tonumber(val); end; "
     "if redis.call('zrem', KEYS[2], ARGV[1]) == 0 then return nil; end; "
     "local n = tonumber(redis.call('hget', KEYS[3], ARGV[1])) or 1; "
     "redis.call('hdel', KEYS[3], ARGV[1]); "
     "local value = redis.call('incrby', KEYS[1], n); "
     "redis.call(ARGV[2], KEYS[4], value); "
     "redis.call('set', KEYS[6], 1, 'px', ARGV[3]); "
     "return 1;"},

    {script::renew_semaphore, command_kind::renew, true, on_retry::same_twice,
     // renew_semaphore — KEYS = counters; ARGV[1] = lease ms, ARGV[i + 1] = the hold id of
     // KEYS[i]. 1: the hold is alive and now ends a lease from now; 0: it is gone or its lease
     // already ended (its permits are given back at the next reclaim). A hold that is gone (a
     // Redisson tryRelease or reclaim took it, which know no sizes) leaves no size behind.
     RLOCK_SEMAPHORE_LUA
     "local now = now_ms(); local result = {} "
     "for i = 1, #KEYS, 1 do "
     "local base = KEYS[i]; "
     "if string.find(base, '{', 1, true) == nil then base = '{' .. base .. '}'; end; "
     "local holds = base .. ':timeout'; "
     "local ends = redis.pcall('zscore', holds, ARGV[i + 1]); "
     "if type(ends) == 'string' and tonumber(ends) > now then "
     "redis.call('zadd', holds, 'XX', now + tonumber(ARGV[1]), ARGV[i + 1]); "
     "table.insert(result, 1); "
     "else if ends == false then redis.call('hdel', 'rlock_semaphore_permits:' .. base, "
     "ARGV[i + 1]); end; table.insert(result, 0); end; "
     "end; "
     "return result;"},

    {script::force_release_semaphore, command_kind::force_release, false, on_retry::latched,
     // force_release_semaphore (latched) — KEYS[1..5] as RLOCK_SEMAPHORE_LUA, KEYS[6] =
     // request latch; ARGV[1] = the hold's id, ARGV[2] = publish command, ARGV[3] = latch TTL
     // ms. 1: released; 0: no such hold.
     "local latch, latch_ttl = KEYS[6], ARGV[3]; " RLOCK_LATCHED_LUA
     "if redis.call('zrem', KEYS[2], ARGV[1]) == 0 then return latched(0); end; "
     "local n = tonumber(redis.call('hget', KEYS[3], ARGV[1])) or 1; "
     "redis.call('hdel', KEYS[3], ARGV[1]); "
     "redis.call(ARGV[2], KEYS[4], redis.call('incrby', KEYS[1], n)); "
     "return latched(1);"},

    {script::semaphore_admin, command_kind::release, true, on_retry::latched,
     // semaphore_admin (latched: every change keeps its first answer) — KEYS[1..5] as
     // RLOCK_SEMAPHORE_LUA, KEYS[6] = request latch; ARGV[1] = what: `available` (the count
     // after giving back expired holds), `set` (RSemaphore's trySetPermits(ARGV[2]): 1 if it was
     // not set, and then the total too), `add` (addPermits(ARGV[2]), which may be negative: the
     // new count), `drain` (drainPermits: the permits taken), `release` (RSemaphore's
     // release(ARGV[2]), owned by nobody: the new count); ARGV[3] = publish command, ARGV[4] =
     // latch TTL ms. A retry of a lost answer returns the first run's: trySetPermits answers
     // 1 once it set the count, addPermits and release add once, drainPermits answers what it
     // took.
     RLOCK_SEMAPHORE_LUA
     "local latch, latch_ttl = KEYS[6], ARGV[4]; " RLOCK_LATCHED_LUA
     "local what = ARGV[1]; local publish = ARGV[3]; "
     "if what == 'release' then "
     "local value = redis.call('incrby', KEYS[1], ARGV[2]); "
     "redis.call(publish, KEYS[4], value); "
     "return latched(value); end; "
     "if what == 'set' then "
     "if redis.call('exists', KEYS[1]) == 1 then return latched(0); end; "
     "redis.call('set', KEYS[1], ARGV[2]); redis.call('set', KEYS[5], ARGV[2]); "
     "redis.call(publish, KEYS[4], ARGV[2]); return latched(1); end; "
     "reclaim(now_ms(), publish); "
     "if what == 'available' then return tonumber(redis.call('get', KEYS[1])) or 0; "
     "end; "
     "if what == 'add' then "
     "local value = redis.call('incrby', KEYS[1], ARGV[2]); "
     "if redis.call('exists', KEYS[5]) == 1 then redis.call('incrby', KEYS[5], "
     "ARGV[2]); end; "
     "redis.call(publish, KEYS[4], value); return latched(value); end; "
     "if what == 'drain' then "
     "local value = tonumber(redis.call('get', KEYS[1])); "
     "if value == nil then return latched(0); end; "
     "redis.call('set', KEYS[1], 0); return latched(value); end; "
     "return redis.error_reply('ERR semaphore_admin: unknown operation');"},
    // Redisson's RCountDownLatch: the count is the string key `<key>` (absent: 0, open); the
    // channel `redisson_countdownlatch__channel__{<key>}` hears "0" when the count reaches zero
    // and "1" when a new count is set or the latch is deleted. The changes are latched as an
    // unlock is (KEYS[3] = `redisson_unlock_latch:{<key>}:<request id>` keeps the first answer,
    // so a retry after a lost answer counts down once).
    {script::latch_wait, command_kind::query, false, on_retry::reads_only,
     // latch_wait — KEYS[1] = latch key. nil: open (count absent or <= 0); -1: not yet (wait
     // for "0" on the channel). Read-only: asked again after a reconnect.
     "local v = redis.call('get', KEYS[1]); if v == false then return nil; end; "
     "local n = tonumber(v); "
     "if n == nil then return redis.error_reply('ERR NOT_A_COUNT the key holds a string that is "
     "not "
     "the count of a count-down latch'); end; "
     "if n <= 0 then return nil; end; return -1;"},
    {script::latch_try_set, command_kind::release, true, on_retry::latched,
     // latch_try_set (trySetCount) — KEYS[1] = latch key, KEYS[2] = channel, KEYS[3] = request
     // latch; ARGV[1] = count, ARGV[2] = publish command, ARGV[3] = latch TTL ms. 1: set (and
     // "1" published); 0: a count was set already.
     "local done = redis.call('get', KEYS[3]); if done ~= false then return tonumber(done); end; "
     "local r = 0; "
     "if redis.call('exists', KEYS[1]) == 0 then redis.call('set', KEYS[1], ARGV[1]); "
     "redis.call(ARGV[2], KEYS[2], '1'); r = 1; end; "
     "redis.call('set', KEYS[3], r, 'px', ARGV[3]); return r;"},
    {script::latch_count_down, command_kind::release, true, on_retry::latched,
     // latch_count_down (countDown) — KEYS and ARGV[1..2] as latch_try_set without the count:
     // ARGV[1] = publish command, ARGV[2] = latch TTL ms. The new count; the key goes at <= 0
     // and "0" is published when it reaches exactly 0, as in Redisson.
     "local done = redis.call('get', KEYS[3]); if done ~= false then return tonumber(done); end; "
     "local v = redis.call('decr', KEYS[1]); "
     "if v <= 0 then redis.call('del', KEYS[1]); end; "
     "if v == 0 then redis.call(ARGV[1], KEYS[2], '0'); end; "
     "redis.call('set', KEYS[3], v, 'px', ARGV[2]); return v;"},
    {script::latch_delete, command_kind::release, true, on_retry::latched,
     // latch_delete (delete) — as latch_count_down's keys and arguments. 1: it existed ("1"
     // published); 0: it did not.
     "local done = redis.call('get', KEYS[3]); if done ~= false then return tonumber(done); end; "
     "local r = 0; "
     "if redis.call('del', KEYS[1]) == 1 then redis.call(ARGV[1], KEYS[2], '1'); r = 1; end; "
     "redis.call('set', KEYS[3], r, 'px', ARGV[2]); return r;"},

    {script::raise_quorum_token, command_kind::renew, true, on_retry::same_twice,
     // raise_quorum_token (rlock's quorum lock, fenced) — KEYS[1] = the quorum's token counter
     // rlock_quorum_token:{<key>}, a hash: t = the token, by = the raise that wrote it; ARGV[1] =
     // the proposed token, ARGV[2] = this raise's marker (unique per hold). {1, before}: the
     // counter is now the proposal, by this raise (written now, or by its own earlier run: a
     // retry answers the same); {0, counter}: it is at or past the proposal already. The counter
     // never decreases while the node keeps its data.
     "local c = tonumber(redis.call('hget', KEYS[1], 't') or '0'); "
     "local p = tonumber(ARGV[1]); "
     "if c < p then redis.call('hset', KEYS[1], 't', ARGV[1], 'by', ARGV[2]); return {1, c}; end; "
     "if c == p and redis.call('hget', KEYS[1], 'by') == ARGV[2] then return {1, c}; end; "
     "return {0, c};"},

    // rlock's leader election (src/kinds/election.cpp): Redisson's fenced lock on the name (its
    // hash and its token counter, so a Java RLock or RFencedLock on the name excludes a leader
    // and is excluded), plus the leader record `rlock_election:{<key>}` (a hash: owner = the
    // leader's field, term = the token it won, value, since = server ms, seq = one more at every
    // change, never reset) and the channel `rlock_election_channel:{<key>}`, which hears
    // `<seq>:<term>:<event>:<value>` at every change. The record is written in the same script
    // as the lock, so nobody reads a leader whose lock is not taken, or the reverse.
    {script::election_campaign, command_kind::acquire, true, on_retry::reconciled,
     // election_campaign — KEYS[1] = lock key, KEYS[2] = token counter
     // redisson_lock_token:{<key>}, KEYS[3] = record, KEYS[4] = election channel; ARGV[1] =
     // lease ms, ARGV[2] = owner field, ARGV[3] = the candidate's value, ARGV[4] = publish
     // command. {-1, term}: leads (elected now with a new term, or already: its term, and no
     // second hold); {pttl, -1}: another owner holds the lock.
     RLOCK_NOW_MS_LUA
     "local function elect() local term = redis.call('incr', KEYS[2]); "
     "local seq = redis.call('hincrby', KEYS[3], 'seq', 1); "
     "redis.call('hset', KEYS[3], 'owner', ARGV[2], 'term', term, 'value', ARGV[3], "
     "'since', now); "
     "redis.call(ARGV[4], KEYS[4], seq .. ':' .. term .. ':elected:' .. ARGV[3]); "
     "return term; end; "
     "if redis.call('exists', KEYS[1]) == 0 then "
     "redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); "
     "return {-1, elect()}; end; "
     "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then "
     "redis.call('pexpire', KEYS[1], ARGV[1]); "
     "local r = redis.call('hmget', KEYS[3], 'owner', 'term'); "
     "if r[1] == ARGV[2] and tonumber(r[2]) ~= nil then return {-1, tonumber(r[2])}; end; "
     "return {-1, elect()}; end; "
     "return {redis.call('pttl', KEYS[1]), -1};"},
    {script::election_resign, command_kind::release, true, on_retry::latched,
     // election_resign — the release's KEYS[1..3] and ARGV (Redisson's latched unlock: "0" on
     // the unlock channel wakes the next candidate, Java's too), plus KEYS[4] = record, KEYS[5]
     // = election channel: the final release of the leader the record names clears the record's
     // owner and value and publishes `resigned` (its term: the ended one).
     "local val = redis.call('get', KEYS[3]); "
     "if val ~= false then return tonumber(val); end; "
     "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; "
     "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
     "if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); "
     "redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; end; "
     "redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); "
     "local r = redis.call('hmget', KEYS[4], 'owner', 'term'); "
     "if r[1] == ARGV[3] then "
     "local seq = redis.call('hincrby', KEYS[4], 'seq', 1); "
     "redis.call('hset', KEYS[4], 'owner', '', 'value', ''); "
     "redis.call(ARGV[4], KEYS[5], seq .. ':' .. r[2] .. ':resigned:'); end; "
     "redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1;"},
    {script::election_proclaim, command_kind::release, true, on_retry::latched,
     // election_proclaim — KEYS[1] = lock key, KEYS[2] = record, KEYS[3] = election channel,
     // KEYS[4] = request latch; ARGV[1] = owner field, ARGV[2] = the new value, ARGV[3] =
     // publish command, ARGV[4] = latch TTL ms. 1: announced (`proclaimed`, or nothing to tell:
     // the value was that already); 0: this owner does not lead (its lock is gone, or the record
     // names another). Latched: a retry announces nothing twice.
     "local done = redis.call('get', KEYS[4]); if done ~= false then return tonumber(done); end; "
     "local function latched(r) redis.call('set', KEYS[4], r, 'px', ARGV[4]); return r; end; "
     "if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return latched(0); end; "
     "local r = redis.call('hmget', KEYS[2], 'owner', 'term', 'value'); "
     "if r[1] ~= ARGV[1] then return latched(0); end; "
     "if r[3] == ARGV[2] then return latched(1); end; "
     "local seq = redis.call('hincrby', KEYS[2], 'seq', 1); "
     "redis.call('hset', KEYS[2], 'value', ARGV[2]); "
     "redis.call(ARGV[3], KEYS[3], seq .. ':' .. r[2] .. ':proclaimed:' .. ARGV[2]); "
     "return latched(1);"},
    {script::election_leader, command_kind::query, false, on_retry::reads_only,
     // election_leader — KEYS[1] = lock key, KEYS[2] = record, KEYS[3] = token counter
     // (Redisson's, a string; or a quorum's, a hash whose field t is the token).
     // {owner, term, value, since, seq, now}: owner = the field holding the lock ('' if nobody
     // does); the term, value and since are the record's when it names that owner, otherwise
     // (a holder that never campaigned: a Java RLock) the counter, '' and 0; seq = the record's.
     RLOCK_NOW_MS_LUA
     "local r = redis.call('hmget', KEYS[2], 'owner', 'term', 'value', 'since', 'seq'); "
     "local seq = tonumber(r[5]) or 0; "
     "local holder = ''; "
     "if redis.call('exists', KEYS[1]) == 1 then "
     "local fields = redis.call('hkeys', KEYS[1]); "
     "for i = 1, #fields, 1 do if fields[i] ~= 'mode' then holder = fields[i]; break; end; end; "
     "end; "
     "if holder == '' then return {'', tonumber(r[2]) or 0, '', 0, seq, now}; end; "
     "if r[1] == holder then "
     "return {holder, tonumber(r[2]) or 0, r[3] or '', tonumber(r[4]) or 0, seq, now}; end; "
     "local counter = 0; "
     "if redis.call('type', KEYS[3]).ok == 'hash' then "
     "counter = tonumber(redis.call('hget', KEYS[3], 't')) or 0; "
     "else counter = tonumber(redis.call('get', KEYS[3])) or 0; end; "
     "return {holder, counter, '', 0, seq, now};"},

    // A quorum-backed election (src/election/quorum_election.cpp) keeps the same record and
    // channel on every node, written by the leader with the quorum's token as the term and a
    // `seq` it counts on from the highest a majority held: changes are ordered by (term, seq).
    {script::quorum_election_announce, command_kind::release, true, on_retry::same_twice,
     // quorum_election_announce — KEYS[1] = record, KEYS[2] = election channel; ARGV[1] = the
     // leader's field on this node, ARGV[2] = term, ARGV[3] = seq, ARGV[4] = event (elected,
     // proclaimed, resigned), ARGV[5] = value, ARGV[6] = publish command. 1: this change is the
     // record's (written and published now, or by its own earlier run: a retry publishes nothing
     // twice); 0: the record holds a later change, (term, seq) above this one.
     RLOCK_NOW_MS_LUA
     "local r = redis.call('hmget', KEYS[1], 'term', 'seq'); "
     "local t = tonumber(r[1]) or 0; local s = tonumber(r[2]) or 0; "
     "local term = tonumber(ARGV[2]); local seq = tonumber(ARGV[3]); "
     "if t > term or (t == term and s > seq) then return 0; end; "
     "if t == term and s == seq then return 1; end; "
     "if ARGV[4] == 'elected' then "
     "redis.call('hset', KEYS[1], 'owner', ARGV[1], 'term', term, 'value', ARGV[5], 'since', now, "
     "'seq', seq); "
     "elseif ARGV[4] == 'proclaimed' then "
     "redis.call('hset', KEYS[1], 'owner', ARGV[1], 'term', term, 'value', ARGV[5], 'seq', seq); "
     "if t ~= term then redis.call('hset', KEYS[1], 'since', now); end; "
     "else redis.call('hset', KEYS[1], 'owner', '', 'term', term, 'value', '', 'seq', seq); end; "
     "redis.call(ARGV[6], KEYS[2], seq .. ':' .. term .. ':' .. ARGV[4] .. ':' .. ARGV[5]); "
     "return 1;"},
};

inline constexpr std::size_t script_count = std::size(script_table);

constexpr bool script_rows_in_order() noexcept {
  for (std::size_t i = 0; i < script_count; ++i) {
    if (static_cast<std::size_t>(script_table[i].id) != i) return false;
  }
  return true;
}
static_assert(script_rows_in_order(), "script_table: one row per script, in the order of `script`");
static_assert(script_count == static_cast<std::size_t>(script::count),
              "script_table: a row for every script");

/// Every retry is safe, and says why: an acquire is reconciled (never written again), every
/// other command that changes something is the same twice or keeps its first answer in a latch.
constexpr bool retries_are_safe() noexcept {
  for (const auto& row : script_table) {
    const bool reconciled = row.retry == on_retry::reconciled;
    if ((row.kind == command_kind::acquire) != reconciled) return false;
    if (row.retry == on_retry::reads_only && row.kind != command_kind::query) return false;
    // A latched script looks its latch up before anything else it changes.
    if (row.retry == on_retry::latched &&
        row.source.find("if done ~= false then return tonumber(done); end;") ==
            std::string_view::npos &&
        row.source.find("if val ~= false then return tonumber(val); end;") ==
            std::string_view::npos) {
      return false;
    }
  }
  return true;
}
static_assert(retries_are_safe(),
              "script_table: an acquire is reconciled, a query reads only, a latched script "
              "checks its latch");

/// The Lua of `s`.
constexpr std::string_view script_source(script s) noexcept {
  return script_table[static_cast<std::size_t>(s)].source;
}

#undef RLOCK_FAIR_LUA
#undef RLOCK_READ_TIMEOUTS_LUA
#undef RLOCK_NOW_MS_LUA
#undef RLOCK_READ_ACQUIRE_LUA
#undef RLOCK_WRITE_ACQUIRE_LUA
#undef RLOCK_WRITER_TURN_LUA
#undef RLOCK_WRITER_TAKEN_LUA
#undef RLOCK_WRITER_WAITS_LUA
#undef RLOCK_SEMAPHORE_LUA
#undef RLOCK_LATCHED_LUA

}  // namespace rlock::detail
