// The multi-lock: members of any kinds taken in one global order through the engine's own
// acquisitions (lock_handle's), released in reverse, and one lost() for the group.
#include "rlock/multi_lock.hpp"

#include "engine/engine_context.hpp"
#include "lock/lock_state.hpp"
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

asio::awaitable<void> multi_lock::lock(std::optional<milliseconds> lease) {
  return lock_all(members_, lease);
}
asio::awaitable<bool> multi_lock::try_lock(milliseconds wait, std::optional<milliseconds> lease) {
  return try_lock_all(members_, wait, lease);
}
asio::awaitable<void> multi_lock::unlock() {
  auto members = members_;
  return [](member_list m) -> asio::awaitable<void> {
    if (auto e = co_await release(m, m->size())) std::rethrow_exception(e);
  }(std::move(members));
}
asio::awaitable<void> multi_lock::lost() { return first_lost(members_); }

asio::awaitable<void> multi_lock::lock_all(member_list members, std::optional<milliseconds> lease) {
  if (lease && lease->count() <= 0) {
    throw_error(errc::invalid_argument, "multi_lock: the lease must be positive");
  }
  std::vector<clock_type::time_point> starts;
  starts.reserve(members->size());
  for (;;) {
    std::size_t taken = 0;
    std::exception_ptr failure;
    starts.clear();
    try {
      for (const auto& m : *members) {
        starts.push_back(clock_type::now());
        // Ordered waiting: no cycle with another multi-lock over the same locks.
        co_await detail::awaitable_of<>(m, [lease](const lock_handle& l, detail::handler<> h) {
          lock_handle::start_acquire(l, lease, std::move(h));
        });
        ++taken;
      }
    } catch (...) {
      failure = std::current_exception();
    }
    if (!failure && all_held(members, starts, lease)) co_return;
    // All or nothing: what was taken goes back before the caller hears why (a cancellation of
    // the caller does not reach these releases), or before the group is taken again.
    co_await asio::this_coro::reset_cancellation_state();
    (void)co_await release(members, taken);
    if (failure) std::rethrow_exception(failure);
  }
}

asio::awaitable<bool> multi_lock::try_lock_all(member_list members, milliseconds wait,
                                               std::optional<milliseconds> lease) {
  if (wait.count() < 0) throw_error(errc::invalid_argument, "multi_lock: the wait is negative");
  if (lease && lease->count() <= 0) {
    throw_error(errc::invalid_argument, "multi_lock: the lease must be positive");
  }
  const auto deadline = clock_type::now() + wait;
  std::vector<clock_type::time_point> starts;
  starts.reserve(members->size());
  for (;;) {
    std::size_t taken = 0;
    std::exception_ptr failure;
    bool all = true;
    starts.clear();
    try {
      for (const auto& m : *members) {
        // One wait shared by all: each member gets what is left of it.
        const auto left =
            std::max(milliseconds::zero(),
                     std::chrono::duration_cast<milliseconds>(deadline - clock_type::now()));
        starts.push_back(clock_type::now());
        const bool got = co_await detail::awaitable_of<bool>(
            m, [left, lease](const lock_handle& l, detail::handler<bool> h) {
              lock_handle::start_try_acquire(l, left, lease, std::move(h));
            });
        if (!got) {
          all = false;
          break;
        }
        ++taken;
      }
    } catch (...) {
      failure = std::current_exception();
    }
    const bool held = all && !failure && all_held(members, starts, lease);
    if (held) co_return true;
    co_await asio::this_coro::reset_cancellation_state();
    (void)co_await release(members, taken);
    if (failure) std::rethrow_exception(failure);
    // Refused, or a member's hold ended meanwhile: again while the wait lasts.
    if (!all || clock_type::now() >= deadline) co_return false;
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

asio::awaitable<std::exception_ptr> multi_lock::release(member_list members, std::size_t count) {
  std::exception_ptr first;
  for (std::size_t i = count; i-- > 0;) {
    lock_handle m = (*members)[i];
    try {
      co_await m.unlock();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  co_return first;
}

asio::awaitable<void> multi_lock::first_lost(member_list members) {
  auto ex = co_await asio::this_coro::executor;
  // Every member's lost() at once; the first that reports a loss ends the wait and cancels the
  // others. Members that cannot be lost (not held through the watchdog) answer not_owner and are
  // passed over, unless all do.
  using op = decltype(asio::co_spawn(ex, std::declval<asio::awaitable<void>>(), asio::deferred));
  std::vector<op> ops;
  ops.reserve(members->size());
  for (const auto& m : *members) {
    ops.push_back(asio::co_spawn(
        ex, [](lock_handle l) -> asio::awaitable<void> { co_await l.lost(); }(m), asio::deferred));
  }
  auto [order, errors] =
      co_await asio::experimental::make_parallel_group(std::move(ops))
          .async_wait(asio::experimental::wait_for_one_success(), asio::use_awaitable);
  for (const auto& e : errors) {
    if (!e) co_return;  // a member was lost
  }
  // None was lost: every member refused (not held through the watchdog), or the caller
  // cancelled the wait. The first member's answer says which.
  std::rethrow_exception(errors[order.front()]);
}

}  // namespace rlock
