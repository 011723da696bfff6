// rlock::election: a candidate is an owner of the election kind's lock (src/kinds/election.cpp);
// campaign is its acquisition (the value travels as the acquisition's argument), resign its
// release, lost() the watchdog's; proclaim and leader() are single round trips; observe() is an
// election_listener on the client.
#include "rlock/election.hpp"

#include "election/election_listener.hpp"
#include "election/election_tally.hpp"
#include "election/leader_record.hpp"
#include "engine/delivery.hpp"
#include "engine/kind_access.hpp"
#include "engine/lock_state.hpp"
#include "engine/operations.hpp"
#include "engine/round_trip.hpp"
#include "kinds/registry.hpp"
#include "names/names.hpp"
#include "rlock/error.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rlock {

namespace asio = boost::asio;
using detail::failure;
using term_result = std::optional<std::int64_t>;

election::election(client& c, std::string_view name)
    : state_(detail::kind_access::new_owner(c, name, detail::election_kind)),
      tally_(std::make_shared<detail::election_tally>()) {}
election::election(client& c, std::string_view name, std::uint64_t owner_id)
    : state_(detail::kind_access::state_for(c, name, owner_id, detail::election_kind)),
      tally_(std::make_shared<detail::election_tally>()) {}

election_metrics election::metrics() const {
  return tally_->metrics(std::string(state_->name()),
                         state_->token.load(std::memory_order_relaxed));
}

std::string_view election::name() const noexcept { return state_->name(); }
std::string_view election::key() const noexcept { return state_->key(); }
std::string_view election::owner() const noexcept { return state_->field(); }
std::string election::record_key() const {
  std::string out;
  detail::append_tagged_name(detail::election_record_prefix, state_->key(), out);
  return out;
}
std::string election::channel() const {
  std::string out;
  detail::append_tagged_name(detail::election_channel_prefix, state_->key(), out);
  return out;
}
election::executor_type election::get_executor() const noexcept { return state_->executor(); }
std::string election::last_error() const { return state_->last_error(); }
std::int64_t election::term() const noexcept {
  return state_->token.load(std::memory_order_relaxed);
}

void election::start_try_campaign(const election& e, std::string value, milliseconds wait,
                                  detail::handler<term_result> h) {
  const auto& s = e.state_;
  const auto ex = s->executor();
  // The candidate's value is its acquisition's argument while the campaign runs: one campaign
  // at a time (a second one would take a second hold of the one lead).
  detail::ops::on_client(ex, [s, tally = e.tally_, value = std::move(value), wait, h = std::move(h),
                              ex]() mutable {
    if (s->argument() != nullptr) {
      failure f(errc::invalid_argument,
                fmt::format("election '{}': this candidate is campaigning already; one campaign "
                            "at a time (copies of an election are the same candidate)",
                            s->name()));
      s->set_last_error(f);
      detail::ops::deliver(ex, std::move(h), asio::cancellation_slot(), true, std::move(f),
                           term_result{});
      return;
    }
    if (s->local_holds > 0 && !s->lost.load(std::memory_order_relaxed)) {
      // It leads already: its term, no request.
      detail::ops::deliver(ex, std::move(h), asio::cancellation_slot(), true, failure(),
                           term_result(s->token.load(std::memory_order_relaxed)));
      return;
    }
    s->set_argument(std::move(value));
    ++tally->campaigns;
    // The engine's handler runs on the client's executor (no executor of its own): it ends the
    // campaign there, then passes the answer to the caller's, with the caller's slot.
    auto slot = asio::get_associated_cancellation_slot(h);
    auto done = [s, tally, h = std::move(h), ex](failure f, term_result term) mutable {
      s->clear_argument();
      if (!f && term) {
        tally->won();
        // The metrics' watch for a lead that ends without a resignation (success: lost).
        detail::async_lost(s, detail::handler<>(
                                  [tally](failure why) {
                                    if (!why) tally->ended(true);
                                  },
                                  ex));
      }
      detail::ops::deliver(ex, std::move(h), asio::cancellation_slot(), false, std::move(f), term);
    };
    const std::optional<milliseconds> bound =
        wait.count() < 0 ? std::nullopt : std::optional<milliseconds>(wait);
    detail::async_acquire_token(
        s, bound, std::nullopt,
        detail::handler<term_result>(asio::bind_cancellation_slot(slot, std::move(done)), ex));
  });
}

void election::start_campaign(const election& e, std::string value,
                              detail::handler<std::int64_t> h) {
  const auto ex = e.state_->executor();
  // No bound: a wait of -1 ms stands for it here (try_campaign's waits are never negative).
  start_try_campaign(e, std::move(value), milliseconds(-1),
                     detail::ops::mapped<term_result>(std::move(h), ex,
                                                      [](term_result t) { return t.value_or(0); }));
}

void election::start_proclaim(const election& e, std::string value, detail::handler<> h) {
  const auto& s = e.state_;
  const auto ex = s->executor();
  // The call views these captures until its answer.
  auto make = [value = std::move(value), names = std::string(), latch = std::string()](
                  detail::lock_state& st, detail::release_script_call& call) mutable {
    detail::append_tagged_name(detail::election_record_prefix, st.key(), names);
    const auto record_end = names.size();
    detail::append_tagged_name(detail::election_channel_prefix, st.key(), names);
    const std::string_view all(names);
    const auto in = detail::latched_release_inputs(st, all.substr(record_end), latch);
    call.which = detail::script::election_proclaim;
    call.keys = {st.key(), all.substr(0, record_end), all.substr(record_end), in.latch};
    call.key_count = 4;
    call.args = {st.field(), value, in.publish, in.latch_ttl};
    call.arg_count = 4;
    call.latch = latch;
    return failure();
  };
  auto done = [s, h = std::move(h), ex](failure f, std::int64_t proclaimed) mutable {
    if (!f && proclaimed == 0) {
      f = failure(
          errc::not_owner,
          fmt::format("election '{}': proclaim by a candidate that does not lead", s->name()));
      s->set_last_error(f);
    }
    detail::ops::deliver(ex, std::move(h), asio::cancellation_slot(), false, std::move(f));
  };
  detail::run_script(s, std::move(make), fmt::format("election '{}': proclaim", s->name()),
                     detail::handler<std::int64_t>(std::move(done), ex),
                     [](detail::lock_state&, const detail::resp3::value& reply) {
                       return detail::as_integer(reply);
                     });
}

void election::start_resign(const election& e, detail::handler<> h) {
  const auto ex = e.state_->executor();
  auto slot = asio::get_associated_cancellation_slot(h);
  auto done = [tally = e.tally_, h = std::move(h), ex](failure f) mutable {
    if (!f) tally->ended(false);
    detail::ops::deliver(ex, std::move(h), asio::cancellation_slot(), false, std::move(f));
  };
  detail::async_release(e.state_,
                        detail::handler<>(asio::bind_cancellation_slot(slot, std::move(done)), ex));
}

void election::start_lost(const election& e, detail::handler<> h) {
  detail::async_lost(e.state_, std::move(h));
}

void election::start_leader(const election& e, detail::handler<std::optional<leader_info>> h) {
  const auto& s = e.state_;
  auto make = [names = std::string()](detail::lock_state& st,
                                      detail::release_script_call& call) mutable {
    names = detail::token_counter(st.key());
    const auto counter_end = names.size();
    detail::append_tagged_name(detail::election_record_prefix, st.key(), names);
    const std::string_view all(names);
    call.which = detail::script::election_leader;
    call.keys = {st.key(), all.substr(counter_end), all.substr(0, counter_end)};
    call.key_count = 3;
    call.arg_count = 0;
    return failure();
  };
  detail::run_script(
      s, std::move(make), fmt::format("election '{}': leader", s->name()), std::move(h),
      [](detail::lock_state&,
         const detail::resp3::value& reply) -> std::optional<std::optional<leader_info>> {
        auto r = detail::read_leader_record(reply);
        if (!r) return std::nullopt;
        return detail::leader_of(*r);
      });
}

// --- observe ----------------------------------------------------------------------------------

/// What copies of an observer share: its queue and its ears (one per node), which leave with
/// the last of them.
struct election_observer::subscription {
  subscription(std::shared_ptr<detail::change_queue> q,
               std::vector<std::shared_ptr<detail::election_listener>> e)
      : queue(std::move(q)), ears(std::move(e)) {}
  subscription(const subscription&) = delete;
  subscription& operator=(const subscription&) = delete;
  ~subscription() { close(); }
  void close() {
    for (auto& e : ears) e->leave();
    queue->close();
  }
  std::shared_ptr<detail::change_queue> queue;
  std::vector<std::shared_ptr<detail::election_listener>> ears;
};

election_observer election::observe() {
  auto q = std::make_shared<detail::change_queue>(
      state_->executor(), std::string(state_->name()), detail::election_numbering::one_record,
      [s = state_](const detail::failure& f) { s->set_last_error(f); });
  auto ear = std::make_shared<detail::election_listener>(
      state_, q, detail::token_counter(state_->key()), true);
  return election_observer::make(
      std::move(q), std::vector<std::shared_ptr<detail::election_listener>>{std::move(ear)});
}

election_observer election_observer::make(
    std::shared_ptr<detail::change_queue> queue,
    std::vector<std::shared_ptr<detail::election_listener>> ears) {
  for (auto& e : ears) e->join();
  return election_observer(std::make_shared<subscription>(std::move(queue), std::move(ears)));
}

void election_observer::start_next(const election_observer& o, detail::handler<election_change> h) {
  o.sub_->queue->next(std::move(h));
}
void election_observer::close() { sub_->close(); }
election_observer::executor_type election_observer::get_executor() const noexcept {
  return sub_->queue->executor();
}

asio::awaitable<election_change> election_observer::next() {
  return detail::awaitable_of<election_change>(
      *this, [](const election_observer& o, detail::handler<election_change> h) {
        start_next(o, std::move(h));
      });
}

// --- the awaitable forms ----------------------------------------------------------------------

asio::awaitable<std::int64_t> election::campaign(std::string value) {
  return detail::awaitable_of<std::int64_t>(
      *this,
      [value = std::move(value)](const election& e, detail::handler<std::int64_t> h) mutable {
        start_campaign(e, std::move(value), std::move(h));
      });
}
asio::awaitable<term_result> election::try_campaign(std::string value, milliseconds wait) {
  return detail::awaitable_of<term_result>(
      *this,
      [value = std::move(value), wait](const election& e, detail::handler<term_result> h) mutable {
        if (wait.count() < 0) wait = milliseconds(0);
        start_try_campaign(e, std::move(value), wait, std::move(h));
      });
}
asio::awaitable<void> election::proclaim(std::string value) {
  return detail::awaitable_of<>(
      *this, [value = std::move(value)](const election& e, detail::handler<> h) mutable {
        start_proclaim(e, std::move(value), std::move(h));
      });
}
asio::awaitable<void> election::resign() {
  return detail::awaitable_of<>(
      *this, [](const election& e, detail::handler<> h) { start_resign(e, std::move(h)); });
}
asio::awaitable<std::optional<leader_info>> election::leader() {
  return detail::awaitable_of<std::optional<leader_info>>(
      *this, [](const election& e, detail::handler<std::optional<leader_info>> h) {
        start_leader(e, std::move(h));
      });
}
asio::awaitable<void> election::lost() {
  return detail::awaitable_of<>(
      *this, [](const election& e, detail::handler<> h) { start_lost(e, std::move(h)); });
}

}  // namespace rlock
