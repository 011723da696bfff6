#pragma once

#include "rlock/blocking.hpp"
#include "rlock/client.hpp"
#include "rlock/detail/completion.hpp"
#include "rlock/election_calls.hpp"
#include "rlock/election_change.hpp"
#include "rlock/export.hpp"
#include "rlock/metrics.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlock {

namespace detail {
struct lock_state;
class election_listener;
class change_queue;
struct election_tally;
}  // namespace detail

/// Who leads an election now (election::leader()).
struct leader_info {
  /// The leader's hash field, `<client uuid>:<owner id>` (a Java RLock holder's too).
  std::string owner;
  /// What it announced (campaign() or proclaim()); empty for a holder that never campaigned
  /// (a Java RLock or RFencedLock on the name).
  std::string value;
  /// Its term: the fenced token it won (for a holder that never campaigned: the token counter).
  std::int64_t term = 0;
  /// When it was elected, by the server's clock (the epoch for a holder that never campaigned).
  std::chrono::system_clock::time_point since{};
  /// How long it has led, by the server's clock (0 for a holder that never campaigned).
  std::chrono::milliseconds led_for{0};
  /// The leader record's change counter (election_change::seq) when this was read.
  std::uint64_t seq = 0;
};

/// What one candidate (an election object and its copies) has done, for monitoring
/// (election::metrics()); to_prometheus() renders it.
struct election_metrics {
  std::string name;  ///< the election's name (its `election` label)
  /// Gauge: whether it leads, as far as it knows (won, not yet resigned or found lost).
  bool leading = false;
  std::int64_t term = 0;           ///< the term of its latest win (0: none yet)
  std::uint64_t campaigns = 0;     ///< campaign() and try_campaign() calls that went out
  std::uint64_t terms_won = 0;     ///< leads it won
  std::uint64_t resignations = 0;  ///< leads it gave up (resign())
  /// Leads that ended without a resignation (found lost: expired, deleted, taken over): each a
  /// failover to another candidate.
  std::uint64_t failovers = 0;
  /// Time it has led in all, the current lead included.
  std::chrono::milliseconds time_leading{0};
};

/// `m` in Prometheus' text exposition format, as to_prometheus(client_metrics) renders a client,
/// with the label `election` set to its name. Throws boost::system::system_error
/// (errc::invalid_argument) for a prefix or label Prometheus does not accept, or for a label
/// named `election`.
RLOCK_EXPORT std::string to_prometheus(const election_metrics& m, std::string_view prefix = "rlock",
                                       const metric_labels& labels = {});

/// The changes of one election, pushed (election::observe()): next() completes with each change
/// of leader or value in order, each once. A handle: copies share one subscription, which ends
/// with the last copy (or close()).
class RLOCK_EXPORT election_observer {
 public:
  /// The client's executor type: Asio's type-erased I/O executor.
  using executor_type = boost::asio::any_io_executor;

  /// The next change: at once if one came since the previous call, else when one is published.
  /// The first is the state as it is (a snapshot), if the election ever had a leader. Errors:
  /// connection_lost (the client closed), permission_denied (the channel was refused),
  /// operation_aborted (close(), or this call cancelled: terminal, partial, total).
  /// One call at a time per observer (invalid_argument otherwise).
  boost::asio::awaitable<election_change> next();
  /// next() with a completion token; completes with `void(error_code, election_change)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_next(CompletionToken&& token = {}) {
    return detail::initiate<election_change>(
        std::forward<CompletionToken>(token), *this,
        [](const election_observer& o, detail::handler<election_change> h) {
          start_next(o, std::move(h));
        });
  }
  /// Stops listening: a next() in progress completes with operation_aborted. Any thread.
  void close();
  /// The client's executor.
  executor_type get_executor() const noexcept;

 private:
  friend class election;
  friend class quorum_election;
  struct subscription;
  explicit election_observer(std::shared_ptr<subscription> s) noexcept : sub_(std::move(s)) {}
  /// An observer of `queue`, fed by `ears`, which it joins.
  static election_observer make(std::shared_ptr<detail::change_queue> queue,
                                std::vector<std::shared_ptr<detail::election_listener>> ears);
  static void start_next(const election_observer& o, detail::handler<election_change> h);
  std::shared_ptr<subscription> sub_;
};

/// A leader election on Redis, in the shape of etcd's concurrency.Election: instances campaign
/// for the lead under one name; one leads at a time, with a **term** that fences; any instance
/// reads who leads and observes every change, pushed.
///
/// **Model.** An election is Redisson's fenced lock on the name plus a leader record beside it
/// (docs/guide/kinds/election.md has the keys, channels and scripts):
/// - the lock hash `<key>` and the token counter `redisson_lock_token:{<key>}`, exactly as
///   Redisson's RFencedLock keeps them, so a Java RLock or RFencedLock on the same name excludes
///   a leader and is excluded by it;
/// - the record `rlock_election:{<key>}` (owner, term, value, since, seq), written in the same
///   script as the lock is taken, and the channel `rlock_election_channel:{<key>}`, which
///   hears `<seq>:<term>:<event>:<value>` at every change.
///
/// **Terms.** A term is the fenced token the winning campaign took: strictly greater than every
/// earlier leader's, Java's acquisitions included. Send it with every write to a resource that
/// keeps the highest term it saw, and a leader deposed while paused is refused there.
///
/// **Leases.** The lead is held with the watchdog's lease (config::watchdog_timeout), renewed
/// every third of it. A leader that dies is replaced within that lease; a client with a shorter
/// watchdog_timeout fails over faster. lost() completes before the server can let another
/// instance lead (the watchdog's rule: a lease not confirmed in time is given up locally first).
///
/// **Faults.** campaign() is an acquisition: an answer lost with a connection is reconciled by
/// asking the server, never by campaigning twice. proclaim() and resign() are latched as an
/// unlock is: a retry answers what the first run did. leader() reads only.
///
/// One candidate per election object (and per owner id): copies are the same candidate. A
/// candidate campaigns once at a time; campaign() while it leads answers its term at once.
/// Whether it still leads is lost()'s to tell (pushed by the watchdog), and a resource's to
/// check with the term.
class RLOCK_EXPORT election : public election_calls<election> {
 public:
  /// Waits, in whole milliseconds.
  using milliseconds = std::chrono::milliseconds;
  /// The client's executor type: Asio's type-erased I/O executor.
  using executor_type = boost::asio::any_io_executor;

  /// A new candidate in the election `name` (config::key_prefix is prepended) on `c`. Makes no
  /// request.
  election(client& c, std::string_view name);
  /// The candidate `owner_id` (copies of it, in this process, are the same candidate).
  election(client& c, std::string_view name, std::uint64_t owner_id);

  /// Waits until this candidate leads, woken by the lock's unlock message (never by polling),
  /// and announces `value`; its term. Errors: those of reentrant_lock::lock(), and
  /// invalid_argument if another campaign of this candidate is in progress.
  /// Per-operation cancellation: terminal, partial, total; nothing is left behind (a lead won
  /// meanwhile is resigned).
  boost::asio::awaitable<std::int64_t> campaign(std::string value);
  /// campaign() waiting at most `wait` (0: one attempt); the term, or none if it did not lead.
  boost::asio::awaitable<std::optional<std::int64_t>> try_campaign(std::string value,
                                                                   milliseconds wait);
  /// The leader announces another value without giving up the lead (observers are told).
  /// not_owner if this candidate does not lead.
  boost::asio::awaitable<void> proclaim(std::string value);
  /// Gives up the lead: the next candidate (of any process) is woken at once, observers are
  /// told `resigned`. not_owner if this candidate does not lead.
  boost::asio::awaitable<void> resign();
  /// Who leads now, or none. From any instance, candidate or not; one round trip.
  boost::asio::awaitable<std::optional<leader_info>> leader();
  /// Completes when this candidate, leading, is found to have lost the lead (expired, deleted,
  /// taken over): before another instance can lead. not_owner if it does not lead.
  boost::asio::awaitable<void> lost();
  /// Every change of leader or value from now on, pushed (election_observer).
  election_observer observe();

  /// The term of this candidate's latest win (0 before the first). Local; any thread.
  std::int64_t term() const noexcept;
  /// The election's name (without the key prefix).
  std::string_view name() const noexcept;
  /// The lock key: key prefix + name.
  std::string_view key() const noexcept;
  /// The leader record's key, `rlock_election:{<key>}`.
  std::string record_key() const;
  /// The channel its changes are published on, `rlock_election_channel:{<key>}`.
  std::string channel() const;
  /// This candidate's hash field, `<client uuid>:<owner id>` (leader_info::owner when it leads).
  std::string_view owner() const noexcept;
  /// The client's executor, where the election's operations run.
  executor_type get_executor() const noexcept;
  /// The words of the latest failed operation of this candidate (the async_* forms complete
  /// with an error_code only). Empty if none failed. Any thread.
  std::string last_error() const;
  /// What this candidate (this object and its copies) has done. Local; any thread.
  election_metrics metrics() const;

 private:
  friend class election_calls<election>;
  static void start_campaign(const election& e, std::string value, detail::handler<std::int64_t> h);
  static void start_try_campaign(const election& e, std::string value, milliseconds wait,
                                 detail::handler<std::optional<std::int64_t>> h);
  static void start_proclaim(const election& e, std::string value, detail::handler<> h);
  static void start_resign(const election& e, detail::handler<> h);
  static void start_leader(const election& e, detail::handler<std::optional<leader_info>> h);
  static void start_lost(const election& e, detail::handler<> h);

  std::shared_ptr<detail::lock_state> state_;
  std::shared_ptr<detail::election_tally> tally_;
};

namespace blocking {

/// rlock::election for threads: every call blocks until its operation completes; failures
/// throw boost::system::system_error. The candidate is the object (not the calling thread).
class election {
 public:
  /// A new candidate in the election `name` on `c`'s asynchronous client. Makes no request.
  election(client& c, std::string_view name) : client_(&c), election_(c.async_client(), name) {}

  /// Waits until this candidate leads; its term.
  std::int64_t campaign(std::string value) { return *take(std::move(value), std::nullopt); }
  /// campaign() waiting at most `wait` (rounded up to whole milliseconds; 0: one attempt).
  template <typename Rep, typename Period>
  std::optional<std::int64_t> try_campaign_for(std::string value,
                                               const std::chrono::duration<Rep, Period>& wait) {
    const auto ms =
        std::max(std::chrono::ceil<std::chrono::milliseconds>(wait), std::chrono::milliseconds(0));
    return take(std::move(value), ms);
  }
  /// The leader announces another value.
  void proclaim(std::string value) { client_->run(election_.proclaim(std::move(value))); }
  /// Gives up the lead.
  void resign() { client_->run(election_.resign()); }
  /// Who leads now, or none.
  std::optional<leader_info> leader() { return client_->run(election_.leader()); }
  /// Blocks until the lead is lost.
  void lost() { client_->run(election_.lost()); }
  /// The term of this candidate's latest win.
  std::int64_t term() const noexcept { return election_.term(); }
  /// What this candidate has done.
  election_metrics metrics() const { return election_.metrics(); }

  /// The changes of the election, one per call of next().
  class observer {
   public:
    /// Blocks until the next change (election_observer::next()).
    election_change next() { return client_->run(observer_.next()); }
    /// Stops listening.
    void close() { observer_.close(); }

   private:
    friend class election;
    friend class quorum_election;
    observer(client* c, election_observer o) : client_(c), observer_(std::move(o)) {}
    client* client_;
    election_observer observer_;
  };
  /// Every change from now on.
  observer observe() { return observer(client_, election_.observe()); }

  /// The asynchronous election underneath.
  rlock::election& async_election() noexcept { return election_; }

 private:
  /// A campaign as an acquisition of the blocking client: a lead won while the caller gets a
  /// handler's exception instead is resigned, as every blocking acquisition is given back.
  std::optional<std::int64_t> take(std::string value,
                                   std::optional<std::chrono::milliseconds> wait) {
    std::optional<std::int64_t> term;
    const bool took = client_->run_acquisition(
        [](rlock::election e, std::string v, std::optional<std::chrono::milliseconds> within,
           std::optional<std::int64_t>* out) -> boost::asio::awaitable<bool> {
          if (!within) {
            *out = co_await e.campaign(std::move(v));
          } else {
            *out = co_await e.try_campaign(std::move(v), *within);
          }
          co_return out->has_value();
        }(election_, std::move(value), wait, &term),
        [e = election_]() {
          return [](rlock::election mine) -> boost::asio::awaitable<void> {
            co_await mine.resign();
          }(e);
        });
    return took ? term : std::nullopt;
  }

  client* client_;
  rlock::election election_;
};

}  // namespace blocking

}  // namespace rlock
