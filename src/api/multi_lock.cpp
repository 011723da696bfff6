// The multi-lock: members of any kinds taken in one global order through the engine's own
// acquisitions (lock_handle's), released in reverse, and one lost() for the group.
#include "rlock/multi_lock.hpp"

#include "engine/deadline.hpp"
#include "engine/engine_context.hpp"
#include "engine/lock_state.hpp"
#include "engine/spawn.hpp"
#include "rlock/error.hpp"

#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
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

/// Whether the caller cancelled: checked before each member, whose own operation would not see a
/// cancellation emitted before it began.
asio::awaitable<bool> caller_cancelled() {
  const auto state = co_await asio::this_coro::cancellation_state;
  co_return state.cancelled() != asio::cancellation_type::none;
}

/// Every kind of cancellation the caller's slot carries reaches the coroutine (co_spawn lets
/// terminal only through), and none is thrown: the coroutine decides what one means. One
/// already requested is kept.
asio::awaitable<void> let_every_cancellation_in() {
  // Named, not a co_await inside a condition (g++ 12, UBSan: an illegal instruction there).
  const bool already = co_await caller_cancelled();
  if (!already) {
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  }
  co_await asio::this_coro::throw_if_cancelled(false);
  co_return;
}

}  // namespace

asio::awaitable<detail::failure> multi_lock::lock_all(member_list members,
                                                      std::optional<milliseconds> lease) {
  // The rounds below decide what a cancellation means (release what was taken), not Asio.
  co_await let_every_cancellation_in();
  if (lease && lease->count() <= 0) {
    co_return detail::failure(errc::invalid_argument, "multi_lock: the lease must be positive");
  }
  std::vector<clock_type::time_point> starts;
  starts.reserve(members->size());
  for (;;) {
    std::size_t taken = 0;
    detail::failure failure;
    starts.clear();
    for (const auto& m : *members) {
      const bool cancelled_before = co_await caller_cancelled();
      if (cancelled_before) {
        failure = detail::cancelled();
        break;
      }
      starts.push_back(clock_type::now());
      // Ordered waiting: no cycle with another multi-lock over the same locks.
      auto taking = detail::outcome_of<>(m, [lease](const lock_handle& l, detail::handler<> h) {
        lock_handle::start_acquire(l, lease, std::move(h));
      });
      failure = co_await std::move(taking);
      if (failure) break;
      ++taken;
    }
    if (!failure && all_held(members, starts, lease)) co_return detail::failure();
    // A cancellation that came while the last member was taken ends the call here, not after
    // another round.
    if (!failure) {
      const bool cancelled_meanwhile = co_await caller_cancelled();
      if (cancelled_meanwhile) failure = detail::cancelled();
    }
    // All or nothing: what was taken goes back before the caller hears why (a cancellation of
    // the caller does not reach these releases), or before the group is taken again.
    co_await asio::this_coro::reset_cancellation_state();
    (void)co_await release(members, taken);
    if (failure) co_return failure;
  }
}

asio::awaitable<std::pair<detail::failure, bool>> multi_lock::try_lock_all(
    member_list members, milliseconds wait, std::optional<milliseconds> lease) {
  co_await let_every_cancellation_in();
  if (wait.count() < 0) {
    co_return std::pair{detail::failure(errc::invalid_argument, "multi_lock: the wait is negative"),
                        false};
  }
  if (lease && lease->count() <= 0) {
    co_return std::pair{
        detail::failure(errc::invalid_argument, "multi_lock: the lease must be positive"), false};
  }
  const auto deadline = detail::saturating_add(clock_type::now(), wait);
  std::vector<clock_type::time_point> starts;
  starts.reserve(members->size());
  for (;;) {
    std::size_t taken = 0;
    detail::failure failure;
    bool all = true;
    starts.clear();
    for (const auto& m : *members) {
      const bool cancelled_before = co_await caller_cancelled();
      if (cancelled_before) {
        failure = detail::cancelled();
        break;
      }
      // One wait shared by all: each member gets what is left of it.
      const auto left =
          std::max(milliseconds::zero(),
                   std::chrono::duration_cast<milliseconds>(deadline - clock_type::now()));
      starts.push_back(clock_type::now());
      auto taking =
          detail::outcome_of<bool>(m, [left, lease](const lock_handle& l, detail::handler<bool> h) {
            lock_handle::start_try_acquire(l, left, lease, std::move(h));
          });
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
    const bool held = all && !failure && all_held(members, starts, lease);
    if (held) co_return std::pair{detail::failure(), true};
    if (!failure) {
      const bool cancelled_meanwhile = co_await caller_cancelled();
      if (cancelled_meanwhile) failure = detail::cancelled();
    }
    co_await asio::this_coro::reset_cancellation_state();
    (void)co_await release(members, taken);
    if (failure) co_return std::pair{std::move(failure), false};
    // Refused, or a member's hold ended meanwhile: again while the wait lasts.
    if (!all || clock_type::now() >= deadline) co_return std::pair{detail::failure(), false};
  }
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
  detail::failure first;
  for (std::size_t i = count; i-- > 0;) {
    auto releasing = detail::outcome_of<>(
        (*members)[i],
        [](const lock_handle& l, detail::handler<> h) { l.start_unlock(std::move(h)); });
    auto why = co_await std::move(releasing);
    if (why && !first) first = std::move(why);
  }
  co_return first;
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
