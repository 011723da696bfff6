#pragma once

#include "rlock/detail/completion.hpp"
#include "rlock/export.hpp"
#include "rlock/lock_handle.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rlock {

/// All-or-nothing over N locks of any kinds (Redisson's RedissonMultiLock): reentrant, fair,
/// non-reentrant, spin, fenced, either half of a read-write lock, on one client or several,
/// on one server or many cluster nodes. Built from handles: `multi_lock m({a, b, c});`.
///
/// **One global order.** The members are taken in the order of their keys (then of their
/// deployment: host:port, sentinel master name or first cluster seed), whatever order they were
/// given in, so two multi-locks over the same locks never deadlock each other, and released in
/// the reverse order.
///
/// **All or nothing.** A member that cannot be taken (try_lock's wait runs out, an error, a
/// cancellation) makes the members already taken be released, in reverse order, before the
/// caller is told. lock() waits on each member in turn (ordered waiting cannot deadlock);
/// try_lock(wait) shares one wait among them: the whole call completes by `wait` plus, when a
/// member failed part-way, the releases of those taken (each bounded by command_timeout).
///
/// **One lost() for the group:** it completes when any member's lease is reported lost (the
/// group no longer excludes anybody), with not_owner if no member is held through the watchdog.
///
/// A handle: copies share the members. Forms: awaitable (a failure is thrown as
/// boost::system::system_error), and async_* with any completion token and signature
/// `void(error_code[, bool])`, as lock_handle's.
class RLOCK_EXPORT multi_lock {
 public:
  /// Leases and waits, in whole milliseconds.
  using milliseconds = std::chrono::milliseconds;
  /// The members' executor type.
  using executor_type = lock_handle::executor_type;

  /// Invalid (throws boost::system::system_error with errc::invalid_argument): no member, or one
  /// lock (same key on the same deployment) given twice.
  explicit multi_lock(std::vector<lock_handle> members);

  /// Takes every member, waiting as long as it takes; `lease` for each (absent: the watchdog).
  /// A member whose hold ended while later ones were awaited (lost by the watchdog, or its
  /// lease over) means the group never held all at once: everything goes back and the group
  /// is taken again.
  boost::asio::awaitable<void> lock(std::optional<milliseconds> lease = std::nullopt);
  /// Takes every member within `wait` (0: one attempt each), or none; whether it did. A member
  /// whose hold ended meanwhile: as lock(), while the wait lasts.
  boost::asio::awaitable<bool> try_lock(milliseconds wait = milliseconds::zero(),
                                        std::optional<milliseconds> lease = std::nullopt);
  /// Releases every member, in reverse order, each once; all are released even if one fails,
  /// and the first failure is thrown after.
  boost::asio::awaitable<void> unlock();
  /// Completes when the first member's lease is reported lost.
  boost::asio::awaitable<void> lost();

  /// lock() with a completion token; completes with `void(error_code)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_lock(CompletionToken&& token = {}) {
    return async_lock(std::nullopt, std::forward<CompletionToken>(token));
  }
  /// lock(lease) with a completion token; completes with `void(error_code)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_lock(std::optional<milliseconds> lease, CompletionToken&& token = {}) {
    return detail::initiate<>(
        std::forward<CompletionToken>(token), *this,
        [lease](const multi_lock& m, detail::handler<> h) { start_lock(m, lease, std::move(h)); });
  }
  /// try_lock(wait) with a completion token; completes with `void(error_code, bool)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_lock(milliseconds wait, CompletionToken&& token = {}) {
    return async_try_lock(wait, std::nullopt, std::forward<CompletionToken>(token));
  }
  /// try_lock(wait, lease) with a completion token; completes with `void(error_code, bool)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_lock(milliseconds wait, std::optional<milliseconds> lease,
                      CompletionToken&& token = {}) {
    return detail::initiate<bool>(std::forward<CompletionToken>(token), *this,
                                  [wait, lease](const multi_lock& m, detail::handler<bool> h) {
                                    start_try_lock(m, wait, lease, std::move(h));
                                  });
  }
  /// unlock() with a completion token; completes with `void(error_code)`, the first failure.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_unlock(CompletionToken&& token = {}) {
    return detail::initiate<>(
        std::forward<CompletionToken>(token), *this,
        [](const multi_lock& m, detail::handler<> h) { start_unlock(m, std::move(h)); });
  }
  /// lost() with a completion token; completes with `void(error_code)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_lost(CompletionToken&& token = {}) {
    return detail::initiate<>(
        std::forward<CompletionToken>(token), *this,
        [](const multi_lock& m, detail::handler<> h) { start_lost(m, std::move(h)); });
  }

  /// The executor of the first member's client, where the group's operations run.
  executor_type get_executor() const noexcept;

  /// The members in the order they are taken.
  const std::vector<lock_handle>& members() const noexcept { return *members_; }

 private:
  using member_list = std::shared_ptr<const std::vector<lock_handle>>;

  // The operations, each started once for every form (a deferred one holds a copy of the
  // handle); handlers run on their associated executor, never inside these calls.
  static void start_lock(const multi_lock& m, std::optional<milliseconds> lease,
                         detail::handler<> h);
  static void start_try_lock(const multi_lock& m, milliseconds wait,
                             std::optional<milliseconds> lease, detail::handler<bool> h);
  static void start_unlock(const multi_lock& m, detail::handler<> h);
  static void start_lost(const multi_lock& m, detail::handler<> h);

  // The coroutines hold the members, not `this`, and return their failure, never throw it.
  static boost::asio::awaitable<detail::failure> lock_all(member_list members,
                                                          std::optional<milliseconds> lease);
  static boost::asio::awaitable<std::pair<detail::failure, bool>> try_lock_all(
      member_list members, milliseconds wait, std::optional<milliseconds> lease);
  /// Whether every member is still held: none lost since it was taken, none whose `lease`
  /// (from just before its acquisition began, at `starts[i]`) is over.
  static bool all_held(const member_list& members,
                       const std::vector<std::chrono::steady_clock::time_point>& starts,
                       std::optional<milliseconds> lease);
  /// Releases `members[0, count)` in reverse order; the first failure, or none.
  static boost::asio::awaitable<detail::failure> release(member_list members, std::size_t count);
  static boost::asio::awaitable<detail::failure> first_lost(member_list members);
  /// The global order: the key, then the deployment it lives on.
  static std::string order_of(const lock_handle& l);

  member_list members_;  // in the global order
};

}  // namespace rlock
