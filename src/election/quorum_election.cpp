// rlock::quorum_election: the lead is a fenced quorum_lock (its token the term); the leader
// record and channel of a single-server election are kept on every node, each change written
// to all nodes at once by quorum_election_announce and made when a majority took it; observers
// hear every node (one election_listener per node, one change_queue ordered by (term, seq)).
#include "rlock/quorum_election.hpp"

#include "election/change_queue.hpp"
#include "election/election_listener.hpp"
#include "election/election_tally.hpp"
#include "election/leader_record.hpp"
#include "engine/coroutine_cancellation.hpp"
#include "engine/delivery.hpp"
#include "engine/engine_context.hpp"
#include "engine/lock_state.hpp"
#include "engine/round_trip.hpp"
#include "engine/spawn.hpp"
#include "names/names.hpp"
#include "quorum/quorum_access.hpp"
#include "rlock/error.hpp"
#include "script/scripts.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rlock::detail {

namespace asio = boost::asio;
using std::chrono::milliseconds;

struct quorum_election_core {
  quorum_election_core(quorum_lock l, std::string n)
      : lock(std::move(l)),
        nodes(quorum_access::node_states(lock)),
        flights(quorum_access::flights(lock)),
        name(std::move(n)) {}

  quorum_lock lock;
  const std::vector<std::shared_ptr<lock_state>> nodes;  // each node's owner (key, field, client)
  const std::shared_ptr<quorum_flights> flights;
  const std::string name;
  election_tally tally;

  // Executor only.
  bool campaigning = false;
  bool leading = false;    // won, not resigned, not found lost
  std::uint64_t seq = 0;   // the lead's latest change
  std::uint64_t lead = 0;  // which lead (its lost() watch ends only its own)

  // Any thread.
  std::atomic<std::int64_t> term{0};  // of the latest win
  mutable std::mutex error_mutex;
  std::string error_text;

  failure fail(failure f) {
    const std::lock_guard guard(error_mutex);
    error_text = std::string(f.text());
    return f;
  }
  std::size_t quorum() const noexcept { return lock.quorum(); }
  const asio::any_io_executor& ex() const noexcept { return lock_executor; }
  asio::any_io_executor lock_executor = lock.get_executor();

  /// The completion of node i's operation: runs on the election's executor, counted in
  /// `flights` until it ran (as the quorum lock's own node operations are).
  template <typename... Result, typename F>
  handler<Result...> node_handler(std::size_t i, F f) const {
    auto counted = [away = quorum_flights::ticket(flights), f = std::move(f)](auto&&... a) mutable {
      f(std::forward<decltype(a)>(a)...);
    };
    return handler<Result...>(asio::bind_executor(lock_executor, std::move(counted)),
                              nodes[i]->executor());
  }
};

namespace {

/// Every node's answer to one script, as they come (executor only).
template <typename T>
struct node_answers {
  node_answers(const asio::any_io_executor& ex, std::size_t n)
      : bell(ex, std::chrono::steady_clock::time_point::max()), got(n) {}
  asio::steady_timer bell;
  std::vector<std::optional<std::pair<failure, T>>> got;
  std::size_t answered = 0;

  std::size_t count(bool (*good)(const std::pair<failure, T>&)) const {
    return static_cast<std::size_t>(
        std::count_if(got.begin(), got.end(), [good](const auto& a) { return a && good(*a); }));
  }
  /// "node i: why" for each node that failed.
  std::string failures(const quorum_election_core& core) const {
    std::string out;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (got[i] && got[i]->first) {
        out += fmt::format(" {}: {};", core.nodes[i]->ctx->cfg.deployment, got[i]->first.text());
      }
    }
    return out;
  }
};

/// Runs the script `make_for(i)` builds on every node at once, and waits until `enough(answers)`
/// or every node answered (each is bounded by its node's command_timeout).
template <typename T, typename MakeFor, typename Read, typename Enough>
asio::awaitable<std::shared_ptr<node_answers<T>>> ask_every_node(
    std::shared_ptr<quorum_election_core> core, MakeFor make_for, std::string what, Read read,
    Enough enough) {
  const auto n = core->nodes.size();
  auto a = std::make_shared<node_answers<T>>(core->ex(), n);
  for (std::size_t i = 0; i < n; ++i) {
    run_script<T>(core->nodes[i], make_for(i), what,
                  core->node_handler<T>(i,
                                        [a, i](failure f, T v) {
                                          a->got[i].emplace(std::move(f), std::move(v));
                                          ++a->answered;
                                          a->bell.cancel();
                                        }),
                  read);
  }
  // Bounded: each wake-up is an answer (n at most) or the caller's cancellation (once).
  for (std::size_t wakes = 0; wakes < 2 * n + 2 && a->answered < n && !enough(*a); ++wakes) {
    a->bell.expires_at(std::chrono::steady_clock::time_point::max());
    (void)co_await a->bell.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  co_return a;
}

/// election_leader's call on a node: the lock, the record, the quorum's token counter.
auto leader_read() {
  return [names = std::string()](lock_state& st, release_script_call& call) mutable {
    append_tagged_name(election_record_prefix, st.key(), names);
    const auto record_end = names.size();
    append_tagged_name(quorum_token_prefix, st.key(), names);
    const std::string_view all(names);
    call.which = script::election_leader;
    call.keys = {st.key(), all.substr(0, record_end), all.substr(record_end)};
    call.key_count = 3;
    call.arg_count = 0;
    return failure();
  };
}

using record_answer = std::pair<failure, leader_record>;
bool answered_well(const record_answer& a) { return !a.first; }

asio::awaitable<std::shared_ptr<node_answers<leader_record>>> read_records(
    std::shared_ptr<quorum_election_core> core, bool all) {
  const auto quorum = core->quorum();
  auto what = fmt::format("quorum election '{}': read the leader record", core->name);
  co_return co_await ask_every_node<leader_record>(
      core, [](std::size_t) { return leader_read(); }, std::move(what),
      [](lock_state&, const resp3::value& reply) { return read_leader_record(reply); },
      [quorum, all](const node_answers<leader_record>& a) {
        return !all && a.count(&answered_well) >= quorum;
      });
}

failure no_majority(const quorum_election_core& core, std::string_view what,
                    std::string_view failures) {
  return failure(errc::quorum_unavailable,
                 fmt::format("quorum election '{}': {} was not confirmed by a majority ({} of {} "
                             "nodes):{}",
                             core.name, what, core.quorum(), core.nodes.size(), failures));
}

/// Writes the change (term, seq, event, value) on every node; made when a majority took it.
/// not_owner when a node holds a later change (another leader's), quorum_unavailable when too
/// few answered.
asio::awaitable<failure> announce(std::shared_ptr<quorum_election_core> core, std::int64_t term,
                                  std::uint64_t seq, election_change::event event,
                                  std::string value) {
  const auto quorum = core->quorum();
  const auto word = std::string(election_event_word(event));
  auto make_for = [term = std::to_string(term), seq = std::to_string(seq), word,
                   value](std::size_t) {
    return [term, seq, word, value, names = std::string()](lock_state& st,
                                                           release_script_call& call) mutable {
      append_tagged_name(election_record_prefix, st.key(), names);
      const auto record_end = names.size();
      append_tagged_name(election_channel_prefix, st.key(), names);
      const std::string_view all(names);
      call.which = script::quorum_election_announce;
      call.keys = {all.substr(0, record_end), all.substr(record_end)};
      call.key_count = 2;
      call.args = {st.field(), term, seq, word, value, st.ctx->session.publish_command()};
      call.arg_count = 6;
      return failure();
    };
  };
  using answer = std::pair<failure, std::int64_t>;
  auto a = co_await ask_every_node<std::int64_t>(
      core, make_for, fmt::format("quorum election '{}': announce {}", core->name, word),
      [](lock_state&, const resp3::value& reply) { return as_integer(reply); },
      [quorum](const node_answers<std::int64_t>& got) {
        return got.count([](const answer& x) { return !x.first && x.second == 1; }) >= quorum;
      });
  if (a->count([](const answer& x) { return !x.first && x.second == 1; }) >= quorum) {
    co_return failure();
  }
  if (a->count([](const answer& x) { return !x.first && x.second == 0; }) > 0) {
    co_return failure(errc::not_owner,
                      fmt::format("quorum election '{}': a later leader's change is on a node; "
                                  "this candidate does not lead",
                                  core->name));
  }
  co_return no_majority(*core, fmt::format("the change '{}'", word), a->failures(*core));
}

/// The lead began: counted, and watched for its loss.
void begin_lead(const std::shared_ptr<quorum_election_core>& core) {
  core->leading = true;
  const auto lead = ++core->lead;
  core->tally.won();
  core->lock.async_lost(asio::bind_executor(core->ex(), [core, lead](boost::system::error_code ec) {
    if (ec || core->lead != lead || !core->leading) return;
    core->leading = false;
    core->tally.ended(true);
  }));
}

asio::awaitable<std::pair<failure, std::optional<std::int64_t>>> campaign(
    std::shared_ptr<quorum_election_core> core, std::string value,
    std::optional<milliseconds> wait) {
  using result = std::pair<failure, std::optional<std::int64_t>>;
  co_await let_every_cancellation_in();
  if (core->campaigning) {
    co_return result{
        core->fail(failure(errc::invalid_argument,
                           fmt::format("quorum election '{}': this candidate is campaigning "
                                       "already; one campaign at a time (copies of an election "
                                       "are the same candidate)",
                                       core->name))),
        std::nullopt};
  }
  if (core->leading) {
    if (core->lock.is_held()) co_return result{failure(), core->term.load()};
    // Lost, and its watch not run yet: that lead ends here.
    core->leading = false;
    core->tally.ended(true);
  }
  core->campaigning = true;
  ++core->tally.campaigns;
  struct done_campaigning {
    quorum_election_core& c;
    ~done_campaigning() { c.campaigning = false; }
  } guard{*core};

  bool took = false;
  if (wait) {
    auto [ec, got] = co_await core->lock.async_try_lock(*wait, std::nullopt,
                                                        asio::as_tuple(asio::use_awaitable));
    if (ec) co_return result{core->fail(failure(ec, core->lock.last_error())), std::nullopt};
    took = got;
  } else {
    auto [ec] = co_await core->lock.async_lock(std::nullopt, asio::as_tuple(asio::use_awaitable));
    if (ec) co_return result{core->fail(failure(ec, core->lock.last_error())), std::nullopt};
    took = true;
  }
  if (!took) co_return result{failure(), std::nullopt};

  const std::int64_t term = core->lock.token();
  // The change counter goes on from the highest a majority held: any earlier change made (taken
  // by a majority) is on one of them.
  auto records = co_await read_records(core, false);
  failure f;
  std::uint64_t seq = 0;
  if (records->count(&answered_well) < core->quorum()) {
    f = no_majority(*core, "the read of the leader record", records->failures(*core));
  } else {
    for (const auto& r : records->got) {
      if (r && !r->first) seq = std::max(seq, r->second.seq);
    }
    ++seq;
    f = co_await announce(core, term, seq, election_change::event::elected, value);
  }
  const bool cancelled = co_await caller_cancelled();  // named: not a co_await in a condition
  if (!f && cancelled) {
    f = failure(asio::error::operation_aborted, "the campaign was cancelled");
    (void)co_await announce(core, term, seq + 1, election_change::event::resigned, "");
  }
  if (f) {
    // Not announced: the lead goes back, so that nobody leads unseen.
    (void)co_await core->lock.async_unlock(asio::as_tuple(asio::use_awaitable));
    co_return result{core->fail(std::move(f)), std::nullopt};
  }
  core->seq = seq;
  core->term = term;
  begin_lead(core);
  co_return result{failure(), term};
}

failure not_leading(const quorum_election_core& core, std::string_view what) {
  return failure(errc::not_owner, fmt::format("quorum election '{}': {} by a candidate that does "
                                              "not lead",
                                              core.name, what));
}

asio::awaitable<failure> proclaim(std::shared_ptr<quorum_election_core> core, std::string value) {
  if (!core->leading || !core->lock.is_held()) co_return core->fail(not_leading(*core, "proclaim"));
  const auto seq = ++core->seq;
  auto f = co_await announce(core, core->term.load(), seq, election_change::event::proclaimed,
                             std::move(value));
  if (f) co_return core->fail(std::move(f));
  co_return failure();
}

asio::awaitable<failure> resign(std::shared_ptr<quorum_election_core> core) {
  if (!core->leading) co_return core->fail(not_leading(*core, "resign"));
  core->leading = false;
  if (!core->lock.is_held()) {
    // Lost before it resigned: nothing to announce (a later leader's change may be on the
    // nodes), nothing to give back.
    core->tally.ended(true);
    co_return core->fail(
        failure(errc::not_owner, fmt::format("quorum election '{}': the lead was lost before "
                                             "this resignation",
                                             core->name)));
  }
  const auto seq = ++core->seq;
  // Observers hear `resigned` before the next leader can be elected; a node that missed it
  // hears the next `elected`, whose term is higher.
  (void)co_await announce(core, core->term.load(), seq, election_change::event::resigned, "");
  auto [ec] = co_await core->lock.async_unlock(asio::as_tuple(asio::use_awaitable));
  if (ec) {
    core->tally.ended(true);
    co_return core->fail(failure(ec, core->lock.last_error()));
  }
  core->tally.ended(false);
  co_return failure();
}

asio::awaitable<std::pair<failure, std::optional<leader_info>>> leader(
    std::shared_ptr<quorum_election_core> core) {
  using result = std::pair<failure, std::optional<leader_info>>;
  auto records = co_await read_records(core, true);
  if (records->count(&answered_well) < core->quorum()) {
    co_return result{
        core->fail(no_majority(*core, "the read of the leader record", records->failures(*core))),
        std::nullopt};
  }
  // The leader is the term a majority of nodes name a holder under (each node's term: its
  // record's when the record names the holder, else its token counter).
  std::map<std::int64_t, std::size_t> named;
  for (const auto& r : records->got) {
    if (r && !r->first && !r->second.owner.empty()) ++named[r->second.term];
  }
  for (const auto& [term, count] : named) {
    if (count < core->quorum()) continue;
    const leader_record* best = nullptr;
    for (const auto& r : records->got) {
      if (!r || r->first || r->second.owner.empty() || r->second.term != term) continue;
      if (best == nullptr || r->second.seq > best->seq) best = &r->second;
    }
    co_return result{failure(), leader_of(*best)};
  }
  co_return result{failure(), std::nullopt};
}

asio::awaitable<failure> await_lost(std::shared_ptr<quorum_election_core> core) {
  if (!core->leading) co_return core->fail(not_leading(*core, "lost()"));
  auto [ec] = co_await core->lock.async_lost(asio::as_tuple(asio::use_awaitable));
  if (ec) co_return core->fail(failure(ec, core->lock.last_error()));
  co_return failure();
}

}  // namespace

}  // namespace rlock::detail

namespace rlock {

namespace asio = boost::asio;
using term_result = std::optional<std::int64_t>;

namespace {
quorum_options fenced(quorum_options o) {
  o.fenced = true;
  return o;
}
}  // namespace

quorum_election::quorum_election(std::vector<std::reference_wrapper<client>> nodes,
                                 std::string_view name, quorum_options options)
    : quorum_election(std::move(nodes), name, options, std::make_shared<detail::quorum_flights>()) {
}

quorum_election::quorum_election(std::vector<std::reference_wrapper<client>> nodes,
                                 std::string_view name, quorum_options options,
                                 std::shared_ptr<detail::quorum_flights> flights)
    : core_(std::make_shared<detail::quorum_election_core>(
          detail::quorum_access::make(std::move(nodes), name, fenced(options), std::move(flights)),
          std::string(name))) {}

void quorum_election::start_try_campaign(const quorum_election& e, std::string value,
                                         milliseconds wait, detail::handler<term_result> h) {
  std::optional<milliseconds> bound;
  if (wait.count() >= 0) bound = wait;
  detail::spawn(e.get_executor(), detail::campaign(e.core_, std::move(value), bound), std::move(h));
}
void quorum_election::start_campaign(const quorum_election& e, std::string value,
                                     detail::handler<std::int64_t> h) {
  const auto ex = e.get_executor();
  // No bound: a wait of -1 ms stands for it here (try_campaign's waits are never negative).
  start_try_campaign(e, std::move(value), milliseconds(-1),
                     detail::ops::mapped<term_result>(std::move(h), ex,
                                                      [](term_result t) { return t.value_or(0); }));
}
void quorum_election::start_proclaim(const quorum_election& e, std::string value,
                                     detail::handler<> h) {
  detail::spawn(e.get_executor(), detail::proclaim(e.core_, std::move(value)), std::move(h));
}
void quorum_election::start_resign(const quorum_election& e, detail::handler<> h) {
  detail::spawn(e.get_executor(), detail::resign(e.core_), std::move(h));
}
void quorum_election::start_leader(const quorum_election& e,
                                   detail::handler<std::optional<leader_info>> h) {
  detail::spawn(e.get_executor(), detail::leader(e.core_), std::move(h));
}
void quorum_election::start_lost(const quorum_election& e, detail::handler<> h) {
  detail::spawn(e.get_executor(), detail::await_lost(e.core_), std::move(h));
}

election_observer quorum_election::observe() {
  auto core = core_;
  auto q = std::make_shared<detail::change_queue>(
      get_executor(), core->name, detail::election_numbering::term_then_seq,
      [core](const detail::failure& f) { (void)core->fail(f); });
  std::vector<std::shared_ptr<detail::election_listener>> ears;
  for (const auto& s : core->nodes) {
    std::string counter;
    detail::append_tagged_name(detail::quorum_token_prefix, s->key(), counter);
    ears.push_back(std::make_shared<detail::election_listener>(s, q, std::move(counter), false));
  }
  return election_observer::make(std::move(q), std::move(ears));
}

std::int64_t quorum_election::term() const noexcept { return core_->term.load(); }
std::string_view quorum_election::name() const noexcept { return core_->name; }
std::size_t quorum_election::nodes() const noexcept { return core_->nodes.size(); }
std::size_t quorum_election::quorum() const noexcept { return core_->quorum(); }
const quorum_lock& quorum_election::lock() const noexcept { return core_->lock; }
quorum_election::executor_type quorum_election::get_executor() const noexcept {
  return core_->lock.get_executor();
}
std::string quorum_election::last_error() const {
  const std::lock_guard guard(core_->error_mutex);
  return core_->error_text;
}
election_metrics quorum_election::metrics() const {
  return core_->tally.metrics(core_->name, core_->term.load());
}

asio::awaitable<std::int64_t> quorum_election::campaign(std::string value) {
  return detail::awaitable_of<std::int64_t>(
      *this, [value = std::move(value)](const quorum_election& e,
                                        detail::handler<std::int64_t> h) mutable {
        start_campaign(e, std::move(value), std::move(h));
      });
}
asio::awaitable<term_result> quorum_election::try_campaign(std::string value, milliseconds wait) {
  return detail::awaitable_of<term_result>(
      *this, [value = std::move(value), wait](const quorum_election& e,
                                              detail::handler<term_result> h) mutable {
        if (wait.count() < 0) wait = milliseconds(0);
        start_try_campaign(e, std::move(value), wait, std::move(h));
      });
}
asio::awaitable<void> quorum_election::proclaim(std::string value) {
  return detail::awaitable_of<>(
      *this, [value = std::move(value)](const quorum_election& e, detail::handler<> h) mutable {
        start_proclaim(e, std::move(value), std::move(h));
      });
}
asio::awaitable<void> quorum_election::resign() {
  return detail::awaitable_of<>(
      *this, [](const quorum_election& e, detail::handler<> h) { start_resign(e, std::move(h)); });
}
asio::awaitable<std::optional<leader_info>> quorum_election::leader() {
  return detail::awaitable_of<std::optional<leader_info>>(
      *this, [](const quorum_election& e, detail::handler<std::optional<leader_info>> h) {
        start_leader(e, std::move(h));
      });
}
asio::awaitable<void> quorum_election::lost() {
  return detail::awaitable_of<>(
      *this, [](const quorum_election& e, detail::handler<> h) { start_lost(e, std::move(h)); });
}

}  // namespace rlock
