// The multi-lock: members of any kinds through the engine's own acquisitions (lock_handle's):
// one attempt at every member at once (one round trip per node), the busy ones then waited for
// in one global order; released all at once, in reverse order per node; one lost() for the group.
#include "rlock/multi_lock.hpp"

#include "engine/coroutine_cancellation.hpp"
#include "engine/deadline.hpp"
#include "engine/engine_context.hpp"
#include "engine/lock_state.hpp"
#include "engine/spawn.hpp"
#include "rlock/error.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace rlock {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

std::string multi_lock::order_of(const lock_handle& l) {
  const std::string& deployment = lock_handle::state_of(l)->ctx->cfg.deployment;
  // The key first: every process orders one deployment's locks alike, however it names it.
  std::string order(l.key());
  order.push_back('\0');
  order.append(deployment);
  return order;
}

multi_lock::multi_lock(std::vector<lock_handle> members) {
  if (members.empty()) throw_error(errc::invalid_argument, "multi_lock: no member");
  std::vector<std::pair<std::string, lock_handle>> ordered;
  ordered.reserve(members.size());
  for (auto& m : members) ordered.emplace_back(order_of(m), std::move(m));
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  auto list = std::make_shared<std::vector<lock_handle>>();
  list->reserve(ordered.size());
  for (std::size_t i = 0; i < ordered.size(); ++i) {
    if (i > 0 && ordered[i].first == ordered[i - 1].first) {
      throw_error(errc::invalid_argument,
                  fmt::format("multi_lock: lock '{}' is given twice", ordered[i].second.name()));
    }
    list->push_back(std::move(ordered[i].second));
  }
  members_ = std::move(list);
}

multi_lock::executor_type multi_lock::get_executor() const noexcept {
  return members_->front().get_executor();
}

// --- the operations, each started once for every form -----------------------------------------

void multi_lock::start_lock(const multi_lock& m, std::optional<milliseconds> lease,
                            detail::handler<> h) {
  detail::spawn(m.get_executor(), lock_all(m.members_, lease), std::move(h));
}
void multi_lock::start_try_lock(const multi_lock& m, milliseconds wait,
                                std::optional<milliseconds> lease, detail::handler<bool> h) {
  detail::spawn(m.get_executor(), try_lock_all(m.members_, wait, lease), std::move(h));
}
void multi_lock::start_unlock(const multi_lock& m, detail::handler<> h) {
  detail::spawn(m.get_executor(), release(m.members_, m.members_->size()), std::move(h));
}
void multi_lock::start_lost(const multi_lock& m, detail::handler<> h) {
  detail::spawn(m.get_executor(), first_lost(m.members_), std::move(h));
}

asio::awaitable<void> multi_lock::lock(std::optional<milliseconds> lease) {
  return detail::awaitable_of<>(*this, [lease](const multi_lock& m, detail::handler<> h) {
    start_lock(m, lease, std::move(h));
  });
}
asio::awaitable<bool> multi_lock::try_lock(milliseconds wait, std::optional<milliseconds> lease) {
  return detail::awaitable_of<bool>(*this,
                                    [wait, lease](const multi_lock& m, detail::handler<bool> h) {
                                      start_try_lock(m, wait, lease, std::move(h));
                                    });
}
asio::awaitable<void> multi_lock::unlock() {
  return detail::awaitable_of<>(
      *this, [](const multi_lock& m, detail::handler<> h) { start_unlock(m, std::move(h)); });
}
asio::awaitable<void> multi_lock::lost() {
  return detail::awaitable_of<>(
      *this, [](const multi_lock& m, detail::handler<> h) { start_lost(m, std::move(h)); });
}

// --- the coroutines: a failure is returned, never thrown ---------------------------------------

namespace {

using detail::caller_cancelled;
using detail::let_every_cancellation_in;

using members_ptr = std::shared_ptr<const std::vector<lock_handle>>;

/// What one member's operation in a group came to.
struct member_outcome {
  detail::failure failure;
  bool taken = false;  // an acquisition: taken (always true for a release without failure)
};

/// Starts `start(member, handler)` for the members `which` (indices, in that order) at once and
/// completes when every one has: started in one turn, their requests share one write per node, so
/// the group costs one round trip per node. Those still running at `deadline` are cancelled (a
/// hold that lands later is the engine's to give back), and all of them if the caller cancels.
/// Outcomes in `which`'s order.
template <typename... Result, typename Start>
asio::awaitable<std::vector<member_outcome>> all_at_once(
    members_ptr members, std::vector<std::size_t> which, Start start,
    clock_type::time_point deadline = clock_type::time_point::max()) {
  struct group {
    group(const asio::any_io_executor& ex, std::size_t n)
        : bell(ex), signals(n), out(n), done(n, false), pending(n) {}
    asio::steady_timer bell;
    std::vector<asio::cancellation_signal> signals;
    std::vector<member_outcome> out;
    std::vector<bool> done;
    std::size_t pending;
  };
  const asio::any_io_executor ex = co_await asio::this_coro::executor;
  auto g = std::make_shared<group>(ex, which.size());
  for (std::size_t k = 0; k < which.size(); ++k) {
    auto finished = [g, k](detail::failure f, Result... got) {
      g->out[k].taken = !f && (true && ... && got);
      g->out[k].failure = std::move(f);
      g->done[k] = true;
      if (--g->pending == 0) g->bell.cancel();
    };
    // Handlers run on the executor, never inside start(): none completes before the wait below.
    start((*members)[which[k]],
          detail::handler<Result...>(
              asio::bind_cancellation_slot(g->signals[k].slot(),
                                           asio::bind_executor(ex, std::move(finished))),
              ex));
  }
  bool stopped = false;
  // Bounded: each round either ends the group or cancels what is left (once), and a cancelled
  // member completes promptly.
  for (int round = 0; round < 1000 && g->pending > 0; ++round) {
    g->bell.expires_at(stopped ? clock_type::time_point::max() : deadline);
    (void)co_await g->bell.async_wait(asio::as_tuple(asio::use_awaitable));
    if (g->pending == 0 || stopped) continue;
    const bool cancelled_by_caller = co_await caller_cancelled();
    if (cancelled_by_caller || clock_type::now() >= deadline) {
      stopped = true;
      for (std::size_t k = 0; k < which.size(); ++k) {
        if (!g->done[k]) g->signals[k].emit(asio::cancellation_type::terminal);
      }
    }
  }
  co_return std::move(g->out);
}

/// The index of the first member (in the global order) an attempt did not take; `n` if none.
std::size_t first_not_taken(const std::vector<member_outcome>& outcomes) {
  const auto it = std::find_if(outcomes.begin(), outcomes.end(),
                               [](const member_outcome& o) { return !o.taken; });
  return static_cast<std::size_t>(it - outcomes.begin());
}

/// Members [0, count), last first (the order they are given back).
std::vector<std::size_t> last_first(std::size_t count) {
  std::vector<std::size_t> which(count);
  for (std::size_t i = 0; i < count; ++i) which[i] = count - 1 - i;
  return which;
}

/// The members `from` on that an attempt took, last first (the order they are given back).
std::vector<std::size_t> taken_from(const std::vector<member_outcome>& outcomes, std::size_t from) {
  std::vector<std::size_t> which;
  for (std::size_t i = outcomes.size(); i-- > from;) {
    if (outcomes[i].taken) which.push_back(i);
  }
  return which;
}

/// The members, all or none: one attempt at every member at once, then (if one was busy) the
/// members from the first busy one on, one by one in the global order. `attempt(l, h)` starts a
/// single attempt, `wait_for(l, left)` a waiting acquisition (an awaitable of failure and
/// whether taken), `unlock(l, h)` a release, and `held_all(starts)` says whether every member is
/// still held (multi_lock's own, private to it).
template <typename Attempt, typename WaitFor, typename Unlock, typename HeldAll>
asio::awaitable<std::pair<detail::failure, bool>> take_all(
    members_ptr members, std::optional<std::chrono::milliseconds> wait, Attempt attempt,
    WaitFor wait_for, Unlock unlock, HeldAll held_all) {
  using std::chrono::milliseconds;
  const std::size_t n = members->size();
  // try_lock(): one attempt each, bounded by command_timeout as a single attempt is; a wait
  // bounds everything; lock() has no bound.
  const auto deadline =
      wait ? detail::saturating_add(clock_type::now(), *wait) : clock_type::time_point::max();
  const auto attempts_deadline =
      wait && wait->count() > 0 ? deadline : clock_type::time_point::max();
  std::vector<std::size_t> everyone(n);
  for (std::size_t i = 0; i < n; ++i) everyone[i] = i;
  std::vector<clock_type::time_point> starts;
  for (;;) {
    // Every kind of the caller's cancellation reaches this round (a round's releases reset it).
    co_await let_every_cancellation_in();
    const bool cancelled_before = co_await caller_cancelled();
    if (cancelled_before) co_return std::pair{detail::cancelled(), false};
    // One attempt at every member at once: one round trip per node when all are free.
    starts.assign(n, clock_type::now());
    auto attempting = all_at_once<bool>(members, everyone, attempt, attempts_deadline);
    auto outcomes = co_await std::move(attempting);
    detail::failure failure;
    for (auto& o : outcomes) {
      // A member cancelled at the bound is a member not taken, not a failure.
      if (o.failure && !failure && o.failure.code != asio::error::operation_aborted) {
        failure = std::move(o.failure);
      }
    }
    const std::size_t busy = first_not_taken(outcomes);
    if (!failure && busy == n && held_all(starts)) {
      co_return std::pair{detail::failure(), true};
    }
    const bool cancelled_meanwhile = co_await caller_cancelled();
    if (!failure && cancelled_meanwhile) failure = detail::cancelled();
    const bool out_of_time = clock_type::now() >= deadline;
    if (failure || busy == n || out_of_time) {
      // All or nothing: what was taken goes back before the caller hears why (a cancellation
      // of the caller does not reach these releases), or before the group is taken again.
      co_await asio::this_coro::reset_cancellation_state();
      co_await asio::this_coro::throw_if_cancelled(false);
      auto giving_back = all_at_once<>(members, taken_from(outcomes, 0), unlock);
      (void)co_await std::move(giving_back);
      if (failure) co_return std::pair{std::move(failure), false};
      if (out_of_time) co_return std::pair{detail::failure(), false};
      continue;  // all were taken, but one was lost meanwhile: again
    }
    // Busy at `busy`: the members before it stay (taken in the global order), those after it go
    // back, and the rest are waited for one by one in the global order, so no two multi-locks
    // over the same locks ever wait for each other.
    auto giving_back_later = all_at_once<>(members, taken_from(outcomes, busy + 1), unlock);
    (void)co_await std::move(giving_back_later);
    std::size_t taken = busy;
    bool all = true;
    for (std::size_t i = busy; i < n; ++i) {
      const bool cancelled = co_await caller_cancelled();
      if (cancelled) {
        failure = detail::cancelled();
        break;
      }
      const auto left =
          std::max(milliseconds::zero(),
                   std::chrono::duration_cast<milliseconds>(deadline - clock_type::now()));
      starts[i] = clock_type::now();
      auto taking = wait_for((*members)[i], left);
      auto [why, got] = co_await std::move(taking);
      if (why) {
        failure = std::move(why);
        break;
      }
      if (!got) {
        all = false;
        break;
      }
      ++taken;
    }
    if (all && !failure && held_all(starts)) {
      co_return std::pair{detail::failure(), true};
    }
    if (!failure) {
      const bool cancelled_late = co_await caller_cancelled();
      if (cancelled_late) failure = detail::cancelled();
    }
    co_await asio::this_coro::reset_cancellation_state();
    co_await asio::this_coro::throw_if_cancelled(false);
    auto giving_back_taken = all_at_once<>(members, last_first(taken), unlock);
    (void)co_await std::move(giving_back_taken);
    if (failure) co_return std::pair{std::move(failure), false};
    // Refused, or a member's hold ended meanwhile: again while the wait lasts.
    if (!all && clock_type::now() >= deadline) co_return std::pair{detail::failure(), false};
  }
}

}  // namespace

// The lambdas below are made in multi_lock's members: they reach lock_handle's starts.

asio::awaitable<detail::failure> multi_lock::lock_all(member_list members,
                                                      std::optional<milliseconds> lease) {
  // lock() is try_lock() without a bound.
  auto taking = try_lock_all(std::move(members), milliseconds::max(), lease);
  auto [failure, got] = co_await std::move(taking);
  (void)got;  // without a bound, only a failure ends the call untaken
  co_return std::move(failure);
}

asio::awaitable<std::pair<detail::failure, bool>> multi_lock::try_lock_all(
    member_list members, milliseconds wait, std::optional<milliseconds> lease) {
  // The rounds decide what a cancellation means (release what was taken), not Asio.
  co_await let_every_cancellation_in();
  if (wait.count() < 0) {
    co_return std::pair{detail::failure(errc::invalid_argument, "multi_lock: the wait is negative"),
                        false};
  }
  if (lease && lease->count() <= 0) {
    co_return std::pair{
        detail::failure(errc::invalid_argument, "multi_lock: the lease must be positive"), false};
  }
  // Made here, in a multi_lock member: they reach lock_handle's starts and all_held. A wait too
  // long to represent (lock()'s) waits for each member as lock() does.
  const bool bounded = wait != milliseconds::max();
  // The attempts at every member, and the releases, go in one script call per node (a
  // cluster: per hash slot) with the others started in the same turn.
  auto attempt = [lease](const lock_handle& m, detail::handler<bool> h) {
    lock_handle::start_try_acquire(m, milliseconds::zero(), lease, std::move(h), true);
  };
  auto wait_for = [bounded, lease](
                      const lock_handle& m,
                      milliseconds left) -> asio::awaitable<std::pair<detail::failure, bool>> {
    if (!bounded) {
      auto taking = detail::outcome_of<>(m, [lease](const lock_handle& l, detail::handler<> h) {
        lock_handle::start_acquire(l, lease, std::move(h));
      });
      auto failure = co_await std::move(taking);
      co_return std::pair{std::move(failure), true};
    }
    auto taking =
        detail::outcome_of<bool>(m, [left, lease](const lock_handle& l, detail::handler<bool> h) {
          lock_handle::start_try_acquire(l, left, lease, std::move(h));
        });
    auto [failure, got] = co_await std::move(taking);
    co_return std::pair{std::move(failure), got};
  };
  auto unlock = [](const lock_handle& m, detail::handler<> h) {
    m.start_unlock(std::move(h), true);
  };
  auto held = [members, lease](const std::vector<clock_type::time_point>& starts) {
    return all_held(members, starts, lease);
  };
  auto taking = take_all(members, bounded ? std::optional<milliseconds>(wait) : std::nullopt,
                         attempt, wait_for, unlock, held);
  co_return co_await std::move(taking);
}

bool multi_lock::all_held(const member_list& members,
                          const std::vector<clock_type::time_point>& starts,
                          std::optional<milliseconds> lease) {
  const auto now = clock_type::now();
  for (std::size_t i = 0; i < members->size(); ++i) {
    if (lock_handle::state_of((*members)[i])->lost.load()) return false;
    // A lease counts from the server's grant, no earlier than the acquisition began.
    if (lease && now >= starts[i] + *lease) return false;
  }
  return true;
}

asio::awaitable<detail::failure> multi_lock::release(member_list members, std::size_t count) {
  co_await asio::this_coro::throw_if_cancelled(false);  // every member goes back
  // All at once, written last first: one round trip per node, in reverse order on each.
  auto unlock = [](const lock_handle& l, detail::handler<> h) {
    l.start_unlock(std::move(h), true);
  };
  auto releasing = all_at_once<>(std::move(members), last_first(count), unlock);
  auto outcomes = co_await std::move(releasing);
  for (auto& o : outcomes) {
    if (o.failure) co_return std::move(o.failure);
  }
  co_return detail::failure();
}

asio::awaitable<detail::failure> multi_lock::first_lost(member_list members) {
  co_await let_every_cancellation_in();  // a cancellation is the group's answer
  // Every member's lost() at once; the first that reports a loss ends the wait and cancels the
  // others. Members that cannot be lost (not held through the watchdog) answer not_owner and are
  // passed over, unless all do.
  using op = decltype(std::declval<lock_handle&>().async_lost(asio::deferred));
  std::vector<op> ops;
  ops.reserve(members->size());
  for (lock_handle m : *members) ops.push_back(m.async_lost(asio::deferred));
  auto waiting = asio::experimental::make_parallel_group(std::move(ops))
                     .async_wait(asio::experimental::wait_for_one_success(), asio::use_awaitable);
  auto [order, errors] = co_await std::move(waiting);
  for (const auto& e : errors) {
    if (!e) co_return detail::failure();  // a member was lost
  }
  // None was lost: every member refused (not held through the watchdog), or the caller
  // cancelled the wait. The first member's answer says which.
  const auto why = errors[order.front()];
  if (why == errc::not_owner) {
    co_return detail::failure(why, "multi_lock: no member is held through the watchdog");
  }
  co_return detail::failure(why, "multi_lock: the wait for a lost member ended");
}

}  // namespace rlock
