#pragma once

#include "rlock/detail/completion.hpp"
#include "rlock/error.hpp"
#include "rlock/lock_handle.hpp"

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <system_error>
#include <utility>

namespace rlock {

class reentrant_lock;
template <typename Lock>
class basic_owned_lock;

/// One hold of a lock of kind `Lock` (reentrant_lock, fenced_lock, ...), owned by a scope: what
/// `co_await lock.scoped()` returns. Move-only. One template for every kind: a kind gets its
/// scoped forms by naming this, not by a copy.
///
/// Release it with `co_await h.unlock()`, which reports the outcome like lock_handle::unlock().
/// A hold destroyed while it still owns the lock (the coroutine left by an exception, or was
/// cancelled and its frame destroyed) posts the unlock to the client's executor instead, so the
/// lock is released at once rather than held until its lease runs out (or forever, with the
/// watchdog). Nobody awaits that unlock: a failure is kept in the lock's last_error(), and a
/// lock whose release failed expires with its lease.
template <typename Lock>
class basic_hold {
 public:
  /// The kind of lock it holds.
  using lock_type = Lock;

  /// Owns nothing.
  basic_hold() noexcept = default;
  /// Takes `other`'s hold, leaving `other` empty.
  basic_hold(basic_hold&& other) noexcept : lock_(std::exchange(other.lock_, std::nullopt)) {}
  /// Releases (posts the unlock of) what this hold owned, then takes `other`'s.
  basic_hold& operator=(basic_hold&& other) noexcept {
    if (this != &other) {
      release_in_background();
      lock_ = std::exchange(other.lock_, std::nullopt);
    }
    return *this;
  }
  basic_hold(const basic_hold&) = delete;
  basic_hold& operator=(const basic_hold&) = delete;
  /// Posts the unlock of what it still owns (see above).
  ~basic_hold() { release_in_background(); }

  /// Whether this hold still owns a hold of its lock (it was acquired and not yet released or
  /// given up).
  bool owns_lock() const noexcept { return lock_.has_value(); }
  /// Whether it owns a hold: owns_lock().
  explicit operator bool() const noexcept { return owns_lock(); }
  /// The lock handle, while owning (a fenced lock's token() is read through it).
  const Lock* lock() const noexcept { return lock_ ? &*lock_ : nullptr; }

  /// Releases the hold; await it at once (it refers to this hold until it starts). The hold
  /// hands the lock to the release when the release starts, so an operation that never starts
  /// (a cancelled coroutine's co_await throws before starting it; a deferred operation never
  /// launched) leaves the hold owning, and its destructor releases. Once started, the release
  /// runs to its answer even if the caller is cancelled. Throws like lock_handle::unlock();
  /// errc::not_owner if this hold owns nothing.
  boost::asio::awaitable<void> unlock() {
    return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&,
                                       void(std::exception_ptr)>(
        [this](auto handler) {
          start_unlock(detail::handler<>(detail::throwing(std::move(handler))));
        },
        boost::asio::use_awaitable);
  }
  /// The same with any completion token; signature `void(error_code)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_unlock(CompletionToken&& token = {}) {
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
        [this](auto handler) {
          // An empty hold has no client: its not_owner completes on the system executor.
          auto ex = lock_ ? lock_->get_executor()
                          : lock_handle::executor_type(boost::asio::system_executor());
          start_unlock(detail::with_error_code<>(std::move(handler), ex));
        },
        token);
  }

  /// Stops owning without unlocking (the caller takes over the release); returns the handle.
  /// Throws errc::not_owner if this hold owns nothing.
  Lock release() { return take(); }

 private:
  friend Lock;
  friend class basic_owned_lock<Lock>;  // the shared acquisitions of the exclusive kinds
  explicit basic_hold(Lock l) noexcept : lock_(std::move(l)) {}

  /// What an acquisition's result says: lock() completes with nothing or a token (acquired),
  /// try_lock() with a bool or an optional token.
  static constexpr bool acquired() noexcept { return true; }
  static constexpr bool acquired(bool b) noexcept { return b; }
  static constexpr bool acquired(std::int64_t) noexcept { return true; }
  static constexpr bool acquired(const std::optional<std::int64_t>& t) noexcept {
    return t.has_value();
  }

  /// The kind's lock (wait absent) or try_lock, completing `h` with a hold of what was acquired.
  /// The acquisition's own completion, with the caller's cancellation slot and executor, makes
  /// the hold: between the grant and the caller there is no moment when nobody owns it.
  static void start_scoped(Lock l, std::optional<std::chrono::milliseconds> wait,
                           std::optional<std::chrono::milliseconds> lease,
                           detail::handler<basic_hold> h) {
    namespace asio = boost::asio;
    auto slot = asio::get_associated_cancellation_slot(h);
    auto ex = asio::get_associated_executor(h, l.get_executor());
    auto made = asio::bind_cancellation_slot(
        slot,
        asio::bind_executor(ex, [l, h = std::move(h)](detail::failure e, auto... result) mutable {
          const bool ok = !e && (acquired(result) && ...);
          std::move(h)(std::move(e), ok ? basic_hold(std::move(l)) : basic_hold());
        }));
    if (!wait) {
      Lock::start_lock(l, lease, std::move(made));
    } else {
      Lock::start_try_lock(l, *wait, lease, std::move(made));
    }
  }

  /// The handle, leaving this hold empty; errc::not_owner if it was.
  Lock take() {
    if (!lock_) throw_error(errc::not_owner, "this hold owns no lock (released or never acquired)");
    Lock l = std::move(*lock_);
    lock_.reset();
    return l;
  }

  /// Starts the release of what this hold owns (handing it over), or completes `h` with
  /// errc::not_owner.
  void start_unlock(detail::handler<> h) {
    if (!lock_) {
      // Never inside the initiating call: through the system executor to the handler's own.
      auto ex = boost::asio::get_associated_executor(h, boost::asio::system_executor());
      boost::asio::post(boost::asio::system_executor(), [ex, h = std::move(h)]() mutable {
        boost::asio::dispatch(ex, [h = std::move(h)]() mutable {
          std::move(h)(detail::failure(errc::not_owner,
                                       "this hold owns no lock (released or never acquired)"));
        });
      });
      return;
    }
    // Handed over as the release starts: from here on the release runs to its answer, and a
    // destructor running meanwhile does not post a second one.
    Lock l = take();
    l.start_unlock(std::move(h));
  }

  /// Posts the unlock of what this hold owns, if anything.
  void release_in_background() noexcept {
    if (!lock_) return;
    Lock l = std::move(*lock_);
    lock_.reset();
    try {
      // Posted, not started here: a destructor may run inside the client's own bookkeeping (a
      // coroutine frame destroyed by a cancellation) or on another thread.
      boost::asio::post(l.get_executor(), [l] {
        l.start_unlock(detail::handler<>([](const detail::failure&) {
          // Kept in l.last_error() by the operation; the lease bounds a failed release.
        }));
      });
    } catch (...) {
      // Out of memory: the lease bounds the hold.
    }
  }

  std::optional<Lock> lock_;
};

/// A hold of a reentrant_lock.
using hold = basic_hold<reentrant_lock>;

}  // namespace rlock
