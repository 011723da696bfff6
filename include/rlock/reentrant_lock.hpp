#pragma once

#include "rlock/detail/async_run.hpp"
#include "rlock/export.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rlock {

/// How the latest acquisition through a handle came about (diagnostics, demos, tests).
enum class wake_reason {
  /// Acquired without sleeping: the first attempt, or the retry right after subscribing.
  immediate,
  /// Woken by an unlock notification on the lock's channel.
  notification,
  /// Slept until the holder's lease ran out (key expiry publishes nothing).
  expiry,
};

class reentrant_lock;

namespace detail {
struct lock_state;
/// Completions of the lock operations: the exception carries rlock::errc and Redis's text.
using void_handler = boost::asio::any_completion_handler<void(std::exception_ptr)>;
using bool_handler = boost::asio::any_completion_handler<void(std::exception_ptr, bool)>;
/// Starts an acquisition that reports whether it got the lock (wait: none = forever, 0 = one
/// attempt; lease: none = watchdog) on the lock's client executor; callable from any thread.
/// `handler` runs on its associated executor (default: the client's), never inside this call.
RLOCK_EXPORT void async_acquire(std::shared_ptr<lock_state> s,
                                std::optional<std::chrono::milliseconds> wait,
                                std::optional<std::chrono::milliseconds> lease,
                                bool_handler handler);
/// async_acquire waiting until acquired, without a result to report.
RLOCK_EXPORT void async_lock(std::shared_ptr<lock_state> s,
                             std::optional<std::chrono::milliseconds> lease, void_handler handler);
/// Starts a release of one hold, like async_acquire.
RLOCK_EXPORT void async_release(std::shared_ptr<lock_state> s, void_handler handler);
RLOCK_EXPORT boost::asio::awaitable<void> lost_op(std::shared_ptr<lock_state> s);
RLOCK_EXPORT const boost::asio::any_io_executor& executor_of(const lock_state& s) noexcept;
RLOCK_EXPORT const std::shared_ptr<lock_state>& state_of(const reentrant_lock& l) noexcept;
}  // namespace detail

/// A Redisson-compatible reentrant distributed lock (Redisson's RLock) seen by one owner.
///
/// **Ownership.** A handle is one owner: the Redis hash field `<client-uuid>:<owner-id>`.
/// Locking through the same handle again re-enters (the hold count goes up); unlocking works from
/// any coroutine or thread that has the handle. Two handles from `client::get_lock(name)` are two
/// owners and exclude each other, also inside one process. Redisson keys ownership by thread id
/// instead; a coroutine moves between threads and one thread runs many coroutines, so the handle
/// (a value a task holds and passes along) is the owner that fits coroutine code. Copies of a
/// handle are the same owner.
///
/// **Leases.** With an explicit lease the key expires after it unless unlocked; nothing renews
/// it. Without one the lease is `config::watchdog_timeout` and the client's watchdog renews it
/// every third of that until the final unlock; if a renewal finds the lock gone, `lost()`
/// completes.
///
/// **Execution.** Every operation runs on the client's executor and completes on the caller's
/// executor, never inline. Errors: awaitables throw `std::system_error` carrying `rlock::errc`
/// (with Redis's text in `what()` for server errors); the `async_*` forms complete with
/// `void(std::error_code[, T])` and take any Asio completion token.
///
/// **Per-operation cancellation** (terminal, partial and total) is supported by the waiting
/// operations `lock`, `try_lock(wait...)` and `lost`: a cancelled wait completes with
/// `operation_aborted` and leaves no lock taken, no local waiter and no subscription behind.
/// The cancellation may be emitted from any thread or executor, also before the operation has
/// started on the client's executor. An attempt still queued (the client is reconnecting) is
/// withdrawn; one already written is awaited while the connection is up (its answer is due at
/// once; a server that stops answering is found by the health check), and an acquisition it made
/// is undone before the caller is told; if the connection is lost meanwhile, the caller is told at
/// once and the acquisition, if the server made it, is given back when the reconnection tells.
/// Other operations are single round trips bounded by `config::command_timeout` and ignore
/// cancellation.
class RLOCK_EXPORT reentrant_lock {
 public:
  using executor_type = boost::asio::any_io_executor;
  using milliseconds = std::chrono::milliseconds;

  explicit reentrant_lock(std::shared_ptr<detail::lock_state> state);

  /// The lock's name as given to get_lock (without the key prefix).
  std::string_view name() const noexcept;
  /// The Redis key: key prefix + name.
  const std::string& key() const noexcept;
  /// This owner's 64-bit id, the second half of its hash field.
  std::uint64_t owner_id() const noexcept;
  /// The hash field identifying this owner: `<client-uuid>:<owner-id>`.
  const std::string& owner_field() const noexcept;
  executor_type get_executor() const noexcept { return detail::executor_of(*state_); }
  /// How this owner's latest successful acquisition came about.
  wake_reason last_wake() const noexcept;
  /// The text of this owner's latest failed lock, try_lock or unlock: Redis's error text (e.g.
  /// "WRONGTYPE ...", "NOPERM ...") or what the client knows of a transport failure. The
  /// async_* forms complete with an error_code only; read this in the handler for the words.
  /// Empty if none failed. May be called from any thread.
  std::string last_error() const;

  /// Waits until acquired, with the watchdog keeping the lease. Completion: void(error_code).
  boost::asio::awaitable<void> lock();
  /// Waits until acquired with a lease (> 0) after which the key expires unless unlocked.
  boost::asio::awaitable<void> lock(milliseconds lease);
  /// One attempt, no waiting: true if acquired (or re-entered).
  boost::asio::awaitable<bool> try_lock();
  /// Waits up to `wait` (>= 0; 0 means one attempt): true if acquired.
  boost::asio::awaitable<bool> try_lock(milliseconds wait);
  boost::asio::awaitable<bool> try_lock(milliseconds wait, milliseconds lease);
  /// Releases one hold; the final release deletes the key and publishes "0" on the channel.
  /// Throws errc::not_owner if this owner does not hold the lock (never a silent success).
  boost::asio::awaitable<void> unlock();
  /// Deletes the lock whoever holds it and wakes waiters; true if it was locked.
  boost::asio::awaitable<bool> force_unlock();
  /// Whether anybody holds the lock (`EXISTS`).
  boost::asio::awaitable<bool> is_locked();
  /// Whether this owner holds the lock (`HEXISTS`).
  boost::asio::awaitable<bool> is_held();
  /// This owner's hold count (0 if not held).
  boost::asio::awaitable<std::int64_t> hold_count();
  /// The key's remaining time to live: -2 ms if not locked, -1 ms if it has no expiry.
  boost::asio::awaitable<milliseconds> remaining_ttl();
  /// Completes when the watchdog finds this owner's watchdog lock lost (expired, deleted,
  /// force-unlocked, or not renewable for a whole lease). Throws errc::not_owner if the lock is
  /// not held through the watchdog when called, and operation_aborted if it is released first.
  /// Race a critical section against it: `co_await (work() || lock.lost())`.
  boost::asio::awaitable<void> lost();

  /// Any-token forms. Signatures: lock, unlock, lost: void(error_code); try_lock:
  /// void(error_code, bool). An absent lease means the watchdog keeps it.
  template <typename CompletionToken>
  auto async_lock(std::optional<milliseconds> lease, CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
        [](auto handler, std::shared_ptr<detail::lock_state> s, std::optional<milliseconds> l) {
          const auto ex = detail::executor_of(*s);
          detail::async_lock(
              std::move(s), l,
              detail::completion_for<void(boost::system::error_code)>(std::move(handler), ex));
        },
        token, state_, lease);
  }
  template <typename CompletionToken>
  auto async_try_lock(milliseconds wait, std::optional<milliseconds> lease,
                      CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, bool)>(
        [](auto handler, std::shared_ptr<detail::lock_state> s, milliseconds w,
           std::optional<milliseconds> l) {
          const auto ex = detail::executor_of(*s);
          detail::async_acquire(std::move(s), w, l,
                                detail::completion_for<void(boost::system::error_code, bool)>(
                                    std::move(handler), ex));
        },
        token, state_, wait, lease);
  }
  template <typename CompletionToken>
  auto async_unlock(CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
        [](auto handler, std::shared_ptr<detail::lock_state> s) {
          const auto ex = detail::executor_of(*s);
          detail::async_release(
              std::move(s),
              detail::completion_for<void(boost::system::error_code)>(std::move(handler), ex));
        },
        token, state_);
  }
  template <typename CompletionToken>
  auto async_lost(CompletionToken&& token) {
    return detail::async_run(get_executor(), detail::lost_op(state_),
                             std::forward<CompletionToken>(token));
  }

 private:
  template <typename T>
  boost::asio::awaitable<T> spawn(boost::asio::awaitable<T> op);

  friend const std::shared_ptr<detail::lock_state>& detail::state_of(
      const reentrant_lock& l) noexcept;
  std::shared_ptr<detail::lock_state> state_;
};

}  // namespace rlock
