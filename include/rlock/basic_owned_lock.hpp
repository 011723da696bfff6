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

/// The acquisitions of every owned lock kind whose lock() completes with nothing and whose
/// try_lock() says whether it acquired: reentrant_lock, non_reentrant_lock, fair_lock,
/// non_reentrant_fair_lock, spin_lock, and the read_lock and write_lock halves (a read hold is
/// shared; the forms are the same). One template, so that the kinds share their forms, not
/// copies of them; what differs between the kinds (the scripts, how a waiter waits, whether the
/// owner may re-enter) is the kind's descriptor inside the library, chosen by the client factory
/// that made the handle. `Lock` is the kind's handle class, which derives from this.
///
/// **Cancellation**, per operation below. Where it is supported, it may be emitted from any
/// thread or executor, also before the operation has started on the client's executor, and the
/// operation completes with `operation_aborted` (thrown as boost::system::system_error by the
/// awaitable forms).
template <typename Lock>
class basic_owned_lock : public lock_handle {
 public:
  /// What scoped() and try_scoped() return: a scoped hold of this kind.
  using hold_type = basic_hold<Lock>;

  // --- lock -------------------------------------------------------------------------------
  /// @name lock
  ///@{

  /// Waits until acquired: with the watchdog keeping the lease (`lease` absent), or with a
  /// lease (> 0) after which the key expires unless unlocked. Re-enters if this owner holds it
  /// (a non-reentrant kind fails with errc::reentry_refused instead).
  /// Completion: `void(error_code)`; errors: invalid_argument (lease <= 0), reentry_refused,
  /// server_error, permission_denied (no right on the lock's channel), connection_lost (the
  /// client was closed, or config::fail_fast while disconnected), lock_lost (three holds in a
  /// row were answered later than their lease allows, so none was believed: a lease shorter
  /// than the round trip). Waits across reconnects; no bound but the caller's cancellation.
  ///
  /// Per-operation cancellation: terminal, partial and total. The wait ends with
  /// operation_aborted and leaves no lock taken, no waiter and no subscription behind. An
  /// attempt still queued (the client is reconnecting) is withdrawn; one already written is
  /// awaited while the connection is up (its answer is due at once; a server that stops
  /// answering is found by the health check), and an acquisition it made is undone before the
  /// caller is told; if the connection is lost meanwhile, the caller is told at once and the
  /// acquisition, if the server made it, is given back when the reconnection tells.
  boost::asio::awaitable<void> lock() { return lock_form(std::nullopt); }
  /// lock() with a lease: the key expires after it unless unlocked; nothing renews it.
  boost::asio::awaitable<void> lock(milliseconds lease) { return lock_form(lease); }
  /// lock() with a completion token; completes with `void(error_code)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_lock(CompletionToken&& token = {}) {
    return async_lock(std::nullopt, std::forward<CompletionToken>(token));
  }
  /// lock(lease) with a completion token (`lease` absent: the watchdog); completes with
  /// `void(error_code)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_lock(std::optional<milliseconds> lease, CompletionToken&& token = {}) {
    return initiate<>(
        std::forward<CompletionToken>(token),
        [lease](const lock_handle& l, detail::handler<> h) { start_lock(l, lease, std::move(h)); });
  }
  ///@}

  // --- scoped, try_scoped -------------------------------------------------------------------
  /// @name scoped
  ///@{

  /// lock() as a scoped hold: `auto h = co_await lock.scoped();` ... `co_await h.unlock();`. A
  /// hold left without unlock() (exception, cancellation) posts the unlock (see basic_hold).
  /// Completion: `void(error_code, hold_type)`: the hold owns the lock on success and is empty
  /// with an error; errors as lock(). The hold is made in the completion, so the acquisition is
  /// owned by a hold from the moment it reaches the caller.
  ///
  /// Per-operation cancellation: as for lock() (terminal, partial, total; nothing left behind).
  boost::asio::awaitable<hold_type> scoped() { return scoped_form(std::nullopt, std::nullopt); }
  /// scoped() with a lease, as lock(lease).
  boost::asio::awaitable<hold_type> scoped(milliseconds lease) {
    return scoped_form(std::nullopt, lease);
  }
  /// scoped() with a completion token; completes with `void(error_code, hold_type)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_scoped(CompletionToken&& token = {}) {
    return async_scoped(std::nullopt, std::forward<CompletionToken>(token));
  }
  /// scoped(lease) with a completion token (`lease` absent: the watchdog); completes with
  /// `void(error_code, hold_type)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_scoped(std::optional<milliseconds> lease, CompletionToken&& token = {}) {
    return initiate<hold_type>(std::forward<CompletionToken>(token),
                               [lease](const lock_handle& l, detail::handler<hold_type> h) {
                                 hold_type::start_scoped(Lock(state_of(l)), std::nullopt, lease,
                                                         std::move(h));
                               });
  }
  ///@}

  /// @name try_scoped
  ///@{

  /// try_lock(wait[, lease]) as a scoped hold, empty (`!h.owns_lock()`) if not acquired.
  /// Completion: `void(error_code, hold_type)`; errors as try_lock().
  ///
  /// Per-operation cancellation: as for try_lock() (terminal, partial, total; nothing left
  /// behind).
  boost::asio::awaitable<hold_type> try_scoped(milliseconds wait) {
    return scoped_form(wait, std::nullopt);
  }
  /// try_scoped(wait) with a lease, as lock(lease).
  boost::asio::awaitable<hold_type> try_scoped(milliseconds wait, milliseconds lease) {
    return scoped_form(wait, lease);
  }
  /// try_scoped(wait) with a completion token; completes with `void(error_code, hold_type)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_scoped(milliseconds wait, CompletionToken&& token = {}) {
    return async_try_scoped(wait, std::nullopt, std::forward<CompletionToken>(token));
  }
  /// try_scoped(wait, lease) with a completion token (`lease` absent: the watchdog); completes
  /// with `void(error_code, hold_type)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_scoped(milliseconds wait, std::optional<milliseconds> lease,
                        CompletionToken&& token = {}) {
    return initiate<hold_type>(std::forward<CompletionToken>(token),
                               [wait, lease](const lock_handle& l, detail::handler<hold_type> h) {
                                 hold_type::start_scoped(Lock(state_of(l)), wait, lease,
                                                         std::move(h));
                               });
  }
  ///@}

  // --- try_lock ---------------------------------------------------------------------------
  /// @name try_lock
  ///@{

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
  boost::asio::awaitable<bool> try_lock() { return try_lock_form(milliseconds::zero(), {}); }
  /// try_lock() waiting at most `wait`.
  boost::asio::awaitable<bool> try_lock(milliseconds wait) { return try_lock_form(wait, {}); }
  /// try_lock(wait) with a lease, as lock(lease).
  boost::asio::awaitable<bool> try_lock(milliseconds wait, milliseconds lease) {
    return try_lock_form(wait, lease);
  }
  /// try_lock() with a completion token; completes with `void(error_code, bool)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_lock(CompletionToken&& token = {}) {
    return async_try_lock(milliseconds::zero(), std::nullopt, std::forward<CompletionToken>(token));
  }
  /// try_lock(wait) with a completion token; completes with `void(error_code, bool)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_lock(milliseconds wait, CompletionToken&& token = {}) {
    return async_try_lock(wait, std::nullopt, std::forward<CompletionToken>(token));
  }
  /// try_lock(wait, lease) with a completion token (`lease` absent: the watchdog); completes
  /// with `void(error_code, bool)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_lock(milliseconds wait, std::optional<milliseconds> lease,
                      CompletionToken&& token = {}) {
    return initiate<bool>(std::forward<CompletionToken>(token),
                          [wait, lease](const lock_handle& l, detail::handler<bool> h) {
                            start_try_lock(l, wait, lease, std::move(h));
                          });
  }
  ///@}

 protected:
  /// @cond
  explicit basic_owned_lock(std::shared_ptr<detail::lock_state> state) noexcept
      : lock_handle(std::move(state)) {}

  // The acquisitions, each started once for every form (basic_hold's scoped forms too).
  static void start_lock(const lock_handle& l, std::optional<milliseconds> lease,
                         detail::handler<> h) {
    start_acquire(l, lease, std::move(h));
  }
  static void start_try_lock(const lock_handle& l, milliseconds wait,
                             std::optional<milliseconds> lease, detail::handler<bool> h) {
    start_try_acquire(l, wait, lease, std::move(h));
  }
  /// @endcond

 private:
  boost::asio::awaitable<void> lock_form(std::optional<milliseconds> lease) {
    return detail::awaitable_of<>(*this, [lease](const lock_handle& l, detail::handler<> h) {
      start_lock(l, lease, std::move(h));
    });
  }
  boost::asio::awaitable<bool> try_lock_form(milliseconds wait, std::optional<milliseconds> lease) {
    return detail::awaitable_of<bool>(*this,
                                      [wait, lease](const lock_handle& l, detail::handler<bool> h) {
                                        start_try_lock(l, wait, lease, std::move(h));
                                      });
  }
  boost::asio::awaitable<hold_type> scoped_form(std::optional<milliseconds> wait,
                                                std::optional<milliseconds> lease) {
    return detail::awaitable_of<hold_type>(
        *this, [wait, lease](const lock_handle& l, detail::handler<hold_type> h) {
          hold_type::start_scoped(Lock(state_of(l)), wait, lease, std::move(h));
        });
  }
};

}  // namespace rlock
