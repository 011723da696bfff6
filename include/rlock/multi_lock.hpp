#pragma once

#include "rlock/detail/completion.hpp"
#include "rlock/export.hpp"
#include "rlock/lock_handle.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>

#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <string>
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
/// A handle: copies share the members. Forms: awaitable, and async_* with any completion token
/// and signature `void(std::exception_ptr[, bool])` (the coroutine's, through co_spawn).
class RLOCK_EXPORT multi_lock {
 public:
  using milliseconds = std::chrono::milliseconds;

  /// Invalid (throws std::system_error with errc::invalid_argument): no member, or one lock
  /// (same key on the same deployment) given twice.
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

  template <typename CompletionToken = default_completion_token>
  auto async_lock(CompletionToken&& token = {}) {
    return boost::asio::co_spawn(executor(), lock(), std::forward<CompletionToken>(token));
  }
  template <typename CompletionToken = default_completion_token>
  auto async_try_lock(milliseconds wait, CompletionToken&& token = {}) {
    return boost::asio::co_spawn(executor(), try_lock(wait), std::forward<CompletionToken>(token));
  }
  template <typename CompletionToken = default_completion_token>
  auto async_unlock(CompletionToken&& token = {}) {
    return boost::asio::co_spawn(executor(), unlock(), std::forward<CompletionToken>(token));
  }
  template <typename CompletionToken = default_completion_token>
  auto async_lost(CompletionToken&& token = {}) {
    return boost::asio::co_spawn(executor(), lost(), std::forward<CompletionToken>(token));
  }

  /// The members in the order they are taken.
  const std::vector<lock_handle>& members() const noexcept { return *members_; }

 private:
  using member_list = std::shared_ptr<const std::vector<lock_handle>>;
  lock_handle::executor_type executor() const { return members_->front().get_executor(); }

  // The coroutines hold the members, not `this`: a deferred operation may outlive the object.
  static boost::asio::awaitable<void> lock_all(member_list members,
                                               std::optional<milliseconds> lease);
  static boost::asio::awaitable<bool> try_lock_all(member_list members, milliseconds wait,
                                                   std::optional<milliseconds> lease);
  /// Whether every member is still held: none lost since it was taken, none whose `lease`
  /// (from just before its acquisition began, at `starts[i]`) is over.
  static bool all_held(const member_list& members,
                       const std::vector<std::chrono::steady_clock::time_point>& starts,
                       std::optional<milliseconds> lease);
  /// Releases `members[0, count)` in reverse order; the first failure, or null.
  static boost::asio::awaitable<std::exception_ptr> release(member_list members, std::size_t count);
  static boost::asio::awaitable<void> first_lost(member_list members);
  /// The global order: the key, then the deployment it lives on.
  static std::string order_of(const lock_handle& l);

  member_list members_;  // in the global order
};

}  // namespace rlock
