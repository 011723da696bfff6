#pragma once

#include "rlock/detail/completion.hpp"
#include "rlock/export.hpp"
#include "rlock/wake_reason.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace rlock {

class client;
template <typename Lock>
class basic_hold;

namespace detail {
struct lock_state;
}  // namespace detail

/// What every owned lock kind's handle has, whatever its acquisitions: the owner's identity, the
/// release of a hold, force_unlock, the queries and lost(). A kind's handle (reentrant_lock,
/// fenced_lock, ...) is composed of this and its own acquisitions; kinds are not substitutes
/// for one another (a fenced_lock is not a reentrant_lock: its acquisitions return tokens).
///
/// **Ownership.** A handle is one owner: the Redis hash field `<client-uuid>:<owner-id>`.
/// Unlocking works from any coroutine or thread that has the handle. Two handles from
/// `client::get_lock(name)` are two owners and exclude each other, also inside one process.
/// Copies of a handle are the same owner.
///
/// **Two forms of every operation, one implementation.** `co_await l.unlock()` (an
/// `asio::awaitable`) throws `boost::system::system_error` carrying `rlock::errc`, with Redis's
/// text in `what()` for server errors. `l.async_unlock(token)` takes any Asio completion token (a
/// callback, `use_future`, `use_awaitable`, `as_tuple(...)`, `deferred`, ...; without one,
/// `rlock::default_completion_token`, i.e. `asio::deferred`) and completes with Asio's
/// convention, `void(boost::system::error_code[, T])`; the text is then in `last_error()`.
///
/// **Execution.** Every operation runs on the client's executor (callable from any thread) and
/// completes on the completion handler's associated executor (default: the client's), never
/// inside the initiating call.
class RLOCK_EXPORT lock_handle {
 public:
  /// The client's executor type: Asio's type-erased I/O executor.
  using executor_type = boost::asio::any_io_executor;
  /// Leases, waits and TTLs are whole milliseconds.
  using milliseconds = std::chrono::milliseconds;

  /// The lock's name as given to get_lock (without the key prefix).
  std::string_view name() const noexcept;
  /// The Redis key: key prefix + name.
  std::string_view key() const noexcept;
  /// This owner's 64-bit id, the second half of its hash field.
  std::uint64_t owner_id() const noexcept;
  /// The hash field identifying this owner: `<client-uuid>:<owner-id>`.
  std::string_view owner_field() const noexcept;
  /// The client's executor, where the lock's operations run.
  executor_type get_executor() const noexcept;
  /// How this owner's latest successful acquisition came about.
  wake_reason last_wake() const noexcept;
  /// The words of this owner's latest failed operation (an acquisition, an unlock, a query):
  /// Redis's error text (e.g. "WRONGTYPE ...", "NOPERM ..."), the bound that ran out, or what
  /// the client knows of a transport failure. The async_* forms complete with an error_code
  /// only; read this in the handler for the words. Empty if none failed. May be called from any
  /// thread.
  std::string last_error() const;

  // --- unlock -----------------------------------------------------------------------------
  /// @name unlock
  ///@{

  /// Releases one hold; the final release deletes the key and publishes "0" on the channel.
  /// Completion: `void(error_code)`; errors: not_owner if this owner does not hold the lock
  /// (never a silent success), timeout (no answer within config::command_timeout: the release
  /// may still happen, and its answer still updates the owner; call unlock() again to be sure),
  /// server_error, permission_denied (the lock *was* released, but the unlock could not be
  /// published). A release whose connection is lost is written again on the next one with the
  /// same request id (Redisson's unlock latch), so a retry never answers a false not_owner.
  ///
  /// Per-operation cancellation: not supported (ignored): an unlock always runs to its answer.
  boost::asio::awaitable<void> unlock();
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_unlock(CompletionToken&& token = {}) {
    return initiate<>(
        std::forward<CompletionToken>(token),
        [](const lock_handle& l, detail::handler<> h) { l.start_unlock(std::move(h)); });
  }
  ///@}

  // --- force_unlock -----------------------------------------------------------------------
  /// @name force_unlock
  ///@{

  /// Deletes the lock whoever holds it and wakes its waiters; true if it was locked.
  /// Completion: `void(error_code, bool)`; errors: timeout (config::command_timeout),
  /// server_error, permission_denied, connection_lost.
  ///
  /// Per-operation cancellation: not supported (ignored): a single round trip, bounded.
  boost::asio::awaitable<bool> force_unlock();
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_force_unlock(CompletionToken&& token = {}) {
    return initiate<bool>(
        std::forward<CompletionToken>(token),
        [](const lock_handle& l, detail::handler<bool> h) { l.start_force_unlock(std::move(h)); });
  }
  ///@}

  // --- queries ----------------------------------------------------------------------------
  /// @name is_locked
  ///@{

  /// Whether anybody holds the lock (`EXISTS`). Completion: `void(error_code, bool)`.
  /// Errors of all queries: timeout (config::command_timeout), server_error, connection_lost.
  /// Per-operation cancellation of all queries: not supported (ignored): single round trips,
  /// bounded.
  boost::asio::awaitable<bool> is_locked();
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_is_locked(CompletionToken&& token = {}) {
    return initiate<bool>(
        std::forward<CompletionToken>(token),
        [](const lock_handle& l, detail::handler<bool> h) { l.start_is_locked(std::move(h)); });
  }
  ///@}

  /// @name is_held
  ///@{

  /// Whether this owner holds the lock (`HEXISTS`). Completion: `void(error_code, bool)`.
  boost::asio::awaitable<bool> is_held();
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_is_held(CompletionToken&& token = {}) {
    return initiate<bool>(
        std::forward<CompletionToken>(token),
        [](const lock_handle& l, detail::handler<bool> h) { l.start_is_held(std::move(h)); });
  }
  ///@}

  /// @name hold_count
  ///@{

  /// This owner's hold count, 0 if not held (`HGET`). Completion:
  /// `void(error_code, std::int64_t)`.
  boost::asio::awaitable<std::int64_t> hold_count();
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_hold_count(CompletionToken&& token = {}) {
    return initiate<std::int64_t>(std::forward<CompletionToken>(token),
                                  [](const lock_handle& l, detail::handler<std::int64_t> h) {
                                    l.start_hold_count(std::move(h));
                                  });
  }
  ///@}

  /// @name remaining_ttl
  ///@{

  /// The key's remaining time to live (`PTTL`): -2 ms if not locked, -1 ms if it has no expiry.
  /// Completion: `void(error_code, std::chrono::milliseconds)`.
  boost::asio::awaitable<milliseconds> remaining_ttl();
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_remaining_ttl(CompletionToken&& token = {}) {
    return initiate<milliseconds>(std::forward<CompletionToken>(token),
                                  [](const lock_handle& l, detail::handler<milliseconds> h) {
                                    l.start_remaining_ttl(std::move(h));
                                  });
  }
  ///@}

  // --- lost -------------------------------------------------------------------------------
  /// @name lost
  ///@{

  /// Completes when the watchdog finds this owner's watchdog lock lost (expired, deleted,
  /// force-unlocked, or not renewable for a whole lease), before the server can give it to
  /// anyone else. rlock::with_lock() races work against it (not Asio's `work() || lost()`,
  /// which waits for the first *success*: a work() that throws would wait for lost()).
  /// Completion: `void(error_code)`: success when lost; not_owner if the lock is not held
  /// through the watchdog when called; operation_aborted if it is released first or the client
  /// closes.
  ///
  /// Per-operation cancellation: terminal, partial and total: completes with operation_aborted;
  /// the lock is not touched.
  boost::asio::awaitable<void> lost();
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_lost(CompletionToken&& token = {}) {
    return initiate<>(
        std::forward<CompletionToken>(token),
        [](const lock_handle& l, detail::handler<> h) { l.start_lost(std::move(h)); });
  }
  ///@}

 protected:
  /// @cond
  explicit lock_handle(std::shared_ptr<detail::lock_state> state) noexcept;

  /// Starts `start(*this, handler)` for a token of signature `void(error_code, Result...)`. The
  /// initiation holds a copy of the handle: a deferred operation may start after this one is
  /// gone.
  template <typename... Result, typename CompletionToken, typename Start>
  auto initiate(CompletionToken&& token, Start start) const {
    return detail::initiate<Result...>(std::forward<CompletionToken>(token), *this,
                                       std::move(start));
  }

  /// The owner's state, for the kinds' own operations.
  static const std::shared_ptr<detail::lock_state>& state_of(const lock_handle& l) noexcept {
    return l.state_;
  }

  // The operations, each started once for both forms; handlers run on their associated
  // executor, never inside these calls. `batched`: the script call goes in one batch with the
  // others of the same turn (a multi-lock's members).
  void start_unlock(detail::handler<> h, bool batched = false) const;
  void start_force_unlock(detail::handler<bool> h) const;
  void start_is_locked(detail::handler<bool> h) const;
  void start_is_held(detail::handler<bool> h) const;
  void start_hold_count(detail::handler<std::int64_t> h) const;
  void start_remaining_ttl(detail::handler<milliseconds> h) const;
  void start_lost(detail::handler<> h) const;
  /// The engine's acquisitions of the kind the handle's factory chose: until acquired (`lock`),
  /// or within `wait` reporting whether (`try_lock`).
  static void start_acquire(const lock_handle& l, std::optional<milliseconds> lease,
                            detail::handler<> h);
  static void start_try_acquire(const lock_handle& l, milliseconds wait,
                                std::optional<milliseconds> lease, detail::handler<bool> h,
                                bool batched = false);
  /// @endcond

 private:
  template <typename Lock>
  friend class basic_hold;
  friend class multi_lock;  // takes members of any kind through the engine's acquisitions
  friend class semaphore;   // takes holds of permits through them

  std::shared_ptr<detail::lock_state> state_;
};

/// A lock kind's handle that scoped holds, with_lock() and the blocking facade accept: a
/// copyable lock_handle with `scoped()` and `try_scoped(wait)` (every kind has the awaitable and
/// `async_*` forms of lock() and try_lock() beside them). Its
/// acquisitions may complete with more than success (a fencing token): holds and with_lock keep
/// the handle, from which the kind's own accessors read it.
template <typename Lock>
concept owned_lock = std::derived_from<Lock, lock_handle> && std::copy_constructible<Lock> &&
    requires(Lock l, std::chrono::milliseconds wait) {
  { l.scoped() } -> std::same_as<boost::asio::awaitable<basic_hold<Lock>>>;
  { l.try_scoped(wait) } -> std::same_as<boost::asio::awaitable<basic_hold<Lock>>>;
};

}  // namespace rlock
