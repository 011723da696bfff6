#pragma once

#include "rlock/detail/completion.hpp"
#include "rlock/export.hpp"
#include "rlock/lock_handle.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rlock {

/// A hold of a semaphore's permits: what semaphore::acquire and
/// permit_expirable_semaphore::acquire complete with. A lock_handle: unlock() gives the permits
/// back (once: latched like an unlock, so a retry never gives them twice; not_owner if they
/// already came back), lost() completes if its lease ran out on the server (the watchdog keeps
/// it while the process lives, as for a lock), id() is its permit id. Copies name the same hold.
class RLOCK_EXPORT permit : public lock_handle {
 public:
  /// Redisson's permit id (RPermitExpirableSemaphore), as Redisson shows one: 32 lowercase hex
  /// digits. On the wire (owner_field(), the hold's member in `{<key>}:timeout`) it is the 16
  /// bytes they spell, as Redisson stores it: a Java service's tryRelease(id) of this text gives
  /// this hold back, and permit_expirable_semaphore::release takes a Java permit's id as Java
  /// shows it.
  std::string id() const;
  /// How many permits it holds.
  std::uint32_t count() const noexcept;

 private:
  friend class semaphore;
  explicit permit(std::shared_ptr<detail::lock_state> state) noexcept
      : lock_handle(std::move(state)) {}
};

/// A Redisson-compatible semaphore (Redisson's RSemaphore): the counter `<key>` of available
/// permits, and the channel `redisson_sc:{<key>}` on which every release publishes the new count,
/// waking as many waiters as there are permits. Java and C++ processes share it.
///
/// **Holds, not just a counter.** rlock's acquisitions are holds: each is kept in
/// `{<key>}:timeout` (RPermitExpirableSemaphore's layout, with its size in
/// `rlock_semaphore_permits:{<key>}` when it is more than one) under a lease the watchdog renews,
/// so the permits of a holder that died come back at its lease's end instead of never (Redisson's
/// RSemaphore loses them). A lost acquire answer is reconciled (the hold is there or not), and a
/// release is latched. release(n) without a hold is Redisson's release: it adds permits.
///
/// **Bad input** is errc::invalid_argument: a count of 0 (or above 2^31 - 1), and an acquisition
/// of more permits than the total (try_set_permits' value, which rlock keeps in
/// `rlock_semaphore_total:{<key>}` and add_permits moves; a semaphore Redisson set up has no
/// known total, and such an acquisition then waits, as in Redisson), with Redis's words.
///
/// Forms: awaitable, and async_* with any completion token and signature
/// `void(std::exception_ptr[, T])` (the coroutine's, through co_spawn). Get one from
/// client::get_semaphore(). A handle: copies name the same semaphore.
class RLOCK_EXPORT semaphore {
 public:
  using milliseconds = std::chrono::milliseconds;
  using executor_type = lock_handle::executor_type;

  /// Waits until `permits` are available and takes them, with a lease (absent: the watchdog).
  /// Cancellation as lock_handle's acquisitions: nothing is left taken.
  boost::asio::awaitable<permit> acquire(std::uint32_t permits = 1,
                                         std::optional<milliseconds> lease = std::nullopt);
  /// Takes `permits` if they become available within `wait` (0: one attempt). The wait is the
  /// bound, as for try_lock.
  boost::asio::awaitable<std::optional<permit>> try_acquire(
      std::uint32_t permits = 1, milliseconds wait = milliseconds::zero(),
      std::optional<milliseconds> lease = std::nullopt);
  /// Redisson's release(n): adds `permits` to the counter (nobody's hold) and publishes the new
  /// count. Retried after a lost answer without adding twice (latched).
  boost::asio::awaitable<void> release(std::uint32_t permits);
  /// Permits available now (holds whose lease ended are given back first).
  boost::asio::awaitable<std::int64_t> available();
  /// Redisson's trySetPermits: sets the count (and rlock's total) if the semaphore has none yet.
  boost::asio::awaitable<bool> try_set_permits(std::uint32_t permits);
  /// Redisson's addPermits (negative: removes); the new count.
  boost::asio::awaitable<std::int64_t> add_permits(std::int64_t delta);
  /// Redisson's drainPermits: takes every available permit (as nobody's hold); how many.
  boost::asio::awaitable<std::int64_t> drain();

  /// Completes with `void(std::exception_ptr, std::optional<permit>)`, the permit present on
  /// success (a permit has no empty state to hand over with an error).
  template <typename CompletionToken = default_completion_token>
  auto async_acquire(std::uint32_t permits, CompletionToken&& token = {}) {
    return boost::asio::co_spawn(get_executor(), take(state_, permits, std::nullopt, std::nullopt),
                                 std::forward<CompletionToken>(token));
  }
  template <typename CompletionToken = default_completion_token>
  auto async_try_acquire(std::uint32_t permits, milliseconds wait, CompletionToken&& token = {}) {
    return boost::asio::co_spawn(get_executor(), try_acquire(permits, wait),
                                 std::forward<CompletionToken>(token));
  }
  template <typename CompletionToken = default_completion_token>
  auto async_release(std::uint32_t permits, CompletionToken&& token = {}) {
    return boost::asio::co_spawn(get_executor(), release(permits),
                                 std::forward<CompletionToken>(token));
  }
  template <typename CompletionToken = default_completion_token>
  auto async_available(CompletionToken&& token = {}) {
    return boost::asio::co_spawn(get_executor(), available(), std::forward<CompletionToken>(token));
  }

  /// The semaphore's name (without the key prefix), and its key.
  std::string_view name() const noexcept;
  std::string_view key() const noexcept;
  executor_type get_executor() const noexcept;

 private:
  friend class client;
  friend class permit_expirable_semaphore;
  explicit semaphore(std::shared_ptr<detail::lock_state> any) noexcept : state_(std::move(any)) {}

  // Static, holding the state: a deferred operation may run after the handle is gone.
  /// A semaphore_admin call: what, count; latched (a request id) for `release`.
  static boost::asio::awaitable<std::int64_t> admin(std::shared_ptr<detail::lock_state> s,
                                                    std::string what, std::int64_t n);
  /// The acquisitions share this: a fresh hold of `permits`, through the engine.
  static boost::asio::awaitable<std::optional<permit>> take(std::shared_ptr<detail::lock_state> s,
                                                            std::uint32_t permits,
                                                            std::optional<milliseconds> wait,
                                                            std::optional<milliseconds> lease);
  static boost::asio::awaitable<bool> release_id(std::shared_ptr<detail::lock_state> s,
                                                 std::string id);

  std::shared_ptr<detail::lock_state> state_;  // names the semaphore; holds nothing
};

/// A Redisson-compatible permit-expirable semaphore (Redisson's RPermitExpirableSemaphore): the
/// counter `<key>`, each permit taken kept in `{<key>}:timeout` under its id until its lease
/// ends, when it comes back by itself. One permit per acquisition; release by id from any
/// process (Redisson's tryRelease). The watchdog keeps a permit taken without a lease. The same
/// layout as rlock's semaphore, whose holds are this one's permits. Get one from
/// client::get_permit_expirable_semaphore().
class RLOCK_EXPORT permit_expirable_semaphore {
 public:
  using milliseconds = std::chrono::milliseconds;

  /// Waits for a permit; its lease (absent: the watchdog).
  boost::asio::awaitable<permit> acquire(std::optional<milliseconds> lease = std::nullopt) {
    return semaphore_.acquire(1, lease);
  }
  boost::asio::awaitable<std::optional<permit>> try_acquire(
      milliseconds wait = milliseconds::zero(), std::optional<milliseconds> lease = std::nullopt) {
    return semaphore_.try_acquire(1, wait, lease);
  }
  /// Redisson's tryRelease(permitId): gives back the permit with that id, whoever took it (an
  /// rlock hold or a Java permit); false if it is not held (released, or its lease ran out).
  /// The id is 32 hex digits, as permit::id() and Redisson show it; any other text is
  /// errc::invalid_argument.
  boost::asio::awaitable<bool> release(std::string_view permit_id);
  boost::asio::awaitable<std::int64_t> available() { return semaphore_.available(); }
  boost::asio::awaitable<bool> try_set_permits(std::uint32_t permits) {
    return semaphore_.try_set_permits(permits);
  }
  boost::asio::awaitable<std::int64_t> add_permits(std::int64_t delta) {
    return semaphore_.add_permits(delta);
  }
  std::string_view name() const noexcept { return semaphore_.name(); }
  std::string_view key() const noexcept { return semaphore_.key(); }

 private:
  friend class client;
  explicit permit_expirable_semaphore(semaphore s) noexcept : semaphore_(std::move(s)) {}
  semaphore semaphore_;
};

}  // namespace rlock
