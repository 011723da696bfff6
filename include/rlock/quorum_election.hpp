#pragma once

#include "rlock/blocking.hpp"
#include "rlock/detail/completion.hpp"
#include "rlock/detail/quorum_flights.hpp"
#include "rlock/election.hpp"
#include "rlock/election_calls.hpp"
#include "rlock/election_change.hpp"
#include "rlock/export.hpp"
#include "rlock/quorum_lock.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlock {

class client;

namespace detail {
struct quorum_election_core;
}  // namespace detail
namespace blocking {
class quorum_election;
}  // namespace blocking

/// A leader election over N independent Redis deployments: rlock::election's calls, with the
/// lead held by a majority (rlock::quorum_lock, fenced) instead of one server, so that the loss
/// of a minority of nodes (a crash, a partition, a failover that lost writes) neither elects a
/// second leader nor stops the election.
///
/// **Model.** The lead is a fenced quorum_lock on the name (Redisson's reentrant hash on every
/// node, so a Java `RedissonRedLock` over the same nodes excludes a leader and is excluded). The
/// **term** is the quorum lock's token (`rlock_quorum_token:{<key>}` raised on a majority),
/// strictly greater than every earlier leader's. Every node keeps the leader record
/// `rlock_election:{<key>}` and the channel `rlock_election_channel:{<key>}` of a single-server
/// election; the leader writes them on every node (`quorum_election_announce`: a node keeps the
/// highest `(term, seq)` it was given, and publishes only what it keeps), and a change is made
/// when a majority took it. `seq` goes on from the highest a majority held when the lead was won.
///
/// **Observers** listen on every node and hear each change once, in `(term, seq)` order; a node
/// that missed writes while it was down is behind, and what it says is older than what the
/// others told. **leader()** asks every node and answers the leader a majority names (none while
/// no majority agrees on one term).
///
/// **Faults.** campaign() is the quorum lock's acquisition (rounds, drift, retakes, lost()
/// before the majority's validity ends); each announcement is written again as it was if its
/// answer is lost (a node keeps a change once, and publishes it once). A leader stops believing
/// (lost()) before any node can let another candidate win.
///
/// One candidate per object (copies are the same candidate), campaigning once at a time. Runs on
/// the first node's client executor; see quorum_lock for clients on several io_contexts.
class RLOCK_EXPORT quorum_election : public election_calls<quorum_election> {
 public:
  /// Waits, in whole milliseconds.
  using milliseconds = std::chrono::milliseconds;
  /// The first node's client executor type.
  using executor_type = boost::asio::any_io_executor;

  /// A new candidate in the election `name` over `nodes` (each another deployment). Throws as
  /// quorum_lock's constructor does; `options.fenced` is always on (the term is its token).
  /// Makes no request.
  quorum_election(std::vector<std::reference_wrapper<client>> nodes, std::string_view name,
                  quorum_options options = {});

  /// Waits until this candidate leads (a majority held, woken by the nodes' unlock messages),
  /// and announces `value` on a majority; its term. Errors: those of quorum_lock::lock(),
  /// quorum_unavailable when a majority did not take the announcement (the lead is given
  /// back), invalid_argument if another campaign of this candidate is in progress.
  /// Cancellation: terminal, partial, total; a lead won meanwhile is resigned.
  boost::asio::awaitable<std::int64_t> campaign(std::string value);
  /// campaign() waiting at most `wait` (0: one round); the term, or none if it did not lead.
  boost::asio::awaitable<std::optional<std::int64_t>> try_campaign(std::string value,
                                                                   milliseconds wait);
  /// The leader announces another value; done when a majority took it. not_owner if this
  /// candidate does not lead (or a later leader's change is on a node).
  boost::asio::awaitable<void> proclaim(std::string value);
  /// Announces `resigned` and gives up the lead: the next candidate is woken at once. not_owner
  /// if this candidate does not lead.
  boost::asio::awaitable<void> resign();
  /// Who leads now, as a majority of nodes says, or none. leader_info::owner is the leader's
  /// hash field on the node whose record was read (each node names it with its own client's
  /// uuid). quorum_unavailable when fewer than a majority answered.
  boost::asio::awaitable<std::optional<leader_info>> leader();
  /// Completes when this candidate, leading, is found to have lost the lead (before the
  /// majority's validity ends). not_owner if it does not lead.
  boost::asio::awaitable<void> lost();
  /// Every change of leader or value from now on, heard on every node, in (term, seq) order.
  /// The observer fails if a node's channel fails (a closed client, a refused channel).
  election_observer observe();

  /// The term of this candidate's latest win (0 before the first). Any thread.
  std::int64_t term() const noexcept;
  /// The election's name (without the key prefix).
  std::string_view name() const noexcept;
  /// The number of nodes, and how many make a majority.
  std::size_t nodes() const noexcept;
  /// `nodes() / 2 + 1`.
  std::size_t quorum() const noexcept;
  /// The quorum lock underneath (valid_until(), its per-node metrics).
  const quorum_lock& lock() const noexcept;
  /// The first node's client executor, where the election's operations run.
  executor_type get_executor() const noexcept;
  /// The words of the latest failed operation of this candidate. Any thread.
  std::string last_error() const;
  /// What this candidate (this object and its copies) has done. Any thread.
  election_metrics metrics() const;

 private:
  friend class blocking::quorum_election;
  friend class election_calls<quorum_election>;
  quorum_election(std::vector<std::reference_wrapper<client>> nodes, std::string_view name,
                  quorum_options options, std::shared_ptr<detail::quorum_flights> flights);

  static void start_campaign(const quorum_election& e, std::string value,
                             detail::handler<std::int64_t> h);
  static void start_try_campaign(const quorum_election& e, std::string value, milliseconds wait,
                                 detail::handler<std::optional<std::int64_t>> h);
  static void start_proclaim(const quorum_election& e, std::string value, detail::handler<> h);
  static void start_resign(const quorum_election& e, detail::handler<> h);
  static void start_leader(const quorum_election& e, detail::handler<std::optional<leader_info>> h);
  static void start_lost(const quorum_election& e, detail::handler<> h);

  std::shared_ptr<detail::quorum_election_core> core_;
};

namespace blocking {

/// rlock::quorum_election for threads, over one blocking::client per node: every call blocks
/// until its operation completes; failures throw boost::system::system_error. The candidate is
/// the object. Its end resigns a lead still held and waits for the work away on the nodes
/// (each piece within its node's command_timeout), as blocking::quorum_lock's does.
class quorum_election {
 public:
  /// A new candidate in the election `name` over `nodes`. Throws as
  /// rlock::quorum_election's constructor. Makes no request.
  quorum_election(std::vector<std::reference_wrapper<client>> nodes, std::string_view name,
                  quorum_options options = {})
      : election_(async_nodes(nodes, name, options), name, options, flights_) {
    first_ = &nodes.front().get();
    for (auto& n : nodes) {
      settle_bound_ =
          std::max(settle_bound_, 2 * n.get().async_client().get_config().command_timeout);
    }
  }
  quorum_election(const quorum_election&) = delete;
  quorum_election& operator=(const quorum_election&) = delete;
  ~quorum_election() {
    if (election_.metrics().leading) {
      try {
        first_->run(election_.resign());
      } catch (...) {
        // Lost meanwhile: nothing left to give back.
      }
    }
    (void)flights_->wait_for(settle_bound_);
  }

  /// Waits until this candidate leads; its term.
  std::int64_t campaign(std::string value) { return *take(std::move(value), std::nullopt); }
  /// campaign() waiting at most `wait` (rounded up to whole milliseconds; 0: one round).
  template <typename Rep, typename Period>
  std::optional<std::int64_t> try_campaign_for(std::string value,
                                               const std::chrono::duration<Rep, Period>& wait) {
    const auto ms =
        std::max(std::chrono::ceil<std::chrono::milliseconds>(wait), std::chrono::milliseconds(0));
    return take(std::move(value), ms);
  }
  /// The leader announces another value.
  void proclaim(std::string value) { first_->run(election_.proclaim(std::move(value))); }
  /// Gives up the lead.
  void resign() { first_->run(election_.resign()); }
  /// Who leads now, or none.
  std::optional<leader_info> leader() { return first_->run(election_.leader()); }
  /// Blocks until the lead is lost.
  void lost() { first_->run(election_.lost()); }
  /// The term of this candidate's latest win.
  std::int64_t term() const noexcept { return election_.term(); }
  /// What this candidate has done.
  election_metrics metrics() const { return election_.metrics(); }
  /// Every change from now on (blocking::election::observer's calls).
  election::observer observe() { return election::observer(first_, election_.observe()); }
  /// The asynchronous election underneath.
  rlock::quorum_election& async_election() noexcept { return election_; }

 private:
  static std::vector<std::reference_wrapper<rlock::client>> async_nodes(
      const std::vector<std::reference_wrapper<client>>& nodes, std::string_view name,
      const quorum_options& options) {
    if (nodes.empty()) rlock::quorum_lock({}, name, options);  // its check, with its words
    std::vector<std::reference_wrapper<rlock::client>> out;
    for (auto& n : nodes) out.emplace_back(n.get().async_client());
    return out;
  }

  /// A campaign as an acquisition of the blocking client: a lead won while the caller gets a
  /// handler's exception instead is resigned.
  std::optional<std::int64_t> take(std::string value,
                                   std::optional<std::chrono::milliseconds> wait) {
    std::optional<std::int64_t> term;
    const bool took = first_->run_acquisition(
        [](rlock::quorum_election e, std::string v, std::optional<std::chrono::milliseconds> within,
           std::optional<std::int64_t>* out) -> boost::asio::awaitable<bool> {
          if (!within) {
            *out = co_await e.campaign(std::move(v));
          } else {
            *out = co_await e.try_campaign(std::move(v), *within);
          }
          co_return out->has_value();
        }(election_, std::move(value), wait, &term),
        [e = election_]() {
          return [](rlock::quorum_election mine) -> boost::asio::awaitable<void> {
            co_await mine.resign();
          }(e);
        });
    return took ? term : std::nullopt;
  }

  std::shared_ptr<rlock::detail::quorum_flights> flights_ =
      std::make_shared<rlock::detail::quorum_flights>();
  client* first_ = nullptr;
  std::chrono::milliseconds settle_bound_{0};
  rlock::quorum_election election_;
};

}  // namespace blocking

}  // namespace rlock
