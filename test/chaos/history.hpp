#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::chaos {

/// Nanoseconds on steady_clock, which on Linux is CLOCK_MONOTONIC: one time line for every
/// process of a run on this machine, so histories recorded by several processes merge.
using nanos = std::int64_t;
nanos now_ns() noexcept;

/// Why an owner stopped believing it held a lock.
enum class end_kind : std::uint8_t {
  open,       // it never stopped (still believed when the history ended)
  released,   // it called unlock()
  lost,       // lost() fired
  not_owner,  // its unlock was answered not_owner (without lost() first)
};

/// One acquisition: the interval in which `owner` believed it held `lock`. It starts when the
/// acquire's success was seen (the server granted it earlier) and ends when the owner called
/// unlock (the server releases later), when lost() fired, or when unlock said not_owner; so for
/// a correct lock, believed intervals of one lock never overlap.
struct acquisition {
  std::string lock;
  std::string owner;
  nanos acquired = 0;
  /// When the acquire that granted it was called: the server granted it in [requested, acquired].
  nanos requested = 0;
  nanos ended = 0;
  end_kind end = end_kind::open;
  /// A read hold of a read-write lock: it may overlap other read holds, never a write hold.
  bool shared = false;
  /// A semaphore hold of this many permits (0: a lock): holds may overlap while their permits
  /// add up to at most the semaphore's capacity.
  std::uint32_t permits = 0;
  /// The fencing token the acquisition answered (0: none): a grant the server made after
  /// another was seen must carry a larger one.
  std::int64_t token = 0;
};

/// A semaphore's capacity (its total permits), for the permits rule.
struct capacity {
  std::string lock;
  std::int64_t permits = 0;
};

enum class op_kind : std::uint8_t { lock, try_lock, unlock };

/// One call of the API and its stated bound.
struct operation {
  op_kind kind = op_kind::lock;
  std::string lock;
  std::string owner;
  nanos started = 0;
  nanos finished = -1;  // -1: it never completed
  nanos bound = -1;     // -1: none (lock() without a wait); it must still complete
  std::string outcome;  // "acquired", "not acquired", "released", or the error
};

/// A restart of the server, and whether the data written before it survived (the harness writes
/// a marker key before every fault and reads it back after). `at` is when it was killed: nothing
/// granted after that came from the old server's data.
///
/// A failover is one too, over a window: from `from` (the master killed, or the failover
/// started while it still takes writes) to `at` (the old master dead or demoted), writes the
/// old master acknowledged may be missing on the new one.
struct restart {
  nanos at = 0;
  bool data_survived = true;
  nanos from = -1;  // -1: `at` (a restart's window is an instant)
};

/// What was left at the end, after every worker stopped: server channels and keys under the
/// run's prefix, and each client's activity gauges that are not zero ("p1: held_locks=1").
struct leftovers {
  std::vector<std::string> channels;
  std::vector<std::string> keys;
  std::vector<std::string> client_activity;
};

/// A fair lock's queue as one atomic read saw it (LRANGE), head first: owner fields.
struct queue_snapshot {
  nanos at = 0;
  std::string lock;
  std::vector<std::string> fields;
};

/// Which owner of the history a hash field (`<client uuid>:<owner id>`) belongs to.
struct owner_field {
  std::string field;
  std::string owner;
};

/// A line the clients logged (config::log, every level), for the report of a violation: the
/// engine's fault paths (a lost answer reconciled, a hold given back, a handoff settled) name
/// the lock and the owner, so a rare failure explains itself.
struct note {
  nanos at = 0;
  std::string text;
};

/// A change of an election as one observer was told it (rlock::election_observer::next()): the
/// checker's observer rule holds each observer's changes to be a subsequence of the true one.
struct observation {
  std::string observer;  // who was told: a process and its observer
  std::string lock;      // the election's name
  nanos at = 0;
  std::uint64_t seq = 0;
  std::int64_t term = 0;
  std::string event;  // elected, proclaimed, resigned, snapshot
  bool leading = false;
  std::string value;
  std::uint64_t skipped = 0;
};

/// A run's record, checked afterwards by check(). Text-serialisable so processes can each
/// write theirs and the parent merge them.
struct history {
  std::vector<acquisition> acquisitions;
  std::vector<operation> operations;
  std::vector<restart> restarts;
  leftovers left;
  /// Fair locks: snapshots of their queues, and the owners their fields name (the FIFO rule).
  std::vector<queue_snapshot> queues;
  std::vector<owner_field> owner_fields;
  /// Semaphores: their capacities (the permits rule).
  std::vector<capacity> capacities;
  std::vector<note> notes;
  /// Elections: each observer's changes (the observer rule), and their names (a counter and a
  /// record rest on the server after a run).
  std::vector<observation> observations;
  std::vector<std::string> elections;
  nanos begin = 0;  // 0: not set (merge() takes the other's)
  nanos end = 0;    // when the workload was over; open acquisitions are believed until here

  void merge(const history& other);
  std::string serialize() const;
  /// Parses serialize()'s output; throws std::runtime_error on a malformed line.
  static history parse(std::string_view text);
};

/// Thread-safe recording of a history by many workers.
class recorder {
 public:
  using id = std::size_t;

  /// `owner` saw its acquire of `lock`, called at `requested`, succeed now.
  id acquired(std::string_view lock, std::string_view owner, nanos requested, bool shared = false,
              std::uint32_t permits = 0, std::int64_t token = 0);
  /// Semaphore `lock` has `permits` in all (recorded once per lock).
  void capacity_of(std::string_view lock, std::int64_t permits);
  /// Ends the belief of acquisition `a` now with `why`, unless it ended already.
  void end(id a, end_kind why);
  /// Ends it at `at` (e.g. when unlock() was called, known only once it answered).
  void end_at(id a, end_kind why, nanos at);

  id started(op_kind kind, std::string_view lock, std::string_view owner, nanos bound);
  void finished(id op, std::string_view outcome);

  /// `field` is `owner`'s hash field (recorded once per pair).
  void named(std::string_view field, std::string_view owner);
  /// A client logged `text` now.
  void noted(std::string_view text);
  /// An observer was told a change of an election.
  void observed(observation o);
  /// `lock` is an election's name (recorded once per name).
  void election(std::string_view lock);
  /// `lock`'s fair queue read now.
  void queued(std::string_view lock, std::vector<std::string> fields);
  /// The server was killed at `killed_at` (when its data was lost, if it was) and is back.
  void restarted(bool data_survived, nanos killed_at);
  /// A failover whose window of lost writes is [from, to]: see restart.
  void failed_over(bool data_survived, nanos from, nanos to);

  /// For scenarios that aim a fault at a moment: an operation of `kind` running for at least
  /// `min_age` now; an acquisition believed now.
  bool in_progress(op_kind kind, nanos min_age) const;
  bool holding() const;

  /// The history so far (copies).
  history snapshot() const;
  /// Takes the history, with `end` set to now.
  history finish();

 private:
  mutable std::mutex mutex_;
  history h_ = started_now();
  static history started_now() {
    history h;
    h.begin = now_ns();
    return h;
  }
};

std::string_view to_string(end_kind k) noexcept;
std::string_view to_string(op_kind k) noexcept;

}  // namespace rlock::chaos
