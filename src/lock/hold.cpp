#include "rlock/hold.hpp"

#include "rlock/error.hpp"

#include <boost/asio/post.hpp>

#include <exception>

namespace rlock {

hold& hold::operator=(hold&& other) noexcept {
  if (this != &other) {
    release_in_background();
    lock_ = std::exchange(other.lock_, std::nullopt);
  }
  return *this;
}

hold::~hold() { release_in_background(); }

reentrant_lock hold::take() {
  if (!lock_) throw_error(errc::not_owner, "this hold owns no lock (released or never acquired)");
  reentrant_lock l = std::move(*lock_);
  lock_.reset();
  return l;
}

reentrant_lock hold::release() { return take(); }

boost::asio::awaitable<void> hold::unlock() {
  // Taken now, not when awaited: from this call on the hold owns nothing, so a caller destroyed
  // while the release is in flight does not post a second one.
  reentrant_lock l = take();
  return l.unlock();
}

void hold::release_in_background() noexcept {
  if (!lock_) return;
  reentrant_lock l = std::move(*lock_);
  lock_.reset();
  try {
    // Posted, not started here: a destructor may run inside the client's own bookkeeping (a
    // coroutine frame destroyed by a cancellation) or on another thread.
    boost::asio::post(l.get_executor(), [l] {
      l.start_unlock(detail::handler<>([](std::exception_ptr) {
        // Kept in l.last_error() by the operation; the lease bounds a failed release.
      }));
    });
  } catch (...) {
    // Out of memory: the lease bounds the hold.
  }
}

}  // namespace rlock
