#pragma once

#include "rlock/client.hpp"
#include "rlock/config.hpp"
#include "rlock/export.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

namespace rlock::blocking {

namespace detail {
struct client_state;
}

class reentrant_lock;

/// A synchronous client for code that does not run coroutines: it owns an io_context and a
/// background thread, and connects in its constructor (throws std::system_error on failure).
/// A thread blocked in a call runs the io_context itself until its operation completes (one
/// thread at a time; the others' operations are run by it), so a lone caller costs no thread
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
  explicit client(config cfg);
  client(const client&) = delete;
  client& operator=(const client&) = delete;
  ~client();

  /// A lock whose owner is the calling thread, as in Redisson: a thread that locks it again
  /// re-enters; another thread is another owner.
  reentrant_lock get_lock(std::string_view name);

  /// The asynchronous client underneath, for code that mixes both styles.
  rlock::client& async_client() noexcept;

 private:
  std::shared_ptr<detail::client_state> state_;
};

/// Meets the standard Lockable and TimedLockable requirements, so std::unique_lock,
/// std::scoped_lock and std::condition_variable_any work. Lock semantics are those of
/// rlock::reentrant_lock with the calling thread as the owner.
///
/// Unlike std::mutex, unlock() reports misuse: a thread that does not hold the lock gets
/// std::system_error carrying errc::not_owner (and a lease that ran out counts as not holding
/// it). A throw from a guard's destructor terminates, so under std guards use watchdog leases,
/// which do not run out while the process lives.
class RLOCK_EXPORT reentrant_lock {
 public:
  using milliseconds = std::chrono::milliseconds;

  void lock();
  void lock(milliseconds lease);
  bool try_lock();
  bool try_lock(milliseconds wait, milliseconds lease);

  template <typename Rep, typename Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& wait) {
    return try_lock_wait(std::chrono::ceil<milliseconds>(wait));
  }
  template <typename Clock, typename Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return try_lock_wait(std::chrono::ceil<milliseconds>(deadline - Clock::now()));
  }

  void unlock();
  bool force_unlock();
  bool is_locked();
  /// Whether the calling thread holds the lock.
  bool is_held();
  std::int64_t hold_count();
  milliseconds remaining_ttl();
  const std::string& name() const noexcept { return name_; }

  /// The asynchronous handle of the calling thread's owner.
  rlock::reentrant_lock for_this_thread() const;

 private:
  friend class client;
  reentrant_lock(std::shared_ptr<detail::client_state> state, std::string name);

  bool try_lock_wait(milliseconds wait);

  std::shared_ptr<detail::client_state> state_;
  std::string name_;
};

}  // namespace rlock::blocking
