// The quorum lock's shell. The decisions are the sans-I/O parts' (quorum_round: one round;
// quorum_readiness: when a waiter is worth another round; quorum_hold: what a holder believes);
// this file starts what they say on each node's client, with the engine's own operations on one
// reentrant-lock owner per node (a single attempt, a release, lost()), and feeds their answers
// back. Everything of the lock's own runs on its executor (the first node's client's); each
// node's operations run on that node's client.
#include "rlock/quorum_lock.hpp"

#include "engine/coroutine_cancellation.hpp"
#include "engine/deadline.hpp"
#include "engine/engine_context.hpp"
#include "engine/kind_access.hpp"
#include "engine/lock_state.hpp"
#include "engine/operations.hpp"
#include "engine/owner_table.hpp"
#include "engine/round_trip.hpp"
#include "engine/spawn.hpp"
#include "kinds/registry.hpp"
#include "names/names.hpp"
#include "quorum/node_listener.hpp"
#include "quorum/node_refusals.hpp"
#include "quorum/quorum_access.hpp"
#include "quorum/quorum_hold.hpp"
#include "quorum/quorum_readiness.hpp"
#include "quorum/quorum_round.hpp"
#include "quorum/restart_watch.hpp"
#include "quorum/token_raise.hpp"
#include "rlock/client.hpp"
#include "rlock/error.hpp"
#include "script/scripts.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <random>
#include <set>

namespace rlock::detail {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;
using vote = quorum_tally::vote;

/// One node: its client's engine and this owner's lock state there.
struct quorum_node {
  std::shared_ptr<engine_context> ctx;
  std::shared_ptr<lock_state> s;
  std::string label;  // the deployment, as errors name it
  /// The node's client's config::watchdog_timeout: the lease of a hold without one of its own.
  milliseconds watchdog_lease{};
};

/// A hold: the nodes that granted, what the holder believes (quorum_hold), and the signals of
/// its end. Executor only.
struct quorum_holding {
  quorum_holding(const asio::any_io_executor& ex, quorum_hold h, std::size_t nodes,
                 std::optional<milliseconds> l)
      : hold(std::move(h)),
        lease(l),
        deadline(ex, clock_type::time_point::max()),
        ended_bell(ex, clock_type::time_point::max()),
        stop_watching(nodes) {}
  quorum_hold hold;
  std::optional<milliseconds> lease;  // none: the watchdogs renew
  asio::steady_timer deadline;        // at hold.deadline()
  asio::steady_timer ended_bell;      // cancelled when lost or released: wakes lost()'s waiters
  std::vector<asio::cancellation_signal> stop_watching;  // per node: its lost() watch
  node_set watched = 0;                                  // nodes whose lost() is watched
  std::uint64_t holds = 1;
  std::int64_t token = 0;  // fenced: the token a majority was raised to (0: none)
  bool lost = false;
  bool released = false;

  bool believed_held() const noexcept { return !lost && !released; }
};

struct quorum_core : std::enable_shared_from_this<quorum_core> {
  quorum_core(asio::any_io_executor executor, std::string n, quorum_options o,
              std::shared_ptr<quorum_flights> f)
      : ex(std::move(executor)),
        flights(std::move(f)),
        name(std::move(n)),
        owner(next_owner_id()),
        options(o),
        drift{o.drift_parts_per_million, o.drift_floor},
        turn(ex, clock_type::time_point::max()) {}

  const asio::any_io_executor ex;
  /// Its work away on the nodes' executors, coming back to `ex` (each piece holds a ticket).
  const std::shared_ptr<quorum_flights> flights;
  const std::string name;
  const std::uint64_t owner;
  const quorum_options options;
  const drift_policy drift;
  std::vector<quorum_node> nodes;
  std::size_t quorum = 1;
  milliseconds round_timeout{};
  /// How often a hold renewed by the watchdogs reads their confirmations: a third of the
  /// shortest of the nodes' watchdog leases, as often as they renew.
  milliseconds confirmation_reads{};

  // Executor only.
  std::shared_ptr<quorum_holding> current;  // the latest hold (null: none yet)
  bool acquiring = false;                   // one acquisition of this owner at a time
  std::int64_t highest_token = 0;           // fenced: the highest count seen on any node
  std::uint64_t raises = 0;                 // fenced: raises made (each its own marker)
  asio::steady_timer turn;                  // wakes acquisitions waiting for that one

  // Any thread.
  std::atomic<clock_type::rep> valid_until_ticks{
      clock_type::time_point::min().time_since_epoch().count()};
  mutable std::mutex error_mutex;
  std::string error_text;
  std::atomic<std::int64_t> token{0};  // the current hold's token (0: none, or not fenced)
  /// quorum_lock::metrics(): counters, and the nodes the current hold has.
  struct counters {
    std::atomic<std::uint64_t> rounds{0};
    std::atomic<std::uint64_t> rounds_won{0};
    std::atomic<std::uint64_t> holds_lost{0};
    std::atomic<std::uint64_t> retakes{0};
    std::atomic<std::uint64_t> token_raises{0};
    std::atomic<node_set> held_nodes{0};
  } count;
  /// Per node: votes granted, refused, failed (quorum_tally::vote's order less pending).
  std::vector<std::array<std::atomic<std::uint64_t>, 3>> votes;
  void count_vote(std::size_t i, vote v) {
    if (v != vote::pending)
      votes[i][static_cast<std::size_t>(v) - 1].fetch_add(1, std::memory_order_relaxed);
  }

  void set_error(std::string text) {
    const std::lock_guard guard(error_mutex);
    error_text = std::move(text);
  }
  void publish_validity() {
    const auto until = believed() ? current->hold.deadline() : clock_type::time_point::min();
    token.store(believed() ? current->token : 0, std::memory_order_relaxed);
    count.held_nodes.store(believed() ? current->hold.held() : node_set{0},
                           std::memory_order_relaxed);
    valid_until_ticks.store(until.time_since_epoch().count(), std::memory_order_relaxed);
  }
  std::vector<milliseconds> leases(std::optional<milliseconds> lease) const {
    std::vector<milliseconds> out;
    out.reserve(nodes.size());
    for (const auto& n : nodes) out.push_back(lease.value_or(n.watchdog_lease));
    return out;
  }
  bool believed() const noexcept { return current && !current->lost && !current->released; }

  // --- the hold (executor only) --------------------------------------------------------------

  /// A round was won at `sent` with `granted`: the hold begins, watched.
  void begin_hold(node_set granted, clock_type::time_point sent, std::optional<milliseconds> lease);
  void watch_node(const std::shared_ptr<quorum_holding>& h, std::size_t i);
  void arm_deadline(const std::shared_ptr<quorum_holding>& h);
  void on_deadline(const std::shared_ptr<quorum_holding>& h);
  void on_node_lost(const std::shared_ptr<quorum_holding>& h, std::size_t i);
  void retake(const std::shared_ptr<quorum_holding>& h, std::size_t i);
  /// A grant that came after its round was decided, or a retake's: joins `h` if it is still
  /// believed, else goes back.
  void late_grant(const std::shared_ptr<quorum_holding>& h, std::size_t i,
                  clock_type::time_point sent);
  void lose(const std::shared_ptr<quorum_holding>& h, std::string why);
  /// Ends `h` without a word to its nodes (lost, released, or given back).
  void stop(const std::shared_ptr<quorum_holding>& h);
  /// Ends `h` (marked lost or released) and gives back every node it holds.
  void give_back(const std::shared_ptr<quorum_holding>& h);
  /// The completion of an operation on node i: runs `f` on this lock's executor, whichever
  /// thread the node's client completes it on (a handler whose executor is the node's would run
  /// there, inline), cancelled through `slot` if it is connected. Counted in `flights` until it
  /// ran.
  template <typename... Result, typename F>
  handler<Result...> node_handler(std::size_t i, F f, asio::cancellation_slot slot = {}) const {
    auto counted = [away = quorum_flights::ticket(flights), f = std::move(f)](auto&&... a) mutable {
      f(std::forward<decltype(a)>(a)...);
    };
    return handler<Result...>(
        asio::bind_cancellation_slot(slot, asio::bind_executor(ex, std::move(counted))),
        nodes[i].s->executor());
  }
  void release_node(std::size_t i) {
    async_release(nodes[i].s, node_handler<>(i, [](const failure&) {}));
  }
};

// --- rounds --------------------------------------------------------------------------------------

/// What a waiter knows of the nodes between rounds (quorum_readiness), fed by the rounds'
/// answers and the listeners. Executor only.
struct quorum_wait {
  quorum_wait(const asio::any_io_executor& ex, std::size_t nodes)
      : readiness(nodes), bell(ex, clock_type::time_point::max()), why(nodes), refusals(nodes) {}
  quorum_readiness readiness;
  asio::steady_timer bell;
  std::vector<std::string> why;  // per node: why it is unreachable
  node_refusals refusals;        // per node: its latest answer, if a refusal no retry changes
  std::vector<std::shared_ptr<node_listener>> listeners;

  void ring() { bell.cancel(); }
};

/// One round in flight: the machine, one cancellation per node's attempt, and the decision.
struct round_run : std::enable_shared_from_this<round_run> {
  round_run(std::shared_ptr<quorum_core> c, std::optional<milliseconds> l, clock_type::time_point s,
            std::shared_ptr<quorum_wait> w)
      : core(std::move(c)),
        lease(l),
        sent(s),
        fsm(core->leases(l), core->drift, s, saturating_add(s, core->round_timeout)),
        signals(core->nodes.size()),
        bell(core->ex, clock_type::time_point::max()),
        bound(core->ex, clock_type::time_point::max()),
        wait(std::move(w)) {}

  std::shared_ptr<quorum_core> core;
  std::optional<milliseconds> lease;
  clock_type::time_point sent;
  quorum_round fsm;
  std::vector<asio::cancellation_signal> signals;
  asio::steady_timer bell;   // cancelled at the decision
  asio::steady_timer bound;  // at the round's bound
  std::shared_ptr<quorum_wait> wait;
  std::shared_ptr<quorum_holding> hold;  // the hold a won round began
  bool decided = false;
  bool won = false;
  std::size_t unanswered = 0;  // attempts started and not answered yet

  void apply(const quorum_step& step) {
    for (std::size_t i = 0; i < core->nodes.size(); ++i) {
      if ((step.cancel & node_bit(i)) != 0) signals[i].emit(asio::cancellation_type::terminal);
    }
    switch (step.what) {
      case quorum_step::kind::attempt:
        for (std::size_t i = 0; i < core->nodes.size(); ++i) {
          if ((step.nodes & node_bit(i)) != 0) attempt(i);
        }
        break;
      case quorum_step::kind::release:
        for (std::size_t i = 0; i < core->nodes.size(); ++i) {
          if ((step.nodes & node_bit(i)) != 0) release(i);
        }
        break;
      case quorum_step::kind::complete:
        decided = true;
        won = step.won;
        if (won) {
          core->begin_hold(fsm.granted(), sent, lease);
          hold = core->current;
        }
        bound.cancel();
        bell.cancel();
        break;
      case quorum_step::kind::wait:
        break;
    }
  }

  void attempt(std::size_t i) {
    ++unanswered;
    if (core->options.restart_delay.count() == 0) return send_attempt(i);
    // Not sent to a node that came back too recently to vote.
    restart_left(i, [self = shared_from_this(), i](milliseconds left) {
      if (left.count() == 0) return self->send_attempt(i);
      self->on_answer(i, self->sits_out(i, left, "sits out"), false, milliseconds(-1));
    });
  }

  void send_attempt(std::size_t i) {
    const auto& n = core->nodes[i];
    auto answered = [self = shared_from_this(), i](failure f, bool got, milliseconds ttl) {
      if (!got || self->core->options.restart_delay.count() == 0) {
        return self->on_answer(i, std::move(f), got, ttl);
      }
      // Asked again once granted: an attempt queued while the node was down is written on the
      // connection that found it back (empty, perhaps), after the check before it was sent.
      self->restart_left(i, [self, i, ttl](milliseconds left) {
        if (left.count() == 0) return self->on_answer(i, failure(), true, ttl);
        self->core->release_node(i);  // granted, but no vote: given back
        self->on_answer(i, self->sits_out(i, left, "its grant does not count and goes back"), false,
                        ttl);
      });
    };
    async_attempt(
        n.s, lease,
        core->node_handler<bool, milliseconds>(i, std::move(answered), signals[i].slot()));
  }

  /// How long node i must still sit out (restart_delay), read on its client (the moment it came
  /// back is its session's), then `then(left)` on the lock's executor.
  template <typename Then>
  void restart_left(std::size_t i, Then then) {
    asio::post(
        core->nodes[i].s->executor(), [self = shared_from_this(), i, then = std::move(then),
                                       away = quorum_flights::ticket(core->flights)]() mutable {
          const auto left = restart_wait(self->core->nodes[i].ctx->session.stats().reconnected_at,
                                         clock_type::now(), self->core->options.restart_delay);
          asio::post(self->core->ex, [left, then = std::move(then),
                                      back = std::move(away)]() mutable { then(left); });
        });
  }

  failure sits_out(std::size_t i, milliseconds left, std::string_view what) const {
    return {
        errc::connection_lost,
        fmt::format("{}: reconnected lately; {} (restart_delay {} ms, {} ms more)",
                    core->nodes[i].label, what, core->options.restart_delay.count(), left.count())};
  }

  void release(std::size_t i) {
    auto released = [self = shared_from_this(), i](const failure&) {
      self->apply(self->fsm.on_released(i));
    };
    async_release(core->nodes[i].s, core->node_handler<>(i, std::move(released)));
  }

  void on_answer(std::size_t i, failure f, bool got, milliseconds ttl) {
    if (--unanswered == 0 && decided) bell.cancel();
    const auto now = clock_type::now();
    const vote v = got ? vote::granted : f ? vote::failed : vote::refused;
    // An attempt the round cancelled is no vote of its node.
    if (f.code != asio::error::operation_aborted) core->count_vote(i, v);
    if (f && f.code != asio::error::operation_aborted) {
      if (wait) wait->why[i] = fmt::format("{}: {}", core->nodes[i].label, f.text());
    }
    if (wait && f.code != asio::error::operation_aborted) wait->refusals.on_answer(i, f);
    if (fsm.over() && won && got) {
      // Late: a grant after the round was won joins the hold, if it is still believed.
      (void)fsm.on_answer(i, v, now);
      core->late_grant(hold, i, sent);
      return;
    }
    if (wait) {
      // Until when a busy node's holder keeps it, if nobody publishes: its TTL (none to go
      // by: the node's watchdog lease, the longest a renewed holder goes unrenewed).
      const auto ttl_or_lease = ttl.count() >= 0 ? ttl : core->nodes[i].watchdog_lease;
      wait->readiness.after_round(i, v, now + ttl_or_lease);
      wait->ring();
    }
    apply(fsm.on_answer(i, v, now));
  }

  void on_bound() {
    if (!decided) apply(fsm.on_bound(clock_type::now()));
  }
};

/// Runs one round and returns it decided (a won round has begun its hold). Its releases and
/// late answers go on after.
asio::awaitable<std::shared_ptr<round_run>> run_round(std::shared_ptr<quorum_core> core,
                                                      std::optional<milliseconds> lease,
                                                      std::shared_ptr<quorum_wait> wait) {
  auto r = std::make_shared<round_run>(core, lease, clock_type::now(), std::move(wait));
  core->count.rounds.fetch_add(1, std::memory_order_relaxed);
  r->bound.expires_at(saturating_add(r->sent, core->round_timeout));
  r->bound.async_wait([r](boost::system::error_code ec) {
    if (!ec) r->on_bound();
  });
  r->apply(r->fsm.start());
  // Bounded: the round's bound decides it at the latest (a cancellation of the caller only
  // ends a wait on the bell early; the round is still waited for). Stragglers go on: a won
  // round's join the hold, a lost round's are given back as they land (settled()).
  for (int i = 0; i < 10'000 && !r->decided; ++i) {
    r->bell.expires_at(clock_type::time_point::max());
    (void)co_await r->bell.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  co_return r;
}

/// Until every attempt of a decided round has answered. The engine answers an attempt the round
/// cancelled after giving back a grant it made, so then nothing of a lost round is left on any
/// node; each answers within its command_timeout.
asio::awaitable<void> settled(std::shared_ptr<round_run> r) {
  for (int i = 0; i < 10'000 && r->unanswered > 0; ++i) {
    r->bell.expires_at(clock_type::time_point::max());
    (void)co_await r->bell.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

// --- the hold --------------------------------------------------------------------------------

void quorum_core::begin_hold(node_set granted, clock_type::time_point sent,
                             std::optional<milliseconds> lease) {
  if (believed()) stop(current);
  count.rounds_won.fetch_add(1, std::memory_order_relaxed);
  current = std::make_shared<quorum_holding>(ex, quorum_hold(leases(lease), drift, granted, sent),
                                             nodes.size(), lease);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if ((granted & node_bit(i)) != 0) watch_node(current, i);
  }
  arm_deadline(current);
  publish_validity();
}

void quorum_core::watch_node(const std::shared_ptr<quorum_holding>& h, std::size_t i) {
  // Only a node renewed by its watchdog is told lost by it; a leased grant simply runs out.
  if (h->lease || (h->watched & node_bit(i)) != 0) return;
  h->watched |= node_bit(i);
  auto told = [self = shared_from_this(), h, i](const failure& f) {
    h->watched &= ~node_bit(i);
    // Cancelled (the hold ended), or not held through the watchdog (its grant was given back
    // meanwhile): nothing to do.
    if (f) return;
    self->on_node_lost(h, i);
  };
  async_lost(nodes[i].s, node_handler<>(i, std::move(told), h->stop_watching[i].slot()));
}

void quorum_core::arm_deadline(const std::shared_ptr<quorum_holding>& h) {
  // Renewed by the watchdogs: their confirmations are read as often as they renew, so
  // valid_until() moves with them and the deadline is only reached when renewals stop.
  auto at = h->hold.deadline();
  if (!h->lease) at = std::min(at, clock_type::now() + confirmation_reads);
  h->deadline.expires_at(at);
  h->deadline.async_wait([self = shared_from_this(), h](boost::system::error_code ec) {
    if (!ec) self->on_deadline(h);
  });
}

void quorum_core::on_deadline(const std::shared_ptr<quorum_holding>& h) {
  if (h->lost || h->released) return;
  if (h->lease) {
    if (h->hold.check(clock_type::now())) {
      lose(h, fmt::format("quorum lock '{}': its lease is over", name));
    } else {
      arm_deadline(h);
    }
    return;
  }
  // Renewed by the watchdogs: what each node's renewals confirmed moves the deadline. Read on
  // each node's client, then decided here.
  auto self = shared_from_this();
  asio::co_spawn(
      ex,
      [self, h]() -> asio::awaitable<void> {
        for (std::size_t i = 0; i < self->nodes.size(); ++i) {
          if ((h->hold.held() & node_bit(i)) == 0) continue;
          const auto& n = self->nodes[i];
          auto read = [n]() -> asio::awaitable<clock_type::time_point> {
            co_return n.s->renewal_confirmed();
          };
          const quorum_flights::ticket away(self->flights);
          const auto confirmed =
              co_await asio::co_spawn(n.s->executor(), read, asio::use_awaitable);
          h->hold.on_confirmed(i, confirmed);
        }
        if (h->lost || h->released) co_return;
        if (h->hold.check(clock_type::now())) {
          self->lose(h, fmt::format("quorum lock '{}': fewer than {} of its {} nodes confirmed a "
                                    "renewal before the validity ended",
                                    self->name, self->quorum, self->nodes.size()));
          co_return;
        }
        self->arm_deadline(h);
        self->publish_validity();
      },
      asio::detached);
}

void quorum_core::on_node_lost(const std::shared_ptr<quorum_holding>& h, std::size_t i) {
  if (h->lost || h->released) return;
  switch (h->hold.on_node_lost(i)) {
    case quorum_hold::step::none:
      break;
    case quorum_hold::step::retake:
      publish_validity();
      retake(h, i);
      break;
    case quorum_hold::step::lost:
      lose(h, fmt::format("quorum lock '{}': fewer than {} of its {} nodes still hold it (the "
                          "latest: {})",
                          name, quorum, nodes.size(), nodes[i].label));
      break;
  }
}

void quorum_core::retake(const std::shared_ptr<quorum_holding>& h, std::size_t i) {
  count.retakes.fetch_add(1, std::memory_order_relaxed);
  const auto sent = clock_type::now();
  auto answered = [self = shared_from_this(), h, i, sent](const failure&, bool got, milliseconds) {
    if (got) self->late_grant(h, i, sent);
  };
  async_attempt(nodes[i].s, h->lease, node_handler<bool, milliseconds>(i, std::move(answered)));
}

void quorum_core::late_grant(const std::shared_ptr<quorum_holding>& h, std::size_t i,
                             clock_type::time_point sent) {
  if (!h || h != current || h->lost || h->released) {
    release_node(i);
    return;
  }
  h->hold.on_retaken(i, true, sent);
  watch_node(h, i);
  publish_validity();
}

void quorum_core::lose(const std::shared_ptr<quorum_holding>& h, std::string why) {
  if (h->lost || h->released) return;
  h->lost = true;
  count.holds_lost.fetch_add(1, std::memory_order_relaxed);
  set_error(why);
  nodes.front().ctx->log(log_level::warning, "{}", why);
  // What is left excludes nobody any more; it goes back so that the others need not wait for
  // its leases.
  give_back(h);
}

void quorum_core::give_back(const std::shared_ptr<quorum_holding>& h) {
  stop(h);
  const node_set held = h->hold.held();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if ((held & node_bit(i)) != 0) release_node(i);
  }
  publish_validity();
}

void quorum_core::stop(const std::shared_ptr<quorum_holding>& h) {
  h->deadline.cancel();
  h->ended_bell.cancel();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if ((h->watched & node_bit(i)) != 0)
      h->stop_watching[i].emit(asio::cancellation_type::terminal);
  }
}

// --- acquisitions --------------------------------------------------------------------------------

namespace {

/// Why too few nodes could answer, naming each; empty when a majority could.
/// The nodes of a lost round that could not vote, each with why: empty when all could.
std::string failing_nodes(const quorum_core& core, const quorum_wait& w,
                          const quorum_round& round) {
  std::string text;
  for (std::size_t i = 0; i < core.nodes.size(); ++i) {
    if (round.tally().at(i) != vote::failed) continue;
    text.append(text.empty() ? " " : "; ");
    text.append(w.why[i].empty() ? fmt::format("{}: no answer within the round ({} ms)",
                                               core.nodes[i].label, core.round_timeout.count())
                                 : w.why[i]);
  }
  return text;
}

/// Why too few nodes could answer for a majority, naming each; empty when a majority could.
std::string unavailable(const quorum_core& core, const quorum_wait& w, const quorum_round& round) {
  const std::size_t failed = round.tally().count(vote::failed);
  if (core.nodes.size() - failed >= core.quorum) return {};
  return fmt::format(
      "quorum lock '{}': {} of its {} nodes could not answer, and {} make a "
      "majority:{}",
      core.name, failed, core.nodes.size(), core.quorum, failing_nodes(core, w, round));
}

void leave_all(quorum_wait& w) {
  for (auto& l : w.listeners) l->leave();
  w.listeners.clear();
}

/// The nodes' labels, in order, for errors that name them.
std::vector<std::string> labels_of(const quorum_core& core) {
  std::vector<std::string> out;
  for (const auto& n : core.nodes) out.push_back(n.label);
  return out;
}

/// A fenced hold's token (token_raise): proposals raised on every node at once until a majority
/// wrote one within the hold's validity (the answer), or that became impossible (0, with the
/// refusal that made it so if the nodes refused it: an ACL without the counter's key or HSET).
asio::awaitable<std::pair<std::int64_t, failure>> raise_token(std::shared_ptr<quorum_core> core,
                                                              std::shared_ptr<quorum_holding> h) {
  struct raising {
    raising(const asio::any_io_executor& ex, std::size_t nodes, std::int64_t proposal)
        : bell(ex, clock_type::time_point::max()), tally(nodes, proposal), refusals(nodes) {}
    asio::steady_timer bell;
    token_raise tally;
    node_refusals refusals;
  };
  // Unique per raise: a retried run of this raise answers "written", another raise's does not.
  const std::string marker = fmt::format("{}:{}", core->owner, ++core->raises);
  std::int64_t proposal = core->highest_token + 1;
  // Bounded: each try proposes past every count seen, and the hold's deadline ends them.
  for (int tries = 0; tries < 8 && !h->lost && !h->released; ++tries) {
    core->count.token_raises.fetch_add(1, std::memory_order_relaxed);
    auto r = std::make_shared<raising>(core->ex, core->nodes.size(), proposal);
    for (std::size_t i = 0; i < core->nodes.size(); ++i) {
      const auto& n = core->nodes[i];
      auto make = [proposal_arg = std::to_string(proposal), marker, counter = std::string()](
                      lock_state& st, release_script_call& call) mutable {
        append_tagged_name(quorum_token_prefix, st.key(), counter);
        call.which = script::raise_quorum_token;
        call.keys = {counter};
        call.key_count = 1;
        call.args = {proposal_arg, marker};
        call.arg_count = 2;
        return failure();
      };
      using answer = std::pair<bool, std::int64_t>;
      auto read = [](lock_state&, const resp3::value& reply) -> std::optional<answer> {
        if (reply.elements.size() != 2) return std::nullopt;
        const auto wrote = as_integer(reply.elements[0]);
        const auto before = as_integer(reply.elements[1]);
        if (!wrote || !before) return std::nullopt;
        return answer{*wrote == 1, *before};
      };
      auto done = [r, i](const failure& f, answer a) {
        r->refusals.on_answer(i, f);
        if (f) {
          r->tally.on_failed();
        } else {
          r->tally.on_answer(a.first, a.second);
        }
        r->bell.cancel();
      };
      run_script<answer>(n.s, std::move(make),
                         fmt::format("quorum lock '{}': raise its token", core->name),
                         core->node_handler<answer>(i, std::move(done)), read);
    }
    const auto deadline = h->hold.deadline();
    for (int i = 0; i < 10'000 && !r->tally.confirmed() && !r->tally.hopeless(); ++i) {
      if (clock_type::now() >= deadline) co_return std::pair{std::int64_t{0}, failure()};
      r->bell.expires_at(deadline);
      (void)co_await r->bell.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    core->highest_token = std::max(core->highest_token, r->tally.next_proposal() - 1);
    if (r->tally.confirmed() && clock_type::now() < deadline)
      co_return std::pair{proposal, failure()};
    if (auto refused = r->refusals.hopeless(
            core->quorum, labels_of(*core),
            fmt::format("quorum lock '{}': its fencing token's counter ({}{{<key>}}) was refused "
                        "by too many nodes for a majority:",
                        core->name, quorum_token_prefix))) {
      co_return std::pair{std::int64_t{0}, std::move(refused)};
    }
    if (r->tally.all_answered() || r->tally.hopeless()) proposal = r->tally.next_proposal();
  }
  co_return std::pair{std::int64_t{0}, failure()};
}

/// Rounds until one is won, the wait is over or the caller cancels; waiting between them for
/// what quorum_readiness says is worth another.
asio::awaitable<std::pair<failure, bool>> take(std::shared_ptr<quorum_core> core,
                                               std::optional<milliseconds> wait,
                                               std::optional<milliseconds> lease) {
  const auto deadline =
      wait ? saturating_add(clock_type::now(), *wait) : clock_type::time_point::max();
  auto w = std::make_shared<quorum_wait>(core->ex, core->nodes.size());
  std::minstd_rand jitter(static_cast<std::uint32_t>(core->owner));
  // Ends with a round won, the wait over or the caller's cancellation (lock() waits as long as it
  // takes: each round is bounded, and between rounds it sleeps).
  for (;;) {
    auto round = co_await run_round(core, lease, w);
    const bool was_cancelled = co_await caller_cancelled();
    if (round->won) {
      auto h = round->hold;
      if (core->options.fenced && !was_cancelled) {
        auto [token, refused] = co_await raise_token(core, h);
        if (token != 0) {
          h->token = token;
          core->publish_validity();
        } else if (h->believed_held()) {
          // No majority took a token within the validity: the hold excludes, but fences
          // nothing; it goes back, and the round counts as lost. Its nodes answered, but not
          // usefully: they are asked again after unreachable_retry.
          core->set_error(
              fmt::format("quorum lock '{}': its fencing token was not raised on a "
                          "majority within the hold's validity",
                          core->name));
          h->released = true;
          core->give_back(h);
          if (refused) {
            // No retry changes a refusal: the caller hears it, as a single lock's would.
            core->set_error(std::string(refused.text()));
            leave_all(*w);
            co_return std::pair{std::move(refused), false};
          }
          for (std::size_t i = 0; i < core->nodes.size(); ++i) {
            w->readiness.after_round(i, vote::failed, {});
          }
        }
      }
      const bool cancelled_now = co_await caller_cancelled();
      if (h->believed_held()) {
        leave_all(*w);
        if (!cancelled_now) co_return std::pair{failure(), true};
        // Told otherwise: the hold goes back before the caller hears.
        h->released = true;
        core->give_back(h);
        co_return std::pair{cancelled(), false};
      }
    }
    std::string missing = unavailable(*core, *w, round->fsm);
    if (!missing.empty()) {
      core->set_error(missing);
    } else if (const auto failing = failing_nodes(*core, *w, round->fsm); !failing.empty()) {
      core->set_error(fmt::format("quorum lock '{}': not taken; nodes that could not vote:{}",
                                  core->name, failing));
    }
    auto give_up = [&]() -> std::pair<failure, bool> {
      leave_all(*w);
      if (!missing.empty()) return {failure(errc::quorum_unavailable, missing), false};
      return {failure(), false};
    };
    if (was_cancelled) {
      leave_all(*w);
      co_return std::pair{cancelled(), false};
    }
    if (auto refused = w->refusals.hopeless(
            core->quorum, labels_of(*core),
            fmt::format("quorum lock '{}': refused by too many of its nodes for a majority:",
                        core->name))) {
      // No retry changes a refusal (an ACL right missing): the caller hears it now instead of
      // waiting for a majority that cannot come. What the round took went back with it.
      core->set_error(std::string(refused.text()));
      if (wait && wait->count() == 0) co_await settled(round);
      leave_all(*w);
      co_return std::pair{std::move(refused), false};
    }
    if (wait && wait->count() == 0) {
      // One round, a single round trip per node: its caller is told when nothing of it is left
      // (bounded by command_timeout, as a single attempt is). A wait is the bound: past it the
      // stragglers' grants are given back as they land.
      co_await settled(round);
      co_return give_up();
    }
    if (clock_type::now() >= deadline) co_return give_up();
    if (w->listeners.empty()) {
      // Listening from now on, on every node: a subscription confirmed after the busy answers
      // makes its node worth asking again (an unlock meanwhile went unheard).
      auto sink = [weak = std::weak_ptr<quorum_wait>(w)](std::size_t i, node_listener::heard what,
                                                         const std::string& why) {
        const auto ww = weak.lock();
        if (!ww) return;
        switch (what) {
          case node_listener::heard::unlock:
            ww->readiness.on_unlock_message(i);
            break;
          case node_listener::heard::subscribed:
            ww->readiness.on_subscribed(i);
            break;
          case node_listener::heard::failed:
            ww->why[i] = why;
            ww->readiness.on_connection_lost(i);
            break;
        }
        ww->ring();
      };
      for (std::size_t i = 0; i < core->nodes.size(); ++i) {
        const auto& n = core->nodes[i];
        auto l = std::make_shared<node_listener>(n.ctx, std::string(n.s->key()), n.s->channel(),
                                                 n.s->kind.on_message, i, core->ex,
                                                 quorum_flights::ticket(core->flights), sink);
        l->join();
        w->listeners.push_back(std::move(l));
      }
    }
    // Until a round is worth it: pushes, a holder's TTL running out, the caller's fallback
    // delay, a failing node's retry, the wait's end or the caller's cancellation.
    const auto lost_at = clock_type::now();
    auto fallback = clock_type::time_point::max();
    if (core->options.retry_delay) {
      const auto base = std::max<milliseconds::rep>(core->options.retry_delay->count(), 1);
      std::uniform_int_distribution<milliseconds::rep> spread(base / 2, base + base / 2);
      fallback = lost_at + milliseconds(spread(jitter));
    }
    auto failing_retry = lost_at + core->options.unreachable_retry;
    for (int naps = 0; naps < 1'000'000; ++naps) {
      const bool stop_waiting = co_await caller_cancelled();
      if (stop_waiting) {
        leave_all(*w);
        co_return std::pair{cancelled(), false};
      }
      const auto now = clock_type::now();
      if (now >= deadline) co_return give_up();
      if (now >= fallback || w->readiness.worth_a_round(now)) break;
      if (now >= failing_retry) {
        // A node that failed without losing its connection is asked again.
        failing_retry = clock_type::time_point::max();  // once per lost round
        for (std::size_t i = 0; i < core->nodes.size(); ++i) {
          if (w->readiness.state(i) == quorum_readiness::node_state::unreachable) {
            w->readiness.on_subscribed(i);
          }
        }
        if (w->readiness.worth_a_round(now)) break;
      }
      // A failing node is asked again only when the busy ones' expiries cannot make a majority.
      const auto expiry = w->readiness.next_expiry(now);
      auto until = std::min({deadline, fallback, expiry});
      if (expiry == clock_type::time_point::max()) until = std::min(until, failing_retry);
      w->bell.expires_at(until);
      (void)co_await w->bell.async_wait(asio::as_tuple(asio::use_awaitable));
    }
  }
}

/// An acquisition of this owner: re-entered while the hold is believed, else rounds (one
/// acquisition of the owner at a time: a second waits for the first, then re-enters or takes).
asio::awaitable<std::pair<failure, bool>> acquire(std::shared_ptr<quorum_core> core,
                                                  std::optional<milliseconds> wait,
                                                  std::optional<milliseconds> lease) {
  co_await let_every_cancellation_in();
  if ((wait && wait->count() < 0) ||
      (lease && (lease->count() < 1 || lease->count() > 0x7fff'ffff))) {
    co_return std::pair{
        failure(errc::invalid_argument,
                fmt::format("quorum lock '{}': a wait must be 0 or more, a lease 1 ms to 2^31 - 1 "
                            "ms",
                            core->name)),
        false};
  }
  const auto deadline =
      wait ? saturating_add(clock_type::now(), *wait) : clock_type::time_point::max();
  for (int turns = 0; core->acquiring && turns < 1'000'000; ++turns) {
    const bool was_cancelled = co_await caller_cancelled();
    if (was_cancelled) co_return std::pair{cancelled(), false};
    if (clock_type::now() >= deadline) co_return std::pair{failure(), false};
    core->turn.expires_at(deadline);
    (void)co_await core->turn.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  if (core->believed()) {
    ++core->current->holds;
    co_return std::pair{failure(), true};
  }
  core->acquiring = true;
  const auto left =
      wait ? std::optional<milliseconds>(
                 std::max(milliseconds::zero(),
                          std::chrono::duration_cast<milliseconds>(deadline - clock_type::now())))
           : std::nullopt;
  auto outcome = co_await take(core, left, lease);
  core->acquiring = false;
  core->turn.cancel();
  if (outcome.first) core->set_error(std::string(outcome.first.text()));
  co_return outcome;
}

/// The last unlock releases every held node at once, and is done when a majority confirmed.
asio::awaitable<failure> release_hold(std::shared_ptr<quorum_core> core) {
  auto h = core->current;
  if (!h || h->released) {
    co_return failure(errc::not_owner, fmt::format("quorum lock '{}' is not held by owner {}",
                                                   core->name, core->owner));
  }
  if (h->lost) {
    h->released = true;
    co_return failure(errc::not_owner,
                      fmt::format("quorum lock '{}' was lost before this unlock", core->name));
  }
  if (h->holds > 1) {
    --h->holds;
    co_return failure();
  }
  h->released = true;
  core->stop(h);
  core->publish_validity();
  struct releases {
    explicit releases(const asio::any_io_executor& ex) : bell(ex, clock_type::time_point::max()) {}
    asio::steady_timer bell;
    std::size_t confirmed = 0;
    std::size_t answered = 0;
    std::vector<std::string> failures;
    failure first;
  };
  auto r = std::make_shared<releases>(core->ex);
  const node_set held = h->hold.held();
  const std::size_t total = size_of(held);
  for (std::size_t i = 0; i < core->nodes.size(); ++i) {
    if ((held & node_bit(i)) == 0) continue;
    auto done = [r, core, i](const failure& f) {
      ++r->answered;
      if (f) {
        if (!r->first) r->first = f;
        r->failures.push_back(fmt::format("{}: {}", core->nodes[i].label, f.text()));
      } else {
        ++r->confirmed;
      }
      r->bell.cancel();
    };
    async_release(core->nodes[i].s, core->node_handler<>(i, std::move(done)));
  }
  // Bounded: each release completes within its command_timeout.
  for (int i = 0; i < 10'000 && r->confirmed < core->quorum && r->answered < total; ++i) {
    r->bell.expires_at(clock_type::time_point::max());
    (void)co_await r->bell.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  if (r->confirmed >= core->quorum) co_return failure();
  std::string text = fmt::format(
      "quorum lock '{}': {} of its {} nodes confirmed the release ({} "
      "make a majority); the others' keys expire by their lease:",
      core->name, r->confirmed, core->nodes.size(), core->quorum);
  for (const auto& f : r->failures) text.append(" ").append(f).append(";");
  text.pop_back();
  core->set_error(text);
  co_return failure(r->first.code, text);
}

asio::awaitable<failure> await_lost(std::shared_ptr<quorum_core> core) {
  co_await let_every_cancellation_in();
  auto h = core->current;
  if (!h || h->released) {
    co_return failure(errc::not_owner, fmt::format("quorum lock '{}' is not held by owner {}",
                                                   core->name, core->owner));
  }
  for (int i = 0; i < 1'000'000 && !h->lost && !h->released; ++i) {
    const bool was_cancelled = co_await caller_cancelled();
    if (was_cancelled) co_return cancelled();
    h->ended_bell.expires_at(clock_type::time_point::max());
    (void)co_await h->ended_bell.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  if (h->lost) co_return failure();
  co_return cancelled(
      fmt::format("quorum lock '{}': released here before it was lost", core->name));
}

}  // namespace

}  // namespace rlock::detail

// --- the public handle ---------------------------------------------------------------------------

namespace rlock {

namespace asio = boost::asio;

quorum_lock::quorum_lock(std::vector<std::reference_wrapper<client>> nodes, std::string_view name,
                         quorum_options options)
    : quorum_lock(std::move(nodes), name, options, std::make_shared<detail::quorum_flights>()) {}

quorum_lock::quorum_lock(std::vector<std::reference_wrapper<client>> nodes, std::string_view name,
                         quorum_options options, std::shared_ptr<detail::quorum_flights> flights) {
  if (nodes.empty() || nodes.size() > 32) {
    throw_error(
        errc::invalid_argument,
        fmt::format("quorum lock '{}': {} nodes given; 1 to 32 are allowed", name, nodes.size()));
  }
  if (name.empty()) throw_error(errc::invalid_argument, "quorum lock: empty name");
  if (options.drift_floor.count() < 0 || options.unreachable_retry.count() < 0 ||
      options.restart_delay.count() < 0 ||
      (options.round_timeout && options.round_timeout->count() < 1) ||
      (options.retry_delay && options.retry_delay->count() < 1)) {
    throw_error(
        errc::invalid_argument,
        fmt::format("quorum lock '{}': drift_floor, unreachable_retry and restart_delay must be "
                    "0 or more, round_timeout and retry_delay 1 ms or more",
                    name));
  }
  std::set<const client*> seen;
  for (const auto& c : nodes) {
    if (!seen.insert(&c.get()).second) {
      throw_error(errc::invalid_argument,
                  fmt::format("quorum lock '{}': one client is given twice (each node is another "
                              "deployment)",
                              name));
    }
  }
  auto core = std::make_shared<detail::quorum_core>(nodes.front().get().get_executor(),
                                                    std::string(name), options, std::move(flights));
  core->quorum = detail::quorum_of(nodes.size());
  milliseconds longest_timeout{1};
  milliseconds shortest_watchdog = milliseconds::max();
  for (auto& c : nodes) {
    // The node's settings from its public config; the engine's context for its I/O only.
    const auto& settings = c.get().get_config();
    longest_timeout = std::max(longest_timeout, settings.command_timeout);
    shortest_watchdog = std::min(shortest_watchdog, settings.watchdog_timeout);
    auto ctx = detail::kind_access::context(c.get());
    auto s = detail::owner_table::new_owner(ctx, name, detail::reentrant_kind, core->owner);
    std::string label = ctx->cfg.deployment;
    core->nodes.push_back(
        {std::move(ctx), std::move(s), std::move(label), settings.watchdog_timeout});
  }
  core->round_timeout = options.round_timeout.value_or(longest_timeout);
  core->votes = std::vector<std::array<std::atomic<std::uint64_t>, 3>>(core->nodes.size());
  core->confirmation_reads = shortest_watchdog / 3;
  core_ = std::move(core);
}

void quorum_lock::start_lock(const quorum_lock& q, std::optional<milliseconds> lease,
                             detail::handler<> h) {
  auto body = [](std::shared_ptr<detail::quorum_core> core,
                 std::optional<milliseconds> l) -> asio::awaitable<detail::failure> {
    auto [f, got] = co_await detail::acquire(std::move(core), std::nullopt, l);
    (void)got;
    co_return std::move(f);
  };
  detail::spawn(q.get_executor(), body(q.core_, lease), std::move(h));
}
void quorum_lock::start_try_lock(const quorum_lock& q, milliseconds wait,
                                 std::optional<milliseconds> lease, detail::handler<bool> h) {
  detail::spawn(q.get_executor(), detail::acquire(q.core_, wait, lease), std::move(h));
}
void quorum_lock::start_unlock(const quorum_lock& q, detail::handler<> h) {
  detail::spawn(q.get_executor(), detail::release_hold(q.core_), std::move(h));
}
void quorum_lock::start_lost(const quorum_lock& q, detail::handler<> h) {
  detail::spawn(q.get_executor(), detail::await_lost(q.core_), std::move(h));
}

asio::awaitable<void> quorum_lock::lock(std::optional<milliseconds> lease) {
  return detail::awaitable_of<>(*this, [lease](const quorum_lock& q, detail::handler<> h) {
    start_lock(q, lease, std::move(h));
  });
}
asio::awaitable<bool> quorum_lock::try_lock(milliseconds wait, std::optional<milliseconds> lease) {
  return detail::awaitable_of<bool>(*this,
                                    [wait, lease](const quorum_lock& q, detail::handler<bool> h) {
                                      start_try_lock(q, wait, lease, std::move(h));
                                    });
}
asio::awaitable<void> quorum_lock::unlock() {
  return detail::awaitable_of<>(
      *this, [](const quorum_lock& q, detail::handler<> h) { start_unlock(q, std::move(h)); });
}
asio::awaitable<void> quorum_lock::lost() {
  return detail::awaitable_of<>(
      *this, [](const quorum_lock& q, detail::handler<> h) { start_lost(q, std::move(h)); });
}

quorum_lock::time_point quorum_lock::valid_until() const noexcept {
  return time_point(time_point::duration(core_->valid_until_ticks.load(std::memory_order_relaxed)));
}
bool quorum_lock::is_held() const noexcept {
  return valid_until() > std::chrono::steady_clock::now();
}
std::int64_t quorum_lock::token() const noexcept {
  return core_->token.load(std::memory_order_relaxed);
}
quorum_lock_metrics quorum_lock::metrics() const {
  const auto& c = core_->count;
  quorum_lock_metrics m;
  m.name = core_->name;
  m.rounds = c.rounds.load(std::memory_order_relaxed);
  m.rounds_won = c.rounds_won.load(std::memory_order_relaxed);
  m.holds_lost = c.holds_lost.load(std::memory_order_relaxed);
  m.retakes = c.retakes.load(std::memory_order_relaxed);
  m.token_raises = c.token_raises.load(std::memory_order_relaxed);
  m.held = is_held();
  const auto held = c.held_nodes.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < core_->nodes.size(); ++i) {
    const auto& v = core_->votes[i];
    m.nodes.push_back({core_->nodes[i].label, v[0].load(std::memory_order_relaxed),
                       v[1].load(std::memory_order_relaxed), v[2].load(std::memory_order_relaxed),
                       m.held && (held & detail::node_bit(i)) != 0});
  }
  return m;
}
std::string_view quorum_lock::name() const noexcept { return core_->name; }
std::size_t quorum_lock::nodes() const noexcept { return core_->nodes.size(); }
std::size_t quorum_lock::quorum() const noexcept { return core_->quorum; }
std::uint64_t quorum_lock::owner_id() const noexcept { return core_->owner; }
std::string quorum_lock::last_error() const {
  const std::lock_guard guard(core_->error_mutex);
  return core_->error_text;
}
quorum_lock::executor_type quorum_lock::get_executor() const noexcept { return core_->ex; }

std::vector<std::shared_ptr<detail::lock_state>> detail::quorum_access::node_states(
    const quorum_lock& q) {
  std::vector<std::shared_ptr<lock_state>> out;
  out.reserve(q.core_->nodes.size());
  for (const auto& n : q.core_->nodes) out.push_back(n.s);
  return out;
}
std::shared_ptr<detail::quorum_flights> detail::quorum_access::flights(const quorum_lock& q) {
  return q.core_->flights;
}

}  // namespace rlock
