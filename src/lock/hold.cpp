#include "rlock/hold.hpp"

#include "rlock/error.hpp"

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exception>
#include <system_error>

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

void hold::start_unlock(detail::handler<> h) {
  if (!lock_) {
    // Never inside the initiating call: through the system executor to the handler's own.
    auto ex = boost::asio::get_associated_executor(h, boost::asio::system_executor());
    boost::asio::post(boost::asio::system_executor(), [ex, h = std::move(h)]() mutable {
      boost::asio::dispatch(ex, [h = std::move(h)]() mutable {
        std::move(h)(std::make_exception_ptr(
            std::system_error(make_error_code(errc::not_owner),
                              "this hold owns no lock (released or never acquired)")));
      });
    });
    return;
  }
  // Handed over as the release starts: from here on the release runs to its answer, and a
  // destructor running meanwhile does not post a second one.
  reentrant_lock l = take();
  l.start_unlock(std::move(h));
}

boost::asio::awaitable<void> hold::unlock() {
  return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&,
                                     void(std::exception_ptr)>(
      [this](auto handler) { start_unlock(detail::handler<>(std::move(handler))); },
      boost::asio::use_awaitable);
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
