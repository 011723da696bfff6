#pragma once

#include "rlock/detail/completion.hpp"
#include "rlock/export.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace rlock {

/// How the latest acquisition through a handle came about (diagnostics, demos, tests).
enum class wake_reason {
  /// Acquired without sleeping: the first attempt, or the retry right after subscribing.
  immediate,
  /// Woken by an unlock notification on the lock's channel.
  notification,
  /// Slept until the holder's lease ran out (key expiry publishes nothing).
  expiry,
  /// Handed over by a final unlock of another owner of this client, in that unlock's round trip
  /// (config::local_handoff).
  handoff,
};

/// "immediate", "notification", "expiry", "handoff".
RLOCK_EXPORT std::string_view to_string(wake_reason reason) noexcept;

class client;
class hold;

namespace detail {
struct lock_state;
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
/// **Two forms of every operation, one implementation.** `co_await lock.lock()` (an
/// `asio::awaitable`) throws `std::system_error` carrying `rlock::errc`, with Redis's text in
/// `what()` for server errors. `lock.async_lock(token)` takes any Asio completion token (a
/// callback, `use_future`, `use_awaitable`, `as_tuple(...)`, `deferred`, ...; without one,
/// `rlock::default_completion_token`, i.e. `asio::deferred`) and completes with Asio's
/// convention, `void(boost::system::error_code[, T])`; the text is then in `last_error()`.
///
/// **Execution.** Every operation runs on the client's executor (callable from any thread) and
/// completes on the completion handler's associated executor (default: the client's), never
/// inside the initiating call.
///
/// **Cancellation**, per operation below. Where it is supported, it may be emitted from any
/// thread or executor, also before the operation has started on the client's executor, and the
/// operation completes with `operation_aborted` (`std::errc::operation_canceled` from the
/// awaitable forms).
class RLOCK_EXPORT reentrant_lock {
 public:
  using executor_type = boost::asio::any_io_executor;
  using milliseconds = std::chrono::milliseconds;

  /// The lock's name as given to get_lock (without the key prefix).
  std::string_view name() const noexcept;
  /// The Redis key: key prefix + name.
  const std::string& key() const noexcept;
  /// This owner's 64-bit id, the second half of its hash field.
  std::uint64_t owner_id() const noexcept;
  /// The hash field identifying this owner: `<client-uuid>:<owner-id>`.
  const std::string& owner_field() const noexcept;
  /// The client's executor, where the lock's operations run.
  executor_type get_executor() const noexcept;
  /// How this owner's latest successful acquisition came about.
  wake_reason last_wake() const noexcept;
  /// The text of this owner's latest failed lock, try_lock or unlock: Redis's error text (e.g.
  /// "WRONGTYPE ...", "NOPERM ...") or what the client knows of a transport failure. The
  /// async_* forms complete with an error_code only; read this in the handler for the words.
  /// Empty if none failed. May be called from any thread.
  std::string last_error() const;

  // --- lock -------------------------------------------------------------------------------
  /// Waits until acquired: with the watchdog keeping the lease (`lease` absent), or with a
  /// lease (> 0) after which the key expires unless unlocked. Re-enters if this owner holds it.
  /// Completion: `void(error_code)`; errors: invalid_argument (lease <= 0), server_error,
  /// permission_denied (no right on the lock's channel), connection_lost (the client was closed,
  /// or config::fail_fast while disconnected). Waits across reconnects; no bound but the
  /// caller's cancellation.
  ///
  /// Per-operation cancellation: terminal, partial and total. The wait ends with
  /// operation_aborted and leaves no lock taken, no waiter and no subscription behind. An
  /// attempt still queued (the client is reconnecting) is withdrawn; one already written is
  /// awaited while the connection is up (its answer is due at once; a server that stops
  /// answering is found by the health check), and an acquisition it made is undone before the
  /// caller is told; if the connection is lost meanwhile, the caller is told at once and the
  /// acquisition, if the server made it, is given back when the reconnection tells.
  boost::asio::awaitable<void> lock();
  boost::asio::awaitable<void> lock(milliseconds lease);
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_lock(CompletionToken&& token = {}) {
    return async_lock(std::nullopt, std::forward<CompletionToken>(token));
  }
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_lock(std::optional<milliseconds> lease, CompletionToken&& token = {}) {
    return initiate<>(std::forward<CompletionToken>(token),
                      [lease](const reentrant_lock& l, detail::handler<> h) {
                        l.start_lock(lease, std::move(h));
                      });
  }

  // --- scoped, try_scoped -------------------------------------------------------------------
  /// lock() as a scoped hold: `auto h = co_await lock.scoped();` ... `co_await h.unlock();`. A
  /// hold left without unlock() (exception, cancellation) posts the unlock (see hold).
  /// Completion: `void(error_code, hold)`: the hold owns the lock on success and is empty with
  /// an error; errors as lock(). The hold is made in the completion, so the acquisition is owned
  /// by a hold from the moment it reaches the caller.
  ///
  /// Per-operation cancellation: as for lock() (terminal, partial, total; nothing left behind).
  boost::asio::awaitable<hold> scoped();
  boost::asio::awaitable<hold> scoped(milliseconds lease);
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_scoped(CompletionToken&& token = {}) {
    return async_scoped(std::nullopt, std::forward<CompletionToken>(token));
  }
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_scoped(std::optional<milliseconds> lease, CompletionToken&& token = {}) {
    return initiate<hold>(std::forward<CompletionToken>(token),
                          [lease](const reentrant_lock& l, detail::handler<hold> h) {
                            l.start_scoped(std::nullopt, lease, std::move(h));
                          });
  }

  /// try_lock(wait[, lease]) as a scoped hold, empty (`!h.owns_lock()`) if not acquired.
  /// Completion: `void(error_code, hold)`; errors as try_lock().
  ///
  /// Per-operation cancellation: as for try_lock() (terminal, partial, total; nothing left
  /// behind).
  boost::asio::awaitable<hold> try_scoped(milliseconds wait);
  boost::asio::awaitable<hold> try_scoped(milliseconds wait, milliseconds lease);
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_scoped(milliseconds wait, CompletionToken&& token = {}) {
    return async_try_scoped(wait, std::nullopt, std::forward<CompletionToken>(token));
  }
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_scoped(milliseconds wait, std::optional<milliseconds> lease,
                        CompletionToken&& token = {}) {
    return initiate<hold>(std::forward<CompletionToken>(token),
                          [wait, lease](const reentrant_lock& l, detail::handler<hold> h) {
                            l.start_scoped(wait, lease, std::move(h));
                          });
  }

  // --- try_lock ---------------------------------------------------------------------------
  /// Acquires if it can within `wait` (absent: one attempt, no waiting; 0: the same); true if
  /// acquired or re-entered. Lease as for lock(). Completion: `void(error_code, bool)`; errors as
  /// lock(), plus invalid_argument (wait < 0) and timeout. **The wait is the bound**: it
  /// completes by `wait` whatever the server does (one attempt, `wait` 0, within
  /// config::command_timeout). An attempt still unanswered then is settled in the background,
  /// and an acquisition it makes is given back: the caller gets `false` if the server answered
  /// this acquisition at least once (the lock was busy), timeout if it never did (a stopped or
  /// unreachable server).
  ///
  /// Per-operation cancellation: terminal, partial and total, as for lock(); completes with
  /// operation_aborted, never with `true`.
  boost::asio::awaitable<bool> try_lock();
  boost::asio::awaitable<bool> try_lock(milliseconds wait);
  boost::asio::awaitable<bool> try_lock(milliseconds wait, milliseconds lease);
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_lock(CompletionToken&& token = {}) {
    return async_try_lock(milliseconds::zero(), std::nullopt, std::forward<CompletionToken>(token));
  }
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_lock(milliseconds wait, CompletionToken&& token = {}) {
    return async_try_lock(wait, std::nullopt, std::forward<CompletionToken>(token));
  }
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_lock(milliseconds wait, std::optional<milliseconds> lease,
                      CompletionToken&& token = {}) {
    return initiate<bool>(std::forward<CompletionToken>(token),
                          [wait, lease](const reentrant_lock& l, detail::handler<bool> h) {
                            l.start_try_lock(wait, lease, std::move(h));
                          });
  }

  // --- unlock -----------------------------------------------------------------------------
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
        [](const reentrant_lock& l, detail::handler<> h) { l.start_unlock(std::move(h)); });
  }

  // --- force_unlock -----------------------------------------------------------------------
  /// Deletes the lock whoever holds it and wakes its waiters; true if it was locked.
  /// Completion: `void(error_code, bool)`; errors: timeout (config::command_timeout),
  /// server_error, permission_denied, connection_lost.
  ///
  /// Per-operation cancellation: not supported (ignored): a single round trip, bounded.
  boost::asio::awaitable<bool> force_unlock();
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_force_unlock(CompletionToken&& token = {}) {
    return initiate<bool>(std::forward<CompletionToken>(token),
                          [](const reentrant_lock& l, detail::handler<bool> h) {
                            l.start_force_unlock(std::move(h));
                          });
  }

  // --- queries ----------------------------------------------------------------------------
  /// Whether anybody holds the lock (`EXISTS`). Completion: `void(error_code, bool)`.
  /// Errors of all queries: timeout (config::command_timeout), server_error, connection_lost.
  /// Per-operation cancellation of all queries: not supported (ignored): single round trips,
  /// bounded.
  boost::asio::awaitable<bool> is_locked();
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_is_locked(CompletionToken&& token = {}) {
    return initiate<bool>(
        std::forward<CompletionToken>(token),
        [](const reentrant_lock& l, detail::handler<bool> h) { l.start_is_locked(std::move(h)); });
  }
  /// Whether this owner holds the lock (`HEXISTS`). Completion: `void(error_code, bool)`.
  boost::asio::awaitable<bool> is_held();
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_is_held(CompletionToken&& token = {}) {
    return initiate<bool>(
        std::forward<CompletionToken>(token),
        [](const reentrant_lock& l, detail::handler<bool> h) { l.start_is_held(std::move(h)); });
  }
  /// This owner's hold count, 0 if not held (`HGET`). Completion:
  /// `void(error_code, std::int64_t)`.
  boost::asio::awaitable<std::int64_t> hold_count();
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_hold_count(CompletionToken&& token = {}) {
    return initiate<std::int64_t>(std::forward<CompletionToken>(token),
                                  [](const reentrant_lock& l, detail::handler<std::int64_t> h) {
                                    l.start_hold_count(std::move(h));
                                  });
  }
  /// The key's remaining time to live (`PTTL`): -2 ms if not locked, -1 ms if it has no expiry.
  /// Completion: `void(error_code, std::chrono::milliseconds)`.
  boost::asio::awaitable<milliseconds> remaining_ttl();
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_remaining_ttl(CompletionToken&& token = {}) {
    return initiate<milliseconds>(std::forward<CompletionToken>(token),
                                  [](const reentrant_lock& l, detail::handler<milliseconds> h) {
                                    l.start_remaining_ttl(std::move(h));
                                  });
  }

  // --- lost -------------------------------------------------------------------------------
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
        [](const reentrant_lock& l, detail::handler<> h) { l.start_lost(std::move(h)); });
  }

 private:
  friend class client;
  friend class hold;
  friend class fenced_lock;  // a reentrant_lock with other acquisitions: shares the rest
  explicit reentrant_lock(std::shared_ptr<detail::lock_state> state);

  /// Starts `start(*this, handler)` for a token of signature `void(error_code, Result...)`. The
  /// initiation holds a copy of the handle: a deferred operation may start after this one is
  /// gone.
  template <typename... Result, typename CompletionToken, typename Start>
  auto initiate(CompletionToken&& token, Start start) const {
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, Result...)>(
        [](auto handler, reentrant_lock self, Start st) {
          auto ex = self.get_executor();
          st(self, detail::with_error_code<Result...>(std::move(handler), ex));
        },
        token, *this, std::move(start));
  }

  // The operations, each started once for both forms; handlers run on their associated
  // executor, never inside these calls.
  void start_lock(std::optional<milliseconds> lease, detail::handler<> h) const;
  void start_try_lock(milliseconds wait, std::optional<milliseconds> lease,
                      detail::handler<bool> h) const;
  void start_unlock(detail::handler<> h) const;
  void start_force_unlock(detail::handler<bool> h) const;
  void start_is_locked(detail::handler<bool> h) const;
  void start_is_held(detail::handler<bool> h) const;
  void start_hold_count(detail::handler<std::int64_t> h) const;
  void start_remaining_ttl(detail::handler<milliseconds> h) const;
  void start_lost(detail::handler<> h) const;
  /// lock (wait absent) or try_lock, completing with a hold of what was acquired.
  void start_scoped(std::optional<milliseconds> wait, std::optional<milliseconds> lease,
                    detail::handler<hold> h) const;
  boost::asio::awaitable<hold> try_scoped_awaitable(std::optional<milliseconds> wait,
                                                    std::optional<milliseconds> lease);

  std::shared_ptr<detail::lock_state> state_;
};

}  // namespace rlock

// scoped() returns a hold by value: its definition comes with the lock's.
#include "rlock/hold.hpp"
