#pragma once

#include "rlock/client.hpp"
#include "rlock/config.hpp"
#include "rlock/detail/completion.hpp"
#include "rlock/export.hpp"
#include "rlock/fenced_lock.hpp"
#include "rlock/lock_handle.hpp"
#include "rlock/reentrant_lock.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace rlock::blocking {

namespace detail {
struct client_state;

/// A callable viewed, not owned: the blocking calls are synchronous, so what they pass to the
/// compiled driver lives on their stack for the whole call.
template <typename Signature>
class function_ref;
template <typename R, typename... Args>
class function_ref<R(Args...)> {
 public:
  template <typename F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, function_ref>) function_ref(F& f)
  noexcept  // NOLINT(google-explicit-constructor): a view, like string_view
      : object_(&f), call_([](void* o, Args... args) -> R {
          return (*static_cast<F*>(o))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

/// The kind-independent part of every blocking lock, compiled once: runs the operation that
/// `start(done)` starts to its completion on the calling thread (see client), then `undo()` if
/// a handler of the caller's threw meanwhile and the operation succeeded (an acquisition is
/// given back); rethrows the operation's exception. `deferred_handler_errors`: such a handler's
/// exception waits for the next call instead (unlock(), which runs in guards' destructors).
RLOCK_EXPORT void wait(client_state& s, function_ref<void(rlock::detail::handler<>)> start,
                       function_ref<void()> undo, bool deferred_handler_errors);
/// The asynchronous client underneath.
RLOCK_EXPORT rlock::client& async_client_of(client_state& s) noexcept;
/// The calling thread's owner id: like Redisson's thread id, unique in the process even when
/// the OS reuses thread ids.
RLOCK_EXPORT std::uint64_t thread_owner() noexcept;

/// The handle of `name` of kind Lock owned by `owner`, from the asynchronous client: the kind's
/// own constructor (client::get).
template <owned_lock Lock>
Lock get_lock(rlock::client& c, std::string_view name, std::uint64_t owner) {
  return c.get<Lock>(name, owner);
}

/// Whether an acquisition's result (nothing, a bool, a token or an optional token) took it.
constexpr bool acquired() noexcept { return true; }
constexpr bool acquired(bool b) noexcept { return b; }
constexpr bool acquired(std::int64_t) noexcept { return true; }
constexpr bool acquired(const std::optional<std::int64_t>& t) noexcept { return t.has_value(); }
}  // namespace detail

template <owned_lock Lock>
class basic_lock;
class read_write_lock;
class semaphore;

/// A synchronous client for code that does not run coroutines: it owns an io_context and a
/// background thread, and connects in its constructor (throws boost::system::system_error on
/// failure). A thread blocked in a call runs the io_context itself until its operation completes
/// (one thread at a time; the others' operations are run by it), so a lone caller costs no thread
/// switch; the background thread runs it once no call has been in progress for 2 ms, for
/// watchdog renewals and anything posted to async_client(). Destruction closes the connection
/// and joins the thread. Calls made from a handler of this client throw errc::would_deadlock
/// instead of hanging.
///
/// A handler posted to async_client()'s executor that throws is run by whichever thread drives;
/// its exception reaches one blocking call, never while that call's own operation is still in
/// flight: the call completes first, an acquisition it made is given back, and then the
/// exception is thrown. unlock() never throws it (it runs in guards' destructors); the next
/// other call does.
class RLOCK_EXPORT client {
 public:
  /// Makes the asynchronous client and connects it before returning; throws
  /// boost::system::system_error if either fails (as rlock::client's constructor and connect()).
  explicit client(config cfg);
  client(const client&) = delete;
  client& operator=(const client&) = delete;
  /// Closes the connection and joins the background thread.
  ~client();

  /// A lock whose owner is the calling thread, as in Redisson: a thread that locks it again
  /// re-enters; another thread is another owner.
  basic_lock<rlock::reentrant_lock> get_lock(std::string_view name);
  /// A fenced lock (rlock::fenced_lock) owned by the calling thread; its token() reads the
  /// token of the thread's latest acquisition.
  basic_lock<rlock::fenced_lock> get_fenced_lock(std::string_view name);
  /// A lock of kind `Lock` (any rlock::owned_lock) owned by the calling thread.
  template <owned_lock Lock>
  basic_lock<Lock> get(std::string_view name);
  /// A read-write lock owned by the calling thread (std::shared_mutex's interface).
  read_write_lock get_read_write_lock(std::string_view name);
  /// A semaphore in std::counting_semaphore's shape.
  semaphore get_semaphore(std::string_view name);

  /// The asynchronous client underneath, for code that mixes both styles.
  rlock::client& async_client() noexcept;

  /// Runs `op` (an awaitable form of anything made from async_client(): a count_down_latch's
  /// count(), a lock's is_held(), ...) to its end on the calling thread and returns its result;
  /// its failure is thrown as it is (boost::system::system_error with Redis's words). How a
  /// kind whose header comes with its own blocking facade builds it without this class knowing
  /// the kind.
  template <typename T>
  T run(boost::asio::awaitable<T> op);
  /// run() for an acquisition of a kind's own blocking facade: `op` answers whether it took the
  /// lock; if it did and the caller gets a handler's exception instead (see above), the
  /// awaitable `give_back()` makes is run first, as every basic_lock acquisition is given back.
  bool run_acquisition(boost::asio::awaitable<bool> op,
                       std::function<boost::asio::awaitable<void>()> give_back);

 private:
  std::shared_ptr<detail::client_state> state_;
};

/// A lock of kind `Lock` (rlock::reentrant_lock, rlock::fenced_lock, ...) for threads: meets the
/// standard Lockable and TimedLockable requirements, so std::unique_lock, std::scoped_lock and
/// std::condition_variable_any work. Lock semantics are those of `Lock` with the calling thread
/// as the owner. One template for every kind: a kind gets its blocking facade from its handle's
/// asynchronous forms; here it only names its client factory (detail::get_lock).
///
/// Unlike std::mutex, unlock() reports misuse: a thread that does not hold the lock gets
/// boost::system::system_error carrying errc::not_owner (and a lease that ran out counts as not
/// holding it). A throw from a guard's destructor terminates, so under std guards use watchdog
/// leases, which do not run out while the process lives.
///
/// **The wait is the bound.** try_lock_for(d) and try_lock(wait, lease) return by their wait
/// whatever the server does (see reentrant_lock::try_lock).
template <owned_lock Lock>
class basic_lock {
 public:
  /// Leases and waits, in whole milliseconds.
  using milliseconds = std::chrono::milliseconds;
  /// The asynchronous handle kind underneath (`Lock`).
  using async_lock_type = Lock;

  /// Acquires (or re-enters) the lock for the calling thread, waiting as long as it takes, with
  /// the watchdog keeping the lease. A failure throws boost::system::system_error with the
  /// errors of `Lock`'s lock().
  void lock() { lock_with(std::nullopt); }
  /// lock() with a lease: the key expires after it unless unlocked; nothing renews it.
  void lock(milliseconds lease) { lock_with(lease); }
  /// One attempt, no waiting; whether the calling thread now holds the lock.
  bool try_lock() { return acquire(milliseconds::zero(), std::nullopt); }
  /// Acquires within `wait`, with a lease as lock(lease); whether it did.
  bool try_lock(milliseconds wait, milliseconds lease) { return acquire(wait, lease); }

  /// Acquires within `wait` (rounded up to whole milliseconds; none left: one attempt), with the
  /// watchdog keeping the lease; whether it did.
  template <typename Rep, typename Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& wait) {
    // A deadline already past means one attempt, as for std::timed_mutex.
    return acquire(std::max(std::chrono::ceil<milliseconds>(wait), milliseconds::zero()),
                   std::nullopt);
  }
  /// try_lock_for() the time from now to `deadline` (read on `Clock`).
  template <typename Clock, typename Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return try_lock_for(deadline - Clock::now());
  }

  /// Releases one hold of the calling thread; errc::not_owner if it holds none (see above).
  void unlock() { run<std::monostate>(start_unlock{}, true); }
  /// Deletes the lock whoever holds it and wakes its waiters; whether it was locked.
  bool force_unlock() {
    return run<bool>([](Lock& l, auto done) { l.async_force_unlock(std::move(done)); });
  }
  /// Whether anybody holds the lock.
  bool is_locked() {
    return run<bool>([](Lock& l, auto done) { l.async_is_locked(std::move(done)); });
  }
  /// Whether the calling thread holds the lock.
  bool is_held() {
    return run<bool>([](Lock& l, auto done) { l.async_is_held(std::move(done)); });
  }
  /// The calling thread's hold count, 0 if it does not hold the lock.
  std::int64_t hold_count() {
    return run<std::int64_t>([](Lock& l, auto done) { l.async_hold_count(std::move(done)); });
  }
  /// The key's remaining time to live: -2 ms if not locked, -1 ms if it has no expiry.
  milliseconds remaining_ttl() {
    return run<milliseconds>([](Lock& l, auto done) { l.async_remaining_ttl(std::move(done)); });
  }
  /// The token of the calling thread's latest acquisition (kinds with tokens).
  std::int64_t token() const requires requires(const Lock& l) { l.token(); }
  { return for_this_thread().token(); }
  /// The lock's name (without the key prefix).
  const std::string& name() const noexcept { return name_; }

  /// The asynchronous handle of the calling thread's owner.
  Lock for_this_thread() const {
    return detail::get_lock<Lock>(detail::async_client_of(*state_), name_, detail::thread_owner());
  }

 private:
  friend class client;
  basic_lock(std::shared_ptr<detail::client_state> state, std::string name)
      : state_(std::move(state)), name_(std::move(name)) {}

  void lock_with(std::optional<milliseconds> lease) {
    run<std::monostate, true>(
        [lease](Lock& l, auto done) { l.async_lock(lease, std::move(done)); });
  }
  bool acquire(milliseconds wait, std::optional<milliseconds> lease) {
    return run<bool, true>(
        [wait, lease](Lock& l, auto done) { l.async_try_lock(wait, lease, std::move(done)); });
  }
  /// @cond
  // (Private nested types are left out of the reference: Doxygen would link to a section of
  // them it does not write.)
  /// One type for every release, so that an acquisition's give-back instantiates one run().
  struct start_unlock {
    template <typename Done>
    void operator()(Lock& l, Done done) const {
      l.async_unlock(std::move(done));
    }
  };
  /// @endcond

  /// Runs `start(handle, completion)` (an async_* form) to its completion on this thread; the
  /// completion's result, if any, is reduced to T (an acquisition's to whether it took the
  /// lock). `Acquisition`: a success is given back if the caller gets a handler's exception
  /// instead.
  template <typename T, bool Acquisition = false, typename Start>
  T run(Start start, bool deferred_handler_errors = false) {
    Lock l = for_this_thread();
    std::optional<T> value;
    bool took = false;  // an acquisition took the lock
    auto begin = [&](rlock::detail::handler<> done) {
      start(l, [&l, &value, &took, done = std::move(done)](boost::system::error_code ec,
                                                           auto... result) mutable {
        (void)took;  // written by an acquisition only
        rlock::detail::failure e;
        if (ec) {
          e = rlock::detail::failure(ec, l.last_error());
        } else if constexpr (Acquisition) {
          took = detail::acquired(result...);
          if constexpr (std::is_same_v<T, bool>) {
            value.emplace(took);
          } else {
            value.emplace();
          }
        } else if constexpr (std::is_same_v<T, std::monostate>) {
          value.emplace();
        } else {
          value.emplace(std::move(result)...);
        }
        std::move(done)(std::move(e));
      });
    };
    auto undo = [&] {
      if constexpr (Acquisition) {
        if (!took) return;
        try {
          run<std::monostate>(start_unlock{}, true);
        } catch (...) {
          // The caller is about to get the handler's exception; the lease bounds a failed
          // release.
        }
      }
    };
    detail::wait(*state_, begin, undo, deferred_handler_errors);
    return std::move(*value);
  }

  std::shared_ptr<detail::client_state> state_;
  std::string name_;
};

/// Lockable and TimedLockable over rlock::reentrant_lock.
using reentrant_lock = basic_lock<rlock::reentrant_lock>;
/// Lockable and TimedLockable over rlock::fenced_lock; token() after an acquisition.
using fenced_lock = basic_lock<rlock::fenced_lock>;
/// Lockable and TimedLockable over rlock::non_reentrant_lock: a second lock() by the same
/// thread throws errc::reentry_refused instead of deadlocking.
using non_reentrant_lock = basic_lock<rlock::non_reentrant_lock>;
/// Lockable and TimedLockable over rlock::fair_lock: threads of every process get it in order.
using fair_lock = basic_lock<rlock::fair_lock>;
/// Lockable and TimedLockable over rlock::non_reentrant_fair_lock: in order, as fair_lock, and a
/// second lock() by the same thread throws errc::reentry_refused.
using non_reentrant_fair_lock = basic_lock<rlock::non_reentrant_fair_lock>;
/// Lockable and TimedLockable over rlock::spin_lock (no pub/sub: waiting threads poll).
using spin_lock = basic_lock<rlock::spin_lock>;

/// A read-write lock (rlock::read_write_lock) for threads, owned by the calling thread: meets
/// Lockable and TimedLockable through its write half and SharedLockable and
/// SharedTimedLockable through its read half, so std::unique_lock and std::shared_lock work
/// (std::shared_mutex's interface). A thread that writes may also read (a downgrade); a thread
/// that reads and asks to write gets errc::upgrade_refused instead of a deadlock. Whom it lets
/// in first is its client's config::read_write_lock_policy::priority (writers by default).
class read_write_lock {
 public:
  /// Takes the write half, as basic_lock::lock().
  void lock() { write_.lock(); }
  /// One attempt at the write half.
  bool try_lock() { return write_.try_lock(); }
  /// The write half within `wait`, as basic_lock::try_lock_for().
  template <typename Rep, typename Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& wait) {
    return write_.try_lock_for(wait);
  }
  /// The write half by `deadline`, as basic_lock::try_lock_until().
  template <typename Clock, typename Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return write_.try_lock_until(deadline);
  }
  /// Releases a hold of the write half.
  void unlock() { write_.unlock(); }

  /// Takes the read half, shared with other readers.
  void lock_shared() { read_.lock(); }
  /// One attempt at the read half.
  bool try_lock_shared() { return read_.try_lock(); }
  /// The read half within `wait`.
  template <typename Rep, typename Period>
  bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& wait) {
    return read_.try_lock_for(wait);
  }
  /// The read half by `deadline`.
  template <typename Clock, typename Duration>
  bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return read_.try_lock_until(deadline);
  }
  /// Releases a hold of the read half.
  void unlock_shared() { read_.unlock(); }

  /// The halves, for leases, is_held(), hold_count() and the asynchronous handles.
  basic_lock<rlock::read_lock>& read() noexcept { return read_; }
  /// The write half (see read()).
  basic_lock<rlock::write_lock>& write() noexcept { return write_; }
  /// The lock's name (without the key prefix).
  const std::string& name() const noexcept { return read_.name(); }

 private:
  friend class client;
  read_write_lock(basic_lock<rlock::read_lock> r, basic_lock<rlock::write_lock> w)
      : read_(std::move(r)), write_(std::move(w)) {}

  basic_lock<rlock::read_lock> read_;
  basic_lock<rlock::write_lock> write_;
};

template <owned_lock Lock>
basic_lock<Lock> client::get(std::string_view name) {
  // Validate now, in the caller's thread: a bad name is a programming error to report early.
  (void)detail::get_lock<Lock>(async_client(), name, detail::thread_owner());
  return basic_lock<Lock>(state_, std::string(name));
}

/// All-or-nothing over blocking locks of any kinds, owned by the calling thread (the blocking
/// form of rlock::multi_lock): Lockable and TimedLockable, so std::unique_lock and std::scoped_lock
/// work. The members are taken in the order of their keys, whatever order they are given in (two
/// multi-locks over the same locks never deadlock each other), and released in reverse; a member
/// that cannot be taken releases those taken first. The members are referenced, not copied: they
/// must outlive it.
class multi_lock {
 public:
  /// Over `locks`: blocking locks (basic_lock of any kind, a read_write_lock's read() or write()
  /// half included). Throws boost::system::system_error carrying errc::invalid_argument if none
  /// is given or one key is given twice.
  template <typename... Locks>
  explicit multi_lock(Locks&... locks) {
    (add(locks), ...);
    std::stable_sort(members_.begin(), members_.end(),
                     [](const member& a, const member& b) { return a.key < b.key; });
    for (std::size_t i = 1; i < members_.size(); ++i) {
      if (members_[i].key == members_[i - 1].key) {
        rlock::throw_error(errc::invalid_argument,
                           "multi_lock: lock '" + members_[i].key + "' is given twice");
      }
    }
    if (members_.empty()) rlock::throw_error(errc::invalid_argument, "multi_lock: no member");
  }

  /// Takes every member in turn, waiting on each as long as it takes; a member's failure
  /// releases those taken and is rethrown.
  void lock() {
    std::size_t taken = 0;
    try {
      for (auto& m : members_) {
        m.lock();
        ++taken;
      }
    } catch (...) {
      release(taken);
      throw;
    }
  }
  /// One attempt at each member; whether it took them all (if not, it holds none).
  bool try_lock() { return try_lock_for(std::chrono::milliseconds::zero()); }
  /// All members within `wait`, one wait shared by all; whether it took them (if not, it holds
  /// none).
  template <typename Rep, typename Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& wait) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::ceil<std::chrono::milliseconds>(wait);
    std::size_t taken = 0;
    try {
      for (auto& m : members_) {
        const auto left = std::max(std::chrono::milliseconds::zero(),
                                   std::chrono::duration_cast<std::chrono::milliseconds>(
                                       deadline - std::chrono::steady_clock::now()));
        if (!m.try_lock_for(left)) {
          release(taken);
          return false;
        }
        ++taken;
      }
    } catch (...) {
      release(taken);
      throw;
    }
    return true;
  }
  /// try_lock_for() the time from now to `deadline` (read on `Clock`).
  template <typename Clock, typename Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return try_lock_for(deadline - Clock::now());
  }
  /// Releases every member in reverse order; all are released, the first failure is thrown.
  void unlock() {
    std::exception_ptr first;
    for (std::size_t i = members_.size(); i-- > 0;) {
      try {
        members_[i].unlock();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
  }

 private:
  /// @cond
  struct member {
    std::string key;
    std::function<void()> lock;
    std::function<bool(std::chrono::milliseconds)> try_lock_for;
    std::function<void()> unlock;
  };
  /// @endcond
  template <typename Lock>
  void add(Lock& l) {
    members_.push_back({std::string(l.for_this_thread().key()), [&l] { l.lock(); },
                        [&l](std::chrono::milliseconds w) { return l.try_lock_for(w); },
                        [&l] { l.unlock(); }});
  }
  void release(std::size_t taken) noexcept {
    for (std::size_t i = taken; i-- > 0;) {
      try {
        members_[i].unlock();
      } catch (...) {
        // The caller gets the failure that stopped the acquisition; the lease bounds this one.
      }
    }
  }

  std::vector<member> members_;
};

/// A semaphore (rlock::semaphore, Redisson's RSemaphore) for threads, in the shape of
/// std::counting_semaphore: acquire(), try_acquire(), try_acquire_for(), try_acquire_until() and
/// release(). Each acquisition is a hold (of `n` permits, kept by the watchdog) that this object
/// keeps; release() gives back the oldest one it holds, from any thread (std's release may come
/// from another thread too), and throws not_owner if it holds none. For Redisson's ownerless
/// release(n), use async_semaphore().release(n).
class semaphore {
 public:
  /// Waits until `n` permits are available and takes them: one hold, kept by the watchdog and
  /// by this object.
  void acquire(std::uint32_t n = 1) {
    keep(run<std::optional<rlock::permit>>(
        [n](rlock::semaphore& s, auto done) { s.async_acquire(n, std::move(done)); }, true));
  }
  /// One attempt at `n` permits; whether it took them.
  bool try_acquire(std::uint32_t n = 1) { return try_acquire_for(std::chrono::milliseconds(0), n); }
  /// Takes `n` permits if they become available within `wait` (rounded up to whole
  /// milliseconds); whether it did.
  template <typename Rep, typename Period>
  bool try_acquire_for(const std::chrono::duration<Rep, Period>& wait, std::uint32_t n = 1) {
    const auto ms =
        std::max(std::chrono::ceil<std::chrono::milliseconds>(wait), std::chrono::milliseconds(0));
    auto p = run<std::optional<rlock::permit>>(
        [n, ms](rlock::semaphore& s, auto done) { s.async_try_acquire(n, ms, std::move(done)); },
        true);
    const bool got = p.has_value();
    keep(std::move(p));
    return got;
  }
  /// try_acquire_for() the time from now to `deadline` (read on `Clock`).
  template <typename Clock, typename Duration>
  bool try_acquire_until(const std::chrono::time_point<Clock, Duration>& deadline,
                         std::uint32_t n = 1) {
    return try_acquire_for(deadline - Clock::now(), n);
  }
  /// Gives back the oldest hold this object took.
  void release() {
    std::optional<rlock::permit> p;
    {
      std::lock_guard g(mutex_);
      if (!held_.empty()) {
        p.emplace(std::move(held_.front()));
        held_.erase(held_.begin());
      }
    }
    if (!p) rlock::throw_error(errc::not_owner, "semaphore: this object holds no permit");
    auto begin = [&p](rlock::detail::handler<> done) {
      p->async_unlock([&p, done = std::move(done)](boost::system::error_code ec) mutable {
        std::move(done)(ec ? rlock::detail::failure(ec, p->last_error())
                           : rlock::detail::failure());
      });
    };
    auto nothing = [] {};
    detail::wait(*state_, begin, nothing, false);
  }
  /// Permits available now.
  std::int64_t available() {
    return run<std::int64_t>(
        [](rlock::semaphore& s, auto done) { s.async_available(std::move(done)); }, false);
  }
  /// Redisson's trySetPermits: sets the count to `n` if the semaphore has none yet; whether it
  /// did.
  bool try_set_permits(std::uint32_t n) {
    return run<bool>(
        [n](rlock::semaphore& s, auto done) { s.async_try_set_permits(n, std::move(done)); },
        false);
  }
  /// The asynchronous semaphore underneath (for release(n), add_permits(), drain(), ...).
  rlock::semaphore& async_semaphore() noexcept { return sem_; }

 private:
  friend class client;
  semaphore(std::shared_ptr<detail::client_state> state, rlock::semaphore sem)
      : state_(std::move(state)), sem_(std::move(sem)) {}

  void keep(std::optional<rlock::permit> p) {
    if (!p) return;
    std::lock_guard g(mutex_);
    held_.push_back(std::move(*p));
  }
  /// Runs the operation `start(semaphore, completion)` starts (an async_* form) to its end on
  /// this thread; an acquisition the caller will not get (a handler's exception won) is given
  /// back.
  template <typename T, typename Start>
  T run(Start start, bool acquisition) {
    std::optional<T> value;
    auto begin = [&](rlock::detail::handler<> done) {
      start(sem_,
            [this, &value, done = std::move(done)](boost::system::error_code ec, T v) mutable {
              if (!ec) value.emplace(std::move(v));
              std::move(done)(ec ? rlock::detail::failure(ec, sem_.last_error())
                                 : rlock::detail::failure());
            });
    };
    auto undo = [&] {
      if constexpr (std::is_same_v<T, std::optional<rlock::permit>>) {
        if (acquisition && value && *value) (*value)->async_unlock(boost::asio::detached);
      }
    };
    detail::wait(*state_, begin, undo, false);
    return std::move(*value);
  }

  std::shared_ptr<detail::client_state> state_;
  rlock::semaphore sem_;
  std::mutex mutex_;
  std::vector<rlock::permit> held_;  // oldest first
};

template <typename T>
T client::run(boost::asio::awaitable<T> op) {
  using result = std::conditional_t<std::is_void_v<T>, bool, T>;
  std::optional<result> value;
  std::exception_ptr error;
  auto begin = [&](rlock::detail::handler<> done) {
    auto finish = [&error, done = std::move(done)](std::exception_ptr e) mutable {
      error = std::move(e);
      std::move(done)(rlock::detail::failure());
    };
    if constexpr (std::is_void_v<T>) {
      boost::asio::co_spawn(async_client().get_executor(), std::move(op),
                            [&value, finish = std::move(finish)](std::exception_ptr e) mutable {
                              if (!e) value.emplace(true);
                              finish(std::move(e));
                            });
    } else {
      boost::asio::co_spawn(
          async_client().get_executor(), std::move(op),
          [&value, finish = std::move(finish)](std::exception_ptr e, T v) mutable {
            if (!e) value.emplace(std::move(v));
            finish(std::move(e));
          });
    }
  };
  auto nothing = [] {};
  detail::wait(*state_, begin, nothing, false);
  if (error) std::rethrow_exception(error);
  if constexpr (!std::is_void_v<T>) return std::move(*value);
}

inline bool client::run_acquisition(boost::asio::awaitable<bool> op,
                                    std::function<boost::asio::awaitable<void>()> give_back) {
  std::optional<bool> took;
  std::exception_ptr error;
  auto begin = [&](rlock::detail::handler<> done) {
    boost::asio::co_spawn(
        async_client().get_executor(), std::move(op),
        [&took, &error, done = std::move(done)](std::exception_ptr e, bool v) mutable {
          if (!e) took.emplace(v);
          error = std::move(e);
          std::move(done)(rlock::detail::failure());
        });
  };
  auto undo = [&] {
    if (!took.value_or(false)) return;
    auto release = [&](rlock::detail::handler<> done) {
      boost::asio::co_spawn(async_client().get_executor(), give_back(),
                            [done = std::move(done)](std::exception_ptr) mutable {
                              std::move(done)(rlock::detail::failure());
                            });
    };
    auto nothing = [] {};
    try {
      // The handler's exception waits for the caller, which is about to get it.
      detail::wait(*state_, release, nothing, true);
    } catch (...) {
      // The lease bounds a failed release.
    }
  };
  detail::wait(*state_, begin, undo, false);
  if (error) std::rethrow_exception(error);
  return *took;
}

inline semaphore client::get_semaphore(std::string_view name) {
  return semaphore(state_, async_client().get_semaphore(name));
}

inline read_write_lock client::get_read_write_lock(std::string_view name) {
  return read_write_lock(get<rlock::read_lock>(name), get<rlock::write_lock>(name));
}

}  // namespace rlock::blocking
