#pragma once

#include "rlock/detail/completion.hpp"
#include "rlock/export.hpp"
#include "rlock/hold.hpp"
#include "rlock/lock_handle.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <utility>

namespace rlock {

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
/// **Forms and execution** are lock_handle's: an awaitable and an `async_*` form of every
/// operation, run on the client's executor. The release, force_unlock, the queries and lost()
/// are lock_handle's too; this class adds the acquisitions.
///
/// **Cancellation**, per operation below. Where it is supported, it may be emitted from any
/// thread or executor, also before the operation has started on the client's executor, and the
/// operation completes with `operation_aborted` (`std::errc::operation_canceled` from the
/// awaitable forms).
class RLOCK_EXPORT reentrant_lock : public lock_handle {
 public:
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
    return initiate<>(
        std::forward<CompletionToken>(token),
        [lease](const lock_handle& l, detail::handler<> h) { start_lock(l, lease, std::move(h)); });
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
    return initiate<hold>(std::forward<CompletionToken>(token), [lease](const lock_handle& l,
                                                                        detail::handler<hold> h) {
      hold::start_scoped(reentrant_lock(state_of(l)), std::nullopt, lease, std::move(h));
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
                          [wait, lease](const lock_handle& l, detail::handler<hold> h) {
                            hold::start_scoped(reentrant_lock(state_of(l)), wait, lease,
                                               std::move(h));
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
                          [wait, lease](const lock_handle& l, detail::handler<bool> h) {
                            start_try_lock(l, wait, lease, std::move(h));
                          });
  }

 private:
  friend class client;
  friend class basic_hold<reentrant_lock>;
  explicit reentrant_lock(std::shared_ptr<detail::lock_state> state) noexcept
      : lock_handle(std::move(state)) {}

  // The acquisitions, each started once for every form (basic_hold's scoped forms too).
  static void start_lock(const lock_handle& l, std::optional<milliseconds> lease,
                         detail::handler<> h);
  static void start_try_lock(const lock_handle& l, milliseconds wait,
                             std::optional<milliseconds> lease, detail::handler<bool> h);
  boost::asio::awaitable<hold> scoped_awaitable(std::optional<milliseconds> wait,
                                                std::optional<milliseconds> lease);
};

}  // namespace rlock
