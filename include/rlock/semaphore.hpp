#pragma once

#include "rlock/detail/completion.hpp"
#include "rlock/export.hpp"
#include "rlock/lock_handle.hpp"

#include <boost/asio/awaitable.hpp>

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
/// Forms: awaitable (a failure is thrown as boost::system::system_error, with Redis's words),
/// and async_* with any completion token and signature `void(error_code[, T])`, as
/// lock_handle's. Get one from client::get_semaphore(). A handle: copies name the same semaphore.
class RLOCK_EXPORT semaphore {
 public:
  /// Leases and waits, in whole milliseconds.
  using milliseconds = std::chrono::milliseconds;
  /// The client's executor type.
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

  /// acquire() with a completion token; completes with `void(error_code, std::optional<permit>)`,
  /// the permit present on success (a permit has no empty state to hand over with an error).
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_acquire(std::uint32_t permits, CompletionToken&& token = {}) {
    return async_acquire(permits, std::nullopt, std::forward<CompletionToken>(token));
  }
  /// The same with a lease (absent: the watchdog).
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_acquire(std::uint32_t permits, std::optional<milliseconds> lease,
                     CompletionToken&& token = {}) {
    return detail::initiate<std::optional<permit>>(
        std::forward<CompletionToken>(token), *this,
        [permits, lease](const semaphore& s, detail::handler<std::optional<permit>> h) {
          start_take(s, permits, std::nullopt, lease, std::move(h));
        });
  }
  /// try_acquire() with a completion token; completes with
  /// `void(error_code, std::optional<permit>)`: empty if none was taken in time.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_acquire(std::uint32_t permits, milliseconds wait, CompletionToken&& token = {}) {
    return async_try_acquire(permits, wait, std::nullopt, std::forward<CompletionToken>(token));
  }
  /// The same with a lease (absent: the watchdog).
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_acquire(std::uint32_t permits, milliseconds wait,
                         std::optional<milliseconds> lease, CompletionToken&& token = {}) {
    return detail::initiate<std::optional<permit>>(
        std::forward<CompletionToken>(token), *this,
        [permits, wait, lease](const semaphore& s, detail::handler<std::optional<permit>> h) {
          start_take(s, permits, wait, lease, std::move(h));
        });
  }
  /// release() with a completion token; completes with `void(error_code)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_release(std::uint32_t permits, CompletionToken&& token = {}) {
    return detail::initiate<>(std::forward<CompletionToken>(token), *this,
                              [permits](const semaphore& s, detail::handler<> h) {
                                start_release(s, permits, std::move(h));
                              });
  }
  /// available() with a completion token; completes with `void(error_code, std::int64_t)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_available(CompletionToken&& token = {}) {
    return detail::initiate<std::int64_t>(std::forward<CompletionToken>(token), *this,
                                          [](const semaphore& s, detail::handler<std::int64_t> h) {
                                            start_admin(s, "available", 0, std::move(h));
                                          });
  }
  /// try_set_permits() with a completion token; completes with `void(error_code, bool)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_set_permits(std::uint32_t permits, CompletionToken&& token = {}) {
    return detail::initiate<bool>(std::forward<CompletionToken>(token), *this,
                                  [permits](const semaphore& s, detail::handler<bool> h) {
                                    start_try_set(s, permits, std::move(h));
                                  });
  }
  /// add_permits() with a completion token; completes with `void(error_code, std::int64_t)`:
  /// the new count.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_add_permits(std::int64_t delta, CompletionToken&& token = {}) {
    return detail::initiate<std::int64_t>(
        std::forward<CompletionToken>(token), *this,
        [delta](const semaphore& s, detail::handler<std::int64_t> h) {
          start_admin(s, "add", delta, std::move(h));
        });
  }
  /// drain() with a completion token; completes with `void(error_code, std::int64_t)`: how
  /// many were drained.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_drain(CompletionToken&& token = {}) {
    return detail::initiate<std::int64_t>(std::forward<CompletionToken>(token), *this,
                                          [](const semaphore& s, detail::handler<std::int64_t> h) {
                                            start_admin(s, "drain", 0, std::move(h));
                                          });
  }

  /// The semaphore's name (without the key prefix).
  std::string_view name() const noexcept;
  /// Its Redis key: key prefix + name.
  std::string_view key() const noexcept;
  /// The client's executor, where the semaphore's operations run.
  executor_type get_executor() const noexcept;
  /// The words of the latest failed operation of this semaphore's handles (Redis's error text,
  /// the bound that ran out, bad input): the async_* forms complete with an error_code only;
  /// read this in the handler for the words. Empty if none failed. May be called from any
  /// thread.
  std::string last_error() const;

  /// The semaphore `name` on `c`: client::get<semaphore>(name).
  semaphore(client& c, std::string_view name);

 private:
  friend class client;
  friend class permit_expirable_semaphore;
  explicit semaphore(std::shared_ptr<detail::lock_state> any) noexcept : state_(std::move(any)) {}

  // The operations, each started once for every form; handlers run on their associated
  // executor, never inside these calls. A deferred operation holds a copy of the handle.
  /// The acquisitions: a fresh hold of `permits` through the engine (`wait` absent: until
  /// taken).
  static void start_take(const semaphore& s, std::uint32_t permits,
                         std::optional<milliseconds> wait, std::optional<milliseconds> lease,
                         detail::handler<std::optional<permit>> h);
  /// A semaphore_admin call that answers a count: available, add, drain.
  static void start_admin(const semaphore& s, std::string what, std::int64_t n,
                          detail::handler<std::int64_t> h);
  static void start_release(const semaphore& s, std::uint32_t permits, detail::handler<> h);
  static void start_try_set(const semaphore& s, std::uint32_t permits, detail::handler<bool> h);
  static void start_release_id(const semaphore& s, std::string id, detail::handler<bool> h);
  boost::asio::awaitable<std::int64_t> admin_form(const char* what, std::int64_t n);

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
  /// Leases and waits, in whole milliseconds.
  using milliseconds = std::chrono::milliseconds;

  /// Waits for a permit; its lease (absent: the watchdog).
  boost::asio::awaitable<permit> acquire(std::optional<milliseconds> lease = std::nullopt) {
    return semaphore_.acquire(1, lease);
  }
  /// Takes a permit if one becomes available within `wait` (0: one attempt), with its lease
  /// (absent: the watchdog); empty if none was taken in time.
  boost::asio::awaitable<std::optional<permit>> try_acquire(
      milliseconds wait = milliseconds::zero(), std::optional<milliseconds> lease = std::nullopt) {
    return semaphore_.try_acquire(1, wait, lease);
  }
  /// Redisson's tryRelease(permitId): gives back the permit with that id, whoever took it (an
  /// rlock hold or a Java permit); false if it is not held (released, or its lease ran out).
  /// The id is 32 hex digits, as permit::id() and Redisson show it; any other text is
  /// errc::invalid_argument.
  boost::asio::awaitable<bool> release(std::string_view permit_id);
  /// Permits available now (as semaphore::available()).
  boost::asio::awaitable<std::int64_t> available() { return semaphore_.available(); }
  /// Redisson's trySetPermits: sets the count if the semaphore has none yet.
  boost::asio::awaitable<bool> try_set_permits(std::uint32_t permits) {
    return semaphore_.try_set_permits(permits);
  }
  /// Redisson's addPermits (negative: removes); the new count.
  boost::asio::awaitable<std::int64_t> add_permits(std::int64_t delta) {
    return semaphore_.add_permits(delta);
  }
  /// The semaphore's name (without the key prefix).
  std::string_view name() const noexcept { return semaphore_.name(); }
  /// Its Redis key: key prefix + name.
  std::string_view key() const noexcept { return semaphore_.key(); }

  /// The semaphore `name` on `c`: client::get<permit_expirable_semaphore>(name).
  permit_expirable_semaphore(client& c, std::string_view name);

 private:
  friend class client;
  explicit permit_expirable_semaphore(semaphore s) noexcept : semaphore_(std::move(s)) {}
  semaphore semaphore_;
};

}  // namespace rlock
