#pragma once

#include "rlock/blocking.hpp"
#include "rlock/detail/completion.hpp"
#include "rlock/detail/quorum_flights.hpp"
#include "rlock/export.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlock {

class client;

namespace detail {
struct quorum_core;
struct quorum_access;
}  // namespace detail
namespace blocking {
class quorum_lock;
}  // namespace blocking

/// How a quorum lock counts time and waits.
struct quorum_options {
  /// Redlock's drift, the share of a lease a grant is believed less (the clocks of client and
  /// servers run at different rates): lease × drift_parts_per_million / 10^6 + drift_floor,
  /// rounded up to the millisecond. The default is the published one, 1 % + 2 ms.
  std::uint32_t drift_parts_per_million = 10'000;
  /// The drift's fixed part (Redlock's 2 ms).
  std::chrono::milliseconds drift_floor{2};
  /// The bound of one round (one attempt on every node at once); none: the nodes' longest
  /// config::command_timeout. A node that has not answered by then counts as failed for the
  /// round (a grant it makes later is given back, or kept by a round already won).
  std::optional<std::chrono::milliseconds> round_timeout;
  /// A fallback retry for waiters: none (the default) waits for pushes only (an unlock
  /// published by a node, a node's subscription confirmed again after a reconnect) and for the
  /// TTLs that the busy nodes answered; a value also retries that long (±50 %, random) after
  /// every round that was lost, as the polling Redlock libraries do.
  std::optional<std::chrono::milliseconds> retry_delay;
  /// How long a waiter leaves a node that failed without losing its connection (an error reply,
  /// no answer within the round) before asking it again when a majority needs it.
  std::chrono::milliseconds unreachable_retry{1000};
  /// Redlock's delayed restart, kept by this client: a node whose connection came back (a
  /// restart, or any reconnect) does not vote in this lock's rounds for this long after the
  /// client saw it back, whenever the lock was made (a client's first connection is not
  /// counted: a server restarted before a client started is the operator's to keep out, as
  /// Redlock's description asks). A node restarted without its data has forgotten the grants it
  /// made; set this to the longest lease any client gives (the watchdog's 30 s by default) where
  /// the servers run without persistence. 0 (the default): off. Renewals and retakes of a held node
  /// are not delayed.
  std::chrono::milliseconds restart_delay{0};
  /// Fenced: every acquisition also takes a fencing token (token()), strictly greater than
  /// every earlier holder's whatever the majorities, raised on every node's counter
  /// `rlock_quorum_token:{<key>}` (one more round trip after the round is won, two when another
  /// owner's raise went further than this one knew).
  bool fenced = false;
};

/// What a quorum lock has done, in all and per node (quorum_lock::metrics()); each node's client
/// has its own client_metrics beside. to_prometheus() renders it.
struct quorum_lock_metrics {
  /// The lock's name.
  std::string name;
  /// Rounds started (one attempt on every node each), and of them those won.
  std::uint64_t rounds = 0;
  std::uint64_t rounds_won = 0;  ///< rounds that began a hold
  /// Holds told lost(); nodes taken again while held; fenced: raises of a token tried.
  std::uint64_t holds_lost = 0;
  std::uint64_t retakes = 0;       ///< nodes taken again while a majority held
  std::uint64_t token_raises = 0;  ///< fenced: raise tries (one per round trip)
  /// Gauge: whether this owner believes it holds the lock.
  bool held = false;
  /// One node: its deployment and its votes in this lock's rounds.
  struct node {
    std::string address;        ///< the node's deployment ("host:port", "sentinel <master>")
    std::uint64_t granted = 0;  ///< attempts it granted
    std::uint64_t refused = 0;  ///< attempts it refused (held by another owner)
    std::uint64_t failed = 0;   ///< attempts with no usable answer (error, timeout, delay)
    bool holds = false;         ///< gauge: the current hold has this node
  };
  /// In the order the lock was given its clients.
  std::vector<node> nodes;
};

/// `m` in Prometheus' text exposition format, as to_prometheus(client_metrics) renders a client:
/// `<prefix>_quorum_rounds_total`, `_quorum_rounds_won_total`, `_quorum_holds_lost_total`,
/// `_quorum_retakes_total`, `_quorum_token_raises_total`, the gauge `_quorum_held`, and per node
/// `_quorum_node_votes_total{node, vote}` and the gauge `_quorum_node_held{node}`; every sample
/// has the label `lock` (the name) beside `labels`. Throws boost::system::system_error
/// (errc::invalid_argument) for a prefix or label name Prometheus does not accept, or one of
/// `lock`, `node` and `vote` in `labels`.
RLOCK_EXPORT std::string to_prometheus(
    const quorum_lock_metrics& m, std::string_view prefix = "rlock",
    const std::vector<std::pair<std::string, std::string>>& labels = {});

/// A lock held by a majority of N independent Redis deployments (Redlock, as the Redis
/// documentation publishes it), over one rlock::client per node: each a standalone server or a
/// Sentinel-managed master (not one cluster: its masters share a failure domain and a slot).
///
/// **On every node, Redisson's reentrant lock.** Each node holds the lock's hash with this
/// owner's field `<that client's uuid>:<owner id>`, one owner id for all nodes; so a Java
/// `RedissonRedLock` over the same nodes and name excludes it and is excluded by it.
///
/// **One round.** One attempt on every node at once (one round trip per node, in parallel); won
/// when `N/2 + 1` granted within the round, with validity left: the validity is the
/// majority's, `lease − elapsed − drift` counted from before the attempts were sent, on the
/// steady clock. A lost round gives back every grant it took (a cancelled attempt's when it
/// lands: try_lock() with no wait is told after they all answered).
///
/// **Waiting by push.** A waiter listens on the lock's channel on every node and starts a round
/// when the nodes it holds, the nodes that published an unlock since they answered busy and the
/// nodes whose holder's TTL has run out make a majority; no polling unless
/// quorum_options::retry_delay asks for it.
///
/// **Held on the quorum.** Without a lease each node's grant is renewed by that client's
/// watchdog (batched with its other renewals); the hold is believed until the majority's
/// validity, moved by the renewals each node confirmed, less 5 ms; lost() completes before it
/// ends. A node that lost the key while a majority holds is taken again; with fewer than a
/// majority the hold is lost at once (and what is left is given back). With a lease, lost()
/// completes 5 ms before the validity of the acquisition ends.
///
/// **Reentrant.** A lock() by the holder while the hold is believed re-enters without a round
/// trip; the nodes are released by the matching last unlock().
///
/// A handle: copies share the owner. Forms: awaitable (failures thrown as
/// boost::system::system_error) and async_* with any completion token, `void(error_code[, T])`.
/// Runs on the first node's client executor; the clients may run on other executors. Some of
/// its work ends after its caller was answered (the release of the nodes that confirm after a
/// majority did, the give-back of a grant that came late), each within its node's
/// command_timeout, and comes back to that executor: when the clients run on several
/// io_contexts, stop them all before destroying any (blocking::quorum_lock waits for that work
/// when it is destroyed).
class RLOCK_EXPORT quorum_lock {
 public:
  /// Leases and waits, in whole milliseconds.
  using milliseconds = std::chrono::milliseconds;
  /// The first node's client executor type.
  using executor_type = boost::asio::any_io_executor;
  /// Validity, on the steady clock (a wall-clock jump moves nothing).
  using time_point = std::chrono::steady_clock::time_point;

  /// Over `nodes` (1 to 32 clients, each another deployment) and `name`. Throws
  /// boost::system::system_error with errc::invalid_argument: no node, more than 32, one
  /// client given twice, an empty name, a drift floor below zero.
  quorum_lock(std::vector<std::reference_wrapper<client>> nodes, std::string_view name,
              quorum_options options = {});

  /// Waits until a majority is held; `lease` for each node (absent: the watchdogs renew).
  boost::asio::awaitable<void> lock(std::optional<milliseconds> lease = std::nullopt);
  /// Takes a majority within `wait` (0: one round); whether it did. Fails with
  /// errc::quorum_unavailable, naming each node and why, when the wait ended while too many
  /// nodes could not answer for a majority to be possible.
  boost::asio::awaitable<bool> try_lock(milliseconds wait = milliseconds::zero(),
                                        std::optional<milliseconds> lease = std::nullopt);
  /// Releases one hold; the last one releases every node at once and completes when a majority
  /// confirmed (the rest finish in the background, each bounded by its command_timeout).
  /// errc::not_owner when not held, or when the hold was lost before this unlock.
  boost::asio::awaitable<void> unlock();
  /// Completes when the hold is lost (before its validity ends); errc::not_owner when not held.
  boost::asio::awaitable<void> lost();

  /// lock(lease) with a completion token; completes with `void(error_code)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_lock(std::optional<milliseconds> lease, CompletionToken&& token = {}) {
    return detail::initiate<>(
        std::forward<CompletionToken>(token), *this,
        [lease](const quorum_lock& q, detail::handler<> h) { start_lock(q, lease, std::move(h)); });
  }
  /// try_lock(wait, lease) with a completion token; completes with `void(error_code, bool)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_lock(milliseconds wait, std::optional<milliseconds> lease,
                      CompletionToken&& token = {}) {
    return detail::initiate<bool>(std::forward<CompletionToken>(token), *this,
                                  [wait, lease](const quorum_lock& q, detail::handler<bool> h) {
                                    start_try_lock(q, wait, lease, std::move(h));
                                  });
  }
  /// unlock() with a completion token; completes with `void(error_code)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_unlock(CompletionToken&& token = {}) {
    return detail::initiate<>(
        std::forward<CompletionToken>(token), *this,
        [](const quorum_lock& q, detail::handler<> h) { start_unlock(q, std::move(h)); });
  }
  /// lost() with a completion token; completes with `void(error_code)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_lost(CompletionToken&& token = {}) {
    return detail::initiate<>(
        std::forward<CompletionToken>(token), *this,
        [](const quorum_lock& q, detail::handler<> h) { start_lost(q, std::move(h)); });
  }

  /// Until when the current hold is believed (steady clock), as of the renewals confirmed so
  /// far; time_point::min() when not held. Any thread.
  time_point valid_until() const noexcept;
  /// What this lock has done, in all and per node. Any thread.
  quorum_lock_metrics metrics() const;
  /// The current hold's fencing token (quorum_options::fenced); 0 when not held or not fenced.
  /// A re-entry keeps its hold's token. Any thread.
  std::int64_t token() const noexcept;
  /// Whether this owner believes it holds the lock now (valid_until() is ahead). Any thread.
  bool is_held() const noexcept;
  /// The lock's name as given.
  std::string_view name() const noexcept;
  /// The number of nodes.
  std::size_t nodes() const noexcept;
  /// How many nodes make a majority: `nodes() / 2 + 1`.
  std::size_t quorum() const noexcept;
  /// The owner id shared by every node's hash field (`<uuid>:<owner id>`).
  std::uint64_t owner_id() const noexcept;
  /// The words of the latest failure (per node where nodes failed). Any thread.
  std::string last_error() const;
  /// The executor of the first node's client, where the lock's operations run.
  executor_type get_executor() const noexcept;

 private:
  static void start_lock(const quorum_lock& q, std::optional<milliseconds> lease,
                         detail::handler<> h);
  static void start_try_lock(const quorum_lock& q, milliseconds wait,
                             std::optional<milliseconds> lease, detail::handler<bool> h);
  static void start_unlock(const quorum_lock& q, detail::handler<> h);
  static void start_lost(const quorum_lock& q, detail::handler<> h);

  friend class blocking::quorum_lock;
  friend struct detail::quorum_access;
  /// Its work away on the nodes counted in `flights` (shared by blocking::quorum_lock's owners).
  quorum_lock(std::vector<std::reference_wrapper<client>> nodes, std::string_view name,
              quorum_options options, std::shared_ptr<detail::quorum_flights> flights);

  std::shared_ptr<detail::quorum_core> core_;
};

namespace blocking {

/// rlock::quorum_lock for threads, over one blocking::client per node: meets Lockable and
/// TimedLockable (std::unique_lock, std::scoped_lock, std::condition_variable_any), and the
/// calling thread is the owner, as for basic_lock: each thread is its own owner on every node
/// (its own quorum_lock underneath, made when it first asks and let go once it holds nothing),
/// a thread that locks again re-enters, another thread is excluded. unlock() by a thread that
/// holds nothing, or whose hold was lost, throws errc::not_owner. Failures throw
/// boost::system::system_error with the words of quorum_lock's.
class quorum_lock {
 public:
  /// Leases and waits, in whole milliseconds.
  using milliseconds = std::chrono::milliseconds;
  /// Validity, on the steady clock.
  using time_point = std::chrono::steady_clock::time_point;

  /// Over `nodes` (each another deployment; see rlock::quorum_lock) and `name`. Throws as
  /// rlock::quorum_lock's constructor. Makes no request.
  quorum_lock(std::vector<std::reference_wrapper<client>> nodes, std::string_view name,
              quorum_options options = {})
      : s_(std::make_shared<shared>()) {
    if (nodes.empty()) {
      // rlock::quorum_lock's check, with its words.
      rlock::quorum_lock({}, name, options);
    }
    s_->first = &nodes.front().get();
    for (auto& n : nodes) {
      s_->async_nodes.emplace_back(n.get().async_client());
      s_->settle_bound =
          std::max(s_->settle_bound, 2 * n.get().async_client().get_config().command_timeout);
    }
    s_->name = std::string(name);
    s_->options = options;
    (void)for_this_thread();  // checks the arguments as rlock::quorum_lock does
  }

  /// Waits until a majority is held, the watchdogs renewing every node's lease.
  void lock() { take(std::nullopt, std::nullopt); }
  /// lock() with a lease on every node: nothing renews it.
  void lock(milliseconds lease) { take(std::nullopt, lease); }
  /// One round, no waiting; whether the calling thread now holds the lock.
  bool try_lock() { return take(milliseconds::zero(), std::nullopt); }
  /// Takes a majority within `wait`, with a lease as lock(lease); whether it did.
  bool try_lock(milliseconds wait, std::optional<milliseconds> lease) { return take(wait, lease); }
  /// Takes a majority within `wait` (rounded up to whole milliseconds); whether it did.
  template <typename Rep, typename Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& wait) {
    return take(std::max(std::chrono::ceil<milliseconds>(wait), milliseconds::zero()),
                std::nullopt);
  }
  /// try_lock_for() the time from now to `deadline` (read on `Clock`).
  template <typename Clock, typename Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return try_lock_for(deadline - Clock::now());
  }
  /// Releases one hold of the calling thread; the last releases every node (see
  /// rlock::quorum_lock::unlock).
  void unlock() {
    auto q = for_this_thread();
    std::exception_ptr failed;
    try {
      s_->first->run(q.unlock());
    } catch (...) {
      failed = std::current_exception();
    }
    let_go_if_free(q);
    if (failed) std::rethrow_exception(failed);
  }

  /// Whether the calling thread believes it holds the lock now.
  bool is_held() const { return for_this_thread().is_held(); }
  /// Until when the calling thread's hold is believed (time_point::min() when none).
  time_point valid_until() const { return for_this_thread().valid_until(); }
  /// The calling thread's hold's fencing token (quorum_options::fenced); 0 when none.
  std::int64_t token() const { return for_this_thread().token(); }
  /// The lock's name as given.
  std::string_view name() const noexcept { return s_->name; }
  /// The asynchronous lock of the calling thread's owner (lost(), metrics(), last_error()).
  rlock::quorum_lock for_this_thread() const {
    const auto owner = detail::thread_owner();
    std::lock_guard g(s_->m);
    auto it = s_->owners.find(owner);
    if (it == s_->owners.end()) {
      it = s_->owners
               .emplace(owner,
                        rlock::quorum_lock(s_->async_nodes, s_->name, s_->options, s_->flights))
               .first;
    }
    return it->second;
  }

 private:
  /// @cond
  // (A private nested type is left out of the reference: Doxygen would link to a section of it
  // that it does not write.)
  struct shared {
    std::mutex m;
    std::map<std::uint64_t, rlock::quorum_lock> owners;  // threads that hold or ask
    std::vector<std::reference_wrapper<rlock::client>> async_nodes;
    client* first = nullptr;  // whose run() drives the calls (the lock runs on its executor)
    std::string name;
    quorum_options options;
    std::shared_ptr<rlock::detail::quorum_flights> flights =
        std::make_shared<rlock::detail::quorum_flights>();
    milliseconds settle_bound{0};  // twice the nodes' longest command_timeout

    shared() = default;
    shared(const shared&) = delete;
    shared& operator=(const shared&) = delete;
    /// The last copy's end. What threads still hold goes back (nobody could unlock it after),
    /// then the work still away on the nodes is waited for, each piece within its node's
    /// command_timeout: the clients may then go in any order, the first one's executor
    /// included.
    ~shared() {
      if (first == nullptr) return;
      for (auto& [owner, q] : owners) {
        for (int holds = 0; holds < 1'000 && q.is_held(); ++holds) {
          try {
            first->run(q.unlock());
          } catch (...) {
            break;  // lost meanwhile: nothing left to give back
          }
        }
      }
      owners.clear();
      (void)flights->wait_for(settle_bound);
    }
  };
  /// @endcond

  bool take(std::optional<milliseconds> wait, std::optional<milliseconds> lease) {
    auto q = for_this_thread();
    std::exception_ptr failed;
    bool took = false;
    try {
      took = s_->first->run_acquisition(
          [](rlock::quorum_lock mine, std::optional<milliseconds> within,
             std::optional<milliseconds> lease_of) -> boost::asio::awaitable<bool> {
            if (!within) {
              co_await mine.lock(lease_of);
              co_return true;
            }
            co_return co_await mine.try_lock(*within, lease_of);
          }(q, wait, lease),
          [q]() {
            return [](rlock::quorum_lock h) -> boost::asio::awaitable<void> {
              co_await h.unlock();
            }(q);
          });
    } catch (...) {
      failed = std::current_exception();
    }
    if (!took) let_go_if_free(q);
    if (failed) std::rethrow_exception(failed);
    return took;
  }
  /// A thread that holds nothing is forgotten: the map keeps only threads that hold or ask.
  void let_go_if_free(const rlock::quorum_lock& q) {
    if (q.is_held()) return;
    std::lock_guard g(s_->m);
    s_->owners.erase(detail::thread_owner());
  }

  std::shared_ptr<shared> s_;
};

}  // namespace blocking

}  // namespace rlock
