#pragma once

#include "resp3/value.hpp"

#include <boost/json/object.hpp>
#include <boost/system/system_error.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlockctl {

using reply = rlock::detail::resp3::value;
using command = std::vector<std::string>;

/// One owner of a lock as its hash records it: the field (`<client uuid>:<owner id>`, the same
/// in Redisson as in rlock) and its hold count.
struct holder {
  holder() = default;
  holder(std::string o, std::int64_t c, std::string r = {})
      : owner(std::move(o)), count(c), role(std::move(r)) {}
  std::string owner;
  std::int64_t count = 0;
  /// A read-write lock's half: "read" or "write" (the owner's `<field>:write`); empty for
  /// every other kind.
  std::string role;
  friend bool operator==(const holder&, const holder&) = default;
};

/// A fair lock's waiter, as its queue and deadlines record it.
struct queued_waiter {
  std::string owner;
  /// Until the waiter is dropped unless it comes back (server clock; negative: overdue).
  std::optional<std::int64_t> deadline_in_ms;
  bool by_push = false;  // an rlock waiter registered for the handoff by push
  friend bool operator==(const queued_waiter&, const queued_waiter&) = default;
};

/// A semaphore hold (rlock's and RPermitExpirableSemaphore's `{<key>}:timeout` members).
struct permit_hold {
  std::string id;
  std::int64_t permits = 1;
  std::optional<std::int64_t> expires_in_ms;  // server clock; negative: overdue
  bool never_expires = false;                 // a Redisson permit taken without a lease
  friend bool operator==(const permit_hold&, const permit_hold&) = default;
};

/// What a key says about the lock it may be. Sans I/O: built from the answers to the commands
/// below, which the caller runs (pipelined).
struct lock_view {
  enum class state { free, held, not_a_lock };
  std::string name;
  state status = state::free;
  /// What the key is when it is not a lock: TYPE's answer, or "hash" for a hash whose fields
  /// are not `<id>:<number>` → positive count.
  std::string key_type;
  std::vector<holder> holders;
  /// Milliseconds left while held; -1 when the key has no TTL (no lock rlock or Redisson took).
  std::optional<std::int64_t> ttl_ms;
  /// Connections subscribed to the unlock channel: waiters of rlock or Redisson, and watchers.
  std::optional<std::int64_t> subscribers;
  /// The last fencing token handed out, when RFencedLock's counter `redisson_lock_token:{name}`
  /// exists: the lock is then a fenced lock.
  std::optional<std::int64_t> token;
  /// A fair lock's queue (`redisson_lock_queue:{name}`), head first: the lock is then a fair
  /// lock (one without waiters looks like any reentrant lock).
  std::vector<queued_waiter> queue;
  /// A read-write lock's `mode` field ("read" or "write"): the lock is then a read-write lock.
  std::string mode;
  /// A semaphore (the key is an integer string): permits available now, the total when rlock
  /// knows it (`rlock_semaphore_total:{name}`), and the holds in `{name}:timeout`.
  std::optional<std::int64_t> available;
  std::optional<std::int64_t> total;
  std::vector<permit_hold> permits;
  /// Connections subscribed to `redisson_countdownlatch__channel__{name}`: a count with
  /// listeners there and no holds or total is a count-down latch's (Redisson's RCountDownLatch).
  /// Without waiters the key alone cannot tell a latch's count from a semaphore's counter.
  std::optional<std::int64_t> latch_waiters;

  bool is_latch() const noexcept {
    return available && latch_waiters && *latch_waiters > 0 && permits.empty() && !total;
  }
  std::string_view kind() const noexcept {
    return is_latch()       ? "count-down-latch"
           : available      ? "semaphore"
           : !mode.empty()  ? "read-write"
           : token          ? "fenced"
           : !queue.empty() ? "fair"
                            : "reentrant";
  }
  std::string_view status_name() const noexcept;
};

/// The holders a hash reply records, or nothing when it is not a lock's hash (a field not
/// `<text>:<digits>`, a count not a positive integer). An empty hash (the key is absent) gives an
/// empty list. A read-write lock's hash (field `mode` = read | write) gives its readers and its
/// writer (`<text>:<digits>:write`, owner without the suffix), and its mode in `mode`.
std::optional<std::vector<holder>> lock_holders(const reply& hgetall, std::string* mode = nullptr);

/// status: TYPE, HGETALL, PTTL, PUBSUB NUMSUB <channel>, GET <token counter>, then a fair
/// lock's LRANGE <queue>, ZRANGE <timeouts> WITHSCORES, HGETALL <handoff registrations> and
/// TIME, then PUBSUB NUMSUB of a read-write lock's channel, then a semaphore's GET <key>, ZRANGE
/// <holds> WITHSCORES, HGETALL <hold sizes>, GET <total> and PUBSUB NUMSUB of its channel, then
/// PUBSUB NUMSUB of a count-down latch's channel, in this order (all in the key's slot; answers
/// that do not apply to the key's type are errors nobody reads).
std::vector<command> status_commands(const std::string& key, bool sharded = false);
/// Decodes the answers to status_commands (an error reply throws boost::system::system_error).
lock_view read_status(std::string name, const std::vector<reply>& answers);

/// list and watch: HGETALL, PTTL, GET and ZRANGE <holds> of a key (the last two for a
/// semaphore, whose key HGETALL refuses).
std::vector<command> state_commands(const std::string& key);
inline constexpr std::size_t state_command_count = 4;
/// Decodes the answers to state_commands at `answers[first]` and `answers[first + 1]`.
lock_view read_state(std::string name, const std::vector<reply>& answers, std::size_t first = 0);

/// One line of `status` or `list`.
std::string describe(const lock_view& view);
boost::json::object to_json(const lock_view& view);

/// What happened to a lock between two views, read after `event` (a keyspace event such as
/// "hincrby", "expire", "del", "expired", or "unlock-message" for a message on its channel, which
/// the caller passes only when it does not see DEL events).
/// Nothing when the views tell nothing new.
struct lock_change {
  std::string kind;  // locked, re-entered, released-once, handed-over, released, expired, renewed
  std::string text;
};
std::optional<lock_change> describe_change(const lock_view& before, const lock_view& after,
                                           std::string_view event);

}  // namespace rlockctl
