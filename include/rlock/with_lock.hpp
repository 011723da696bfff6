#pragma once

#include "rlock/error.hpp"
#include "rlock/hold.hpp"
#include "rlock/lock_handle.hpp"
#include "rlock/multi_lock.hpp"
#include "rlock/semaphore.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace rlock {

namespace detail {
template <typename T>
struct awaitable_value;
template <typename T, typename Executor>
struct awaitable_value<boost::asio::awaitable<T, Executor>> {
  using type = T;
};
}  // namespace detail

/// Runs `fn()` (a function returning `asio::awaitable<T>`) while holding `lock`, a lock of any
/// owned kind (reentrant_lock, fenced_lock, ...: rlock::owned_lock), the way
/// userver's DistLockedWorker runs a task: acquires it with the watchdog (waiting as lock()
/// does), runs the work, and if the watchdog finds the lock lost meanwhile, cancels the work
/// (total cancellation: it must stop at its next cancellable wait) and throws
/// `boost::system::system_error` carrying errc::lock_lost. Otherwise releases the lock and returns
/// the work's result. The work's own exception is rethrown after the release; so is a failed
/// release when the work succeeded (errc::timeout: the release may still happen).
///
///   auto total = co_await rlock::with_lock(lock, [&]() -> asio::awaitable<int> {
///     co_return co_await settle(account);
///   });
///
/// Cancelling with_lock cancels the acquisition or the work, then releases as above.
template <owned_lock Lock, typename Fn>
auto with_lock(Lock lock, Fn fn)
    -> boost::asio::awaitable<typename detail::awaitable_value<std::invoke_result_t<Fn&>>::type> {
  namespace asio = boost::asio;
  using result_type = typename detail::awaitable_value<std::invoke_result_t<Fn&>>::type;
  constexpr bool is_void = std::is_void_v<result_type>;
  using stored = std::conditional_t<is_void, std::monostate, result_type>;

  // Not throw_if_cancelled(false): that setting belongs to the caller's whole coroutine. If a
  // cancellation makes the release below throw before it starts, the hold still owns the lock
  // and its destructor releases it.
  basic_hold<Lock> held = co_await lock.scoped();
  // The work and the watch for a lost lock side by side; whichever completes first (the work
  // also by an exception: wait_for_one, not the awaitable operators' wait_for_one_success)
  // cancels the other, and the group completes once both have. Named locals: g++ 12 mishandles
  // temporaries inside co_await expressions.
  const auto ex = co_await asio::this_coro::executor;
  auto work = asio::co_spawn(ex, fn(), asio::deferred);
  auto watch = lock.async_lost(asio::deferred);
  auto group = asio::experimental::make_parallel_group(std::move(work), std::move(watch));
  auto waited = group.async_wait(asio::experimental::wait_for_one(), asio::deferred);
  std::optional<stored> result;
  std::exception_ptr failure;
  boost::system::error_code watch_ec;
  bool watch_first = false;
  if constexpr (is_void) {
    auto [order, work_e, lost_ec] = co_await std::move(waited);
    watch_first = order[0] == 1;
    failure = work_e;
    watch_ec = lost_ec;
    if (!failure) result.emplace();
  } else {
    auto [order, work_e, value, lost_ec] = co_await std::move(waited);
    watch_first = order[0] == 1;
    failure = work_e;
    watch_ec = lost_ec;
    if (!failure) result.emplace(std::move(value));
  }
  if (watch_first && !watch_ec) {
    (void)held.release();  // nothing to unlock: the server no longer has it
    throw_error(errc::lock_lost, "lock '" + std::string(lock.name()) +
                                     "' was lost while the work ran; the work was cancelled");
  }
  if (watch_first) {
    // The watch ended otherwise first (the client closed): the work was cancelled for it.
    failure = std::make_exception_ptr(boost::system::system_error(watch_ec));
  }
  if (failure) {
    try {
      co_await held.unlock();
    } catch (...) {
      // The work's failure is the one to report; the release's is in lock.last_error().
    }
    std::rethrow_exception(failure);
  }
  co_await held.unlock();
  if constexpr (!is_void) co_return std::move(*result);
}

namespace detail {

/// with_lock's work beside a watch for a loss, for what is held by other than one lock handle
/// (a multi-lock, a semaphore's hold): `watch` completes with `void(error_code)` (success:
/// lost), `release()` returns the awaitable that gives the hold back, `what` names it in errors.
template <typename Fn, typename Watch, typename Release>
auto run_held(Fn fn, Watch watch, Release release, std::string what)
    -> boost::asio::awaitable<typename awaitable_value<std::invoke_result_t<Fn&>>::type> {
  namespace asio = boost::asio;
  using result_type = typename awaitable_value<std::invoke_result_t<Fn&>>::type;
  constexpr bool is_void = std::is_void_v<result_type>;
  using stored = std::conditional_t<is_void, std::monostate, result_type>;
  const auto ex = co_await asio::this_coro::executor;
  auto work = asio::co_spawn(ex, fn(), asio::deferred);
  auto group = asio::experimental::make_parallel_group(std::move(work), std::move(watch));
  auto waited = group.async_wait(asio::experimental::wait_for_one(), asio::deferred);
  std::optional<stored> result;
  std::exception_ptr failure;
  boost::system::error_code watch_ec;
  bool watch_first = false;
  if constexpr (is_void) {
    auto [order, work_e, lost_ec] = co_await std::move(waited);
    watch_first = order[0] == 1;
    failure = work_e;
    watch_ec = lost_ec;
    if (!failure) result.emplace();
  } else {
    auto [order, work_e, value, lost_ec] = co_await std::move(waited);
    watch_first = order[0] == 1;
    failure = work_e;
    watch_ec = lost_ec;
    if (!failure) result.emplace(std::move(value));
  }
  if (watch_first && !watch_ec) {
    try {
      co_await release();  // what is left of it (a multi-lock's other members)
    } catch (...) {
    }
    throw_error(errc::lock_lost, what + " was lost while the work ran; the work was cancelled");
  }
  if (watch_first) {
    // The watch failed first (the client closed): the work was cancelled for it.
    failure = std::make_exception_ptr(boost::system::system_error(watch_ec));
  }
  if (failure) {
    try {
      co_await release();
    } catch (...) {
      // The work's failure is the one to report.
    }
    std::rethrow_exception(failure);
  }
  co_await release();
  if constexpr (!is_void) co_return std::move(*result);
}

}  // namespace detail

namespace detail {

// The coroutines hold their handle through a shared_ptr parameter, and name every object they
// pass on: g++ 12 destroys some temporaries of a co_await expression twice (a lambda capturing
// a shared_ptr there freed the multi-lock under the running coroutine: ASan in multi_lock_test).
template <typename Fn>
auto with_multi_lock(std::shared_ptr<multi_lock> lock, Fn fn)
    -> boost::asio::awaitable<typename awaitable_value<std::invoke_result_t<Fn&>>::type> {
  namespace asio = boost::asio;
  co_await lock->lock();
  auto watch = lock->async_lost(asio::deferred);
  auto release = [lock]() { return lock->unlock(); };
  std::string what = "a member of the multi-lock";
  auto held = run_held(std::move(fn), std::move(watch), std::move(release), std::move(what));
  co_return co_await std::move(held);
}

template <typename Fn>
auto with_semaphore(std::shared_ptr<semaphore> sem, std::uint32_t permits, Fn fn)
    -> boost::asio::awaitable<typename awaitable_value<std::invoke_result_t<Fn&>>::type> {
  namespace asio = boost::asio;
  auto acquisition = sem->acquire(permits);
  auto hold = std::make_shared<permit>(co_await std::move(acquisition));
  auto watch = hold->async_lost(asio::deferred);
  auto release = [hold]() { return hold->unlock(); };
  std::string what =
      "the hold of " + std::to_string(permits) + " permit(s) of '" + std::string(sem->name()) + "'";
  auto held = run_held(std::move(fn), std::move(watch), std::move(release), std::move(what));
  co_return co_await std::move(held);
}

}  // namespace detail

/// with_lock over a multi-lock: takes every member (multi_lock::lock(), with the watchdog), runs
/// `fn()`, cancels it and throws errc::lock_lost if any member is lost meanwhile, and releases
/// every member. As with_lock for one lock otherwise.
template <typename Fn>
auto with_lock(const multi_lock& lock, Fn fn) {
  return detail::with_multi_lock(std::make_shared<multi_lock>(lock), std::move(fn));
}

/// Runs `fn()` holding `permits` of `sem` (a hold kept by the watchdog), the way with_lock runs
/// work under a lock: the work is cancelled and errc::lock_lost thrown if the hold is lost, and
/// the permits are given back in every case.
template <typename Fn>
auto with_permits(const semaphore& sem, std::uint32_t permits, Fn fn) {
  return detail::with_semaphore(std::make_shared<semaphore>(sem), permits, std::move(fn));
}

}  // namespace rlock
