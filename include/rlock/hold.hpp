#pragma once

#include "rlock/export.hpp"
#include "rlock/reentrant_lock.hpp"

#include <boost/asio/awaitable.hpp>

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

  /// Releases the hold now. The hold owns nothing from the call on, whatever the outcome (the
  /// release runs to its answer even if the caller is cancelled). Throws like
  /// reentrant_lock::unlock(); errc::not_owner if this hold owns nothing.
  boost::asio::awaitable<void> unlock();
  /// The same with any completion token; signature `void(error_code)`. The hold gives up the
  /// lock when this is called, the release starts when the operation is launched.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_unlock(CompletionToken&& token = {}) {
    return take().async_unlock(std::forward<CompletionToken>(token));
  }

  /// Stops owning without unlocking (the caller takes over the release); returns the handle.
  /// Throws errc::not_owner if this hold owns nothing.
  reentrant_lock release();

 private:
  friend class reentrant_lock;
  explicit hold(reentrant_lock l) noexcept : lock_(std::move(l)) {}
  /// The handle, leaving this hold empty; errc::not_owner if it was.
  reentrant_lock take();
  /// Posts the unlock of what this hold owns, if anything.
  void release_in_background() noexcept;

  std::optional<reentrant_lock> lock_;
};

}  // namespace rlock
