#pragma once

#include "rlock/config.hpp"
#include "rlock/connection_state.hpp"
#include "rlock/detail/completion.hpp"
#include "rlock/export.hpp"
#include "rlock/fair_lock.hpp"
#include "rlock/fenced_lock.hpp"
#include "rlock/metrics.hpp"
#include "rlock/non_reentrant_lock.hpp"
#include "rlock/read_write_lock.hpp"
#include "rlock/reentrant_lock.hpp"
#include "rlock/semaphore.hpp"
#include "rlock/spin_lock.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace rlock {

namespace detail {
class client_impl;
struct kind_access;
}  // namespace detail

/// Counters of one client since it was made: what its locks cost in Redis commands and how
/// its waiters were woken.
struct client_stats {
  /// Acquire scripts sent (every lock / try_lock attempt, first tries and retries).
  std::uint64_t acquire_attempts = 0;
  /// Waiters woken by an unlock notification.
  std::uint64_t notified_wakeups = 0;
  /// Waiters that slept until the holder's lease ran out.
  std::uint64_t expiry_wakeups = 0;
  /// Watchdog renewal scripts sent (each renews up to 100 locks).
  std::uint64_t renewal_calls = 0;
  /// Holds checked at once, by a renewal of their own, because the server said another client
  /// changed their keys, flushed them, or the connection was made again (config::track_holds).
  std::uint64_t hold_checks = 0;
  /// Watchdog locks reported lost.
  std::uint64_t lost_locks = 0;
  /// Connections made again after a loss.
  std::uint64_t reconnects = 0;
  /// Connections taken for dead because a health-check PING went unanswered.
  std::uint64_t health_check_failures = 0;
  /// Idempotent commands (queries, renewals, latched releases) written again after their
  /// connection died before answering.
  std::uint64_t retried_commands = 0;
  /// Acquire attempts whose answer was lost, settled by asking the server for the hold count.
  std::uint64_t reconciled_acquires = 0;
  /// Acquisitions given back because they completed after their caller was told otherwise
  /// (cancelled, or out of time).
  std::uint64_t given_back = 0;
  /// Socket writes, over all connections: commands queued in one turn of the event loop go out
  /// in one write (so renewals of a round cost one write per node, not one per call).
  std::uint64_t writes = 0;
  /// Final unlocks that handed the lock to a waiting coroutine of this client in one round trip
  /// (config::local_handoff).
  std::uint64_t local_handoffs = 0;
  /// Of local_handoffs, those that found their waiter gone (cancelled or out of time) and gave
  /// the hold back.
  std::uint64_t handoffs_given_back = 0;
};

/// What a client has in progress right now: every field is zero once its locks are released and
/// its operations complete, so a non-zero value after that is something left behind (the chaos
/// suite checks this at the end of every run). Unlike client_stats these are not atomics: read
/// them on the client's executor.
struct client_activity {
  /// Locks the watchdog renews.
  std::size_t renewed_locks = 0;
  /// Watchdog renewal batches in flight.
  std::size_t renewal_batches = 0;
  /// Whether the watchdog's timer is armed for the renewed locks.
  bool watchdog_armed = false;
  /// lock() / try_lock() calls waiting for an unlock notification.
  std::size_t waiters = 0;
  /// The channels those waiters wait on.
  std::size_t waiter_channels = 0;
  /// Channels the connection is subscribed to or has a (UN)SUBSCRIBE outstanding for.
  std::size_t subscriptions = 0;
  /// Requests queued or written and not answered yet.
  std::size_t requests = 0;
  /// Unlock latches waiting to be deleted.
  std::size_t latches = 0;
  /// lock() attempts waiting for their turn (config::max_attempts_in_flight).
  std::size_t queued_attempts = 0;

  /// Whether every field is zero: nothing in progress, nothing left behind.
  bool idle() const noexcept {
    return renewed_locks == 0 && renewal_batches == 0 && !watchdog_armed && waiters == 0 &&
           waiter_channels == 0 && subscriptions == 0 && requests == 0 && latches == 0 &&
           queued_attempts == 0;
  }
};

/// A connection to one Redis server and the machinery every lock of this process shares: the
/// script registry, the pub/sub wait hub and the lease watchdog. One TCP connection carries all
/// commands of all coroutines, pipelined, and the unlock notifications (RESP3 pushes).
///
/// Like an Asio I/O object, a client is not thread-safe: its state lives on the executor it is
/// given, and operations run there (dispatched onto it) and complete on the caller's executor. Use
/// it from one thread, or give it a strand when the io_context runs on several threads:
/// `rlock::client redis(asio::make_strand(io), cfg)`. Destroy it where no other thread runs that
/// executor (or after the io_context stopped); destruction closes the connection like `close()`.
class RLOCK_EXPORT client {
 public:
  /// The executor type the client is given: Asio's type-erased I/O executor.
  using executor_type = boost::asio::any_io_executor;

  /// Throws boost::system::system_error with errc::invalid_argument for settings that cannot work
  /// (a sync_replicas timeout not below command_timeout, sentinels without a master name, ...).
  client(executor_type ex, config cfg);
  client(const client&) = delete;
  client& operator=(const client&) = delete;
  /// Movable; a moved-from client may only be destroyed or assigned to.
  client(client&&) noexcept = default;
  /// Movable; a moved-from client may only be destroyed or assigned to.
  client& operator=(client&&) noexcept = default;
  /// Closes the connection as close() does, without waiting for the deletes of unlock latches.
  ~client();

  /// The executor the client's state lives on.
  executor_type get_executor() const noexcept;
  /// The configuration it was made with.
  const rlock::config& get_config() const noexcept;
  /// The client's random v4 UUID, the first half of every owner field.
  const std::string& id() const noexcept;

  /// A snapshot of the counters; may be called from any thread.
  client_stats stats() const noexcept;
  /// What is in progress now (see client_activity); call on the client's executor.
  client_activity activity() const noexcept;

  /// Counters, wait and hold histograms, and gauges, for monitoring (to_prometheus() renders
  /// them). Call on the client's executor; from elsewhere use async_metrics().
  client_metrics metrics() const;
  /// metrics() taken on the client's executor. Completion: `void(error_code, client_metrics)`,
  /// never an error. Per-operation cancellation: not supported (ignored): it completes at once.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_metrics(CompletionToken&& token = {}) {
    return boost::asio::async_initiate<CompletionToken,
                                       void(boost::system::error_code, client_metrics)>(
        [](auto handler, std::shared_ptr<detail::client_impl> impl, executor_type ex) {
          start_metrics(impl, detail::with_error_code<client_metrics>(std::move(handler), ex));
        },
        token, impl_, get_executor());
  }

  /// The connection's state now; may be called from any thread.
  connection_state state() const noexcept;
  /// Calls `handler` on the client's executor at every change of the connection's state
  /// (connected, reconnecting with the reason, ...). Set it before connect().
  void on_state_change(std::function<void(const connection_event&)> handler);

  /// How long before a watchdog lease can expire on the server its holder is told lost():
  /// watchdog_timeout / 100 + 5 ms (clock drift between the machines, timer latency), at most
  /// half the lease.
  std::chrono::milliseconds lease_margin() const noexcept;

  /// @name connect
  ///@{

  /// Connects, says `HELLO 3` (with AUTH if configured), selects the database and loads the
  /// scripts: one attempt, bounded by config::connect_timeout. With config::sentinel, the
  /// sentinels are asked first (each bounded by connect_timeout and command_timeout), and a node
  /// that is not the master is asked about again up to 5 times. Once connected, the client
  /// reconnects by itself after a loss (config::reconnect): commands issued meanwhile wait for
  /// the new connection's handshake, within their own bounds.
  /// Completion: `void(error_code)`; errors: timeout, resolve_failed, connect_failed,
  /// auth_failed, command_not_permitted (an ACL user without `script|load`), unsupported_server,
  /// handshake_closed, the TLS errors (tls_certificate_untrusted, tls_hostname_mismatch,
  /// tls_client_rejected, tls_handshake_failed), master_not_found and not_master (Sentinel),
  /// server_error, protocol_error (the awaitable form's exception carries Redis's, OpenSSL's or
  /// the OS's text).
  ///
  /// Per-operation cancellation: not supported (ignored): bounded by config::connect_timeout.
  boost::asio::awaitable<void> connect();
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_connect(CompletionToken&& token = {}) {
    return initiate(std::forward<CompletionToken>(token), &client::start_connect);
  }
  ///@}

  /// @name close
  ///@{

  /// Closes the connection. First the unlock latches of unlocks already answered are deleted
  /// (one DEL per slot, waited for at most config::command_timeout), so nothing this client
  /// wrote is left behind; then every pending operation, waiter and `lost()` completes with
  /// operation_aborted and the watchdog stops (held leases then expire on the server).
  /// Completion: `void(error_code)`, never an error.
  ///
  /// Per-operation cancellation: any type ends the wait for the latch deletes at once; the close
  /// itself always happens.
  boost::asio::awaitable<void> close();
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_close(CompletionToken&& token = {}) {
    return initiate(std::forward<CompletionToken>(token), &client::start_close);
  }
  ///@}

  /// @name get
  ///@{

  /// A handle of kind `Kind` on `name`, with a new owner: `Kind(*this, name)`. Every kind is
  /// made this way (reentrant_lock, fenced_lock, fair_lock, spin_lock, read_write_lock,
  /// semaphore, count_down_latch, ...), by its own constructor from a client and a name, so a
  /// kind adds nothing to this class; the get_* factories below are its named forms.
  template <typename Kind>
  Kind get(std::string_view name) {
    return Kind(*this, name);
  }
  /// The same, owned by `owner_id` (a kind with owners): `Kind(*this, name, owner_id)`.
  template <typename Kind>
  Kind get(std::string_view name, std::uint64_t owner_id) {
    return Kind(*this, name, owner_id);
  }
  ///@}

  /// @name get_lock
  ///@{

  /// A handle for lock `name` with a new owner. `name` must not be empty (else throws
  /// boost::system::system_error carrying errc::invalid_argument); any other bytes are allowed.
  reentrant_lock get_lock(std::string_view name);
  /// A handle for lock `name` owned by `owner_id`: handles with the same name and owner id are
  /// one owner. Ids from get_lock(name) are drawn from one per-process counter starting at 1;
  /// choose explicit ids that do not collide with those (e.g. above 2^32).
  reentrant_lock get_lock(std::string_view name, std::uint64_t owner_id);
  ///@}

  /// @name get_fenced_lock
  ///@{

  /// A fenced lock (Redisson's RFencedLock) `name` with a new owner, or owned by `owner_id`
  /// (as for get_lock). A fenced and a reentrant handle of one name exclude each other like any
  /// two owners, and with the same owner id they share the hold: one hash field.
  fenced_lock get_fenced_lock(std::string_view name);
  fenced_lock get_fenced_lock(std::string_view name, std::uint64_t owner_id);
  ///@}

  /// @name get_non_reentrant_lock, get_fair_lock, get_non_reentrant_fair_lock
  ///@{

  /// A non-reentrant lock (Redisson's RNonReentrantLock), a fair lock (RFairLock) and a
  /// non-reentrant fair lock (RNonReentrantFairLock) `name`, with a new owner or owned by
  /// `owner_id` (as for get_lock). Every kind on one name shares the lock hash: handles of
  /// different kinds exclude each other like any two owners.
  non_reentrant_lock get_non_reentrant_lock(std::string_view name);
  non_reentrant_lock get_non_reentrant_lock(std::string_view name, std::uint64_t owner_id);
  fair_lock get_fair_lock(std::string_view name);
  fair_lock get_fair_lock(std::string_view name, std::uint64_t owner_id);
  non_reentrant_fair_lock get_non_reentrant_fair_lock(std::string_view name);
  non_reentrant_fair_lock get_non_reentrant_fair_lock(std::string_view name,
                                                      std::uint64_t owner_id);
  ///@}

  /// @name get_spin_lock
  ///@{

  /// A spin lock (Redisson's RSpinLock) `name`: no pub/sub, waiters poll with backoff
  /// (config::spin_lock); with a new owner or owned by `owner_id` (as for get_lock).
  spin_lock get_spin_lock(std::string_view name);
  spin_lock get_spin_lock(std::string_view name, std::uint64_t owner_id);
  ///@}

  /// @name get_read_write_lock
  ///@{

  /// A read-write lock (Redisson's RReadWriteLock) `name`, its two halves owned by a new owner
  /// or by `owner_id` (as for get_lock). Its write half excludes every other kind's holder of
  /// `name`; its read half is shared only with other readers. `priority` says whom it lets in
  /// first (rw_priority; without it, config::read_write_lock_policy::priority, writers): every
  /// handle of one name should use the same (a reader under rw_priority::readers ignores the
  /// waiting writers' marks, as Redisson's readers do).
  read_write_lock get_read_write_lock(std::string_view name);
  read_write_lock get_read_write_lock(std::string_view name, rw_priority priority);
  read_write_lock get_read_write_lock(std::string_view name, std::uint64_t owner_id);
  read_write_lock get_read_write_lock(std::string_view name, std::uint64_t owner_id,
                                      rw_priority priority);
  ///@}

  /// @name get_semaphore, get_permit_expirable_semaphore
  ///@{

  /// A semaphore (Redisson's RSemaphore) and a permit-expirable semaphore
  /// (RPermitExpirableSemaphore) `name`: see semaphore.hpp.
  semaphore get_semaphore(std::string_view name);
  permit_expirable_semaphore get_permit_expirable_semaphore(std::string_view name);
  ///@}

 private:
  using start_fn = void (*)(const std::shared_ptr<detail::client_impl>&, detail::handler<>);
  /// Starts `start` for a token of signature `void(error_code)`; the initiation holds the
  /// client's state, so a deferred operation may start after a move.
  template <typename CompletionToken>
  auto initiate(CompletionToken&& token, start_fn start) {
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
        [](auto handler, std::shared_ptr<detail::client_impl> impl, executor_type ex, start_fn st) {
          st(impl, detail::with_error_code<>(std::move(handler), ex));
        },
        token, impl_, get_executor(), start);
  }
  static void start_connect(const std::shared_ptr<detail::client_impl>& impl, detail::handler<> h);
  static void start_close(const std::shared_ptr<detail::client_impl>& impl, detail::handler<> h);
  static void start_metrics(const std::shared_ptr<detail::client_impl>& impl,
                            detail::handler<client_metrics> h);

  friend struct detail::kind_access;  // a kind's own factory (its header) makes its states
  std::shared_ptr<detail::client_impl> impl_;
};

}  // namespace rlock
