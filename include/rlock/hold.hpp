#pragma once

#include "rlock/export.hpp"
#include "rlock/reentrant_lock.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/system/error_code.hpp>

#include <optional>
#include <utility>

namespace rlock {

/// One hold of a lock, owned by a scope: what `co_await lock.scoped()` returns. Move-only.
///
/// Release it with `co_await h.unlock()`, which reports the outcome like
/// reentrant_lock::unlock(). A hold destroyed while it still owns the lock (the coroutine left by
/// an exception, or was cancelled and its frame destroyed) posts the unlock to the client's
/// executor instead, so the lock is released at once rather than held until its lease runs out
/// (or forever, with the watchdog). Nobody awaits that unlock: a failure is kept in the lock's
/// last_error(), and a lock whose release failed expires with its lease.
class RLOCK_EXPORT hold {
 public:
  /// Owns nothing.
  hold() noexcept = default;
  hold(hold&& other) noexcept : lock_(std::exchange(other.lock_, std::nullopt)) {}
  /// Releases (posts the unlock of) what this hold owned, then takes `other`'s.
  hold& operator=(hold&& other) noexcept;
  hold(const hold&) = delete;
  hold& operator=(const hold&) = delete;
  ~hold();

  /// Whether this hold still owns a hold of its lock (it was acquired and not yet released or
  /// given up).
  bool owns_lock() const noexcept { return lock_.has_value(); }
  explicit operator bool() const noexcept { return owns_lock(); }
  /// The lock handle, while owning.
  const reentrant_lock* lock() const noexcept { return lock_ ? &*lock_ : nullptr; }

  /// Releases the hold; await it at once (it refers to this hold until it starts). The hold
  /// hands the lock to the release when the release starts, so an operation that never starts
  /// (a cancelled coroutine's co_await throws before starting it; a deferred operation never
  /// launched) leaves the hold owning, and its destructor releases. Once started, the release
  /// runs to its answer even if the caller is cancelled. Throws like reentrant_lock::unlock();
  /// errc::not_owner if this hold owns nothing.
  boost::asio::awaitable<void> unlock();
  /// The same with any completion token; signature `void(error_code)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_unlock(CompletionToken&& token = {}) {
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
        [this](auto handler) {
          // An empty hold has no client: its not_owner completes on the system executor.
          auto ex = lock_ ? lock_->get_executor()
                          : reentrant_lock::executor_type(boost::asio::system_executor());
          start_unlock(detail::with_error_code<>(std::move(handler), ex));
        },
        token);
  }

  /// Stops owning without unlocking (the caller takes over the release); returns the handle.
  /// Throws errc::not_owner if this hold owns nothing.
  reentrant_lock release();

 private:
  friend class reentrant_lock;
  explicit hold(reentrant_lock l) noexcept : lock_(std::move(l)) {}
  /// The handle, leaving this hold empty; errc::not_owner if it was.
  reentrant_lock take();
  /// Starts the release of what this hold owns (handing it over), or completes `h` with
  /// errc::not_owner.
  void start_unlock(detail::handler<> h);
  /// Posts the unlock of what this hold owns, if anything.
  void release_in_background() noexcept;

  std::optional<reentrant_lock> lock_;
};

}  // namespace rlock
