#pragma once

#include "rlock/detail/failure.hpp"
#include "rlock/export.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <exception>
#include <optional>
#include <system_error>
#include <type_traits>
#include <utility>

namespace rlock {

/// The completion token the `async_*` forms use when given none: they return a deferred
/// operation, which `co_await` starts, as do `std::move(op)(handler)` and Asio's composition
/// tools.
using default_completion_token = boost::asio::deferred_t;

namespace detail {

/// The completion of rlock's operations inside the library, `void(failure, Result...)`: the
/// error code and Redis's text (or the transport's); the forms' edges turn it into the caller's
/// error_code or exception.
///
/// An any_completion_handler that may also know that its associated executor is the client's:
/// an operation completing on that executor's thread then runs it in place, as dispatch would,
/// without asking the type-erased handler for its executor (which builds two type-erased
/// executors, heap-allocated, per completion: S1's profile).
template <typename... Result>
class handler : public boost::asio::any_completion_handler<void(failure, Result...)> {
  using base = boost::asio::any_completion_handler<void(failure, Result...)>;

 public:
  handler() = default;
  template <typename H>
  requires(!std::is_same_v<std::decay_t<H>, handler>) handler(H&& h)
      : base(std::forward<H>(h)) {}  // NOLINT: converts like any_completion_handler
  /// `h`, which runs on the client's executor `client_ex` if its associated executor is that one.
  template <typename H>
  handler(H&& h, const boost::asio::any_io_executor& client_ex)
      : handler(runs_on(h, client_ex), std::forward<H>(h)) {}  // asked before `h` is moved
  handler(handler&&) noexcept = default;
  handler& operator=(handler&&) = delete;  // Boost 1.81's base move assignment recurses

  /// Its associated executor is the client's.
  bool on_client() const noexcept { return on_client_; }

 private:
  template <typename H>
  static bool runs_on(const H& h, const boost::asio::any_io_executor& client_ex) noexcept {
    using executor = boost::asio::associated_executor_t<H, boost::asio::any_io_executor>;
    if constexpr (std::is_same_v<executor, boost::asio::any_io_executor>) {
      return boost::asio::get_associated_executor(h, client_ex) == client_ex;
    } else {
      return false;  // another executor type: the general path asks it
    }
  }

  template <typename H>
  handler(bool on_client, H&& h) : base(std::forward<H>(h)), on_client_(on_client) {}

  bool on_client_ = false;
};

/// A completion token, not a lease or wait: keeps `async_lock(500ms)` and
/// `async_lock(std::nullopt)` from taking the argument for a token.
template <typename T>
concept completion_token =
    !std::is_convertible_v<std::decay_t<T>, std::optional<std::chrono::milliseconds>>;

/// Wraps a handler of signature `void(error_code, Result...)`, Asio's convention, as a handler of
/// rlock's internal completion `void(failure, Result...)`, keeping the handler's
/// cancellation slot and executor (default `ex`, the client's). The operation runs it on that
/// executor, never inside the initiating call.
template <typename... Result, typename Handler>
handler<Result...> with_error_code(Handler h, const boost::asio::any_io_executor& ex) {
  auto slot = boost::asio::get_associated_cancellation_slot(h);
  auto handler_ex = boost::asio::get_associated_executor(h, ex);
  auto convert = [h = std::move(h)](failure f, Result... result) mutable {
    std::move(h)(f.code, std::move(result)...);
  };
  if constexpr (std::is_same_v<decltype(handler_ex), boost::asio::any_io_executor>) {
    if (handler_ex == ex) {
      // The client's executor is what an operation uses for a handler that names none: no
      // copy of it is kept in the handler (bench S6 counts the bytes of every waiting one).
      return handler<Result...>(boost::asio::bind_cancellation_slot(slot, std::move(convert)), ex);
    }
  }
  return handler<Result...>(boost::asio::bind_cancellation_slot(
                                slot, boost::asio::bind_executor(handler_ex, std::move(convert))),
                            ex);
}

/// Starts `start(handle, handler)` for a token of signature `void(error_code, Result...)`, Asio's
/// convention. The initiation holds a copy of the handle: a deferred operation may start after
/// the caller's is gone.
template <typename... Result, typename CompletionToken, typename Handle, typename Start>
auto initiate(CompletionToken&& token, const Handle& handle, Start start) {
  return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code, Result...)>(
      [](auto h, Handle self, Start st) {
        const auto ex = self.get_executor();
        st(self, with_error_code<Result...>(std::move(h), ex));
      },
      token, handle, std::move(start));
}

/// The exception a failure becomes at the awaitable edge; null if none.
RLOCK_EXPORT std::exception_ptr exception_of(const failure& f);

/// `completion` (use_awaitable's, `void(std::exception_ptr, Result...)`) as a handler of the
/// internal completion. Its executor and cancellation slot are the completion's, asked of it
/// when wanted, not copied into binders (S1 counts the instructions of every pair).
template <typename Completion>
class throwing {
 public:
  explicit throwing(Completion c) : completion_(std::move(c)) {}

  using executor_type = boost::asio::associated_executor_t<Completion>;
  executor_type get_executor() const noexcept {
    return boost::asio::get_associated_executor(completion_);
  }
  using cancellation_slot_type = boost::asio::associated_cancellation_slot_t<Completion>;
  cancellation_slot_type get_cancellation_slot() const noexcept {
    return boost::asio::get_associated_cancellation_slot(completion_);
  }

  template <typename... Result>
  void operator()(failure f, Result&&... result) {
    std::move(completion_)(f ? exception_of(f) : std::exception_ptr(),
                           std::forward<Result>(result)...);
  }

 private:
  Completion completion_;
};

/// The awaitable form of an operation started by `start(handle, handler)`: the caller's coroutine
/// awaits the operation's own completion, with no coroutine between; a failure is thrown as a
/// boost::system::system_error with its code and words (the one place it becomes an exception).
template <typename... Result, typename Handle, typename Start>
auto awaitable_of(const Handle& l, Start start) {
  namespace asio = boost::asio;
  return asio::async_initiate<const asio::use_awaitable_t<>&, void(std::exception_ptr, Result...)>(
      [](auto completion, Handle self, Start st) {
        const auto ex = self.get_executor();
        st(self, handler<Result...>(throwing(std::move(completion)), ex));
      },
      asio::use_awaitable, l, std::move(start));
}

/// The outcome of an operation started by `start(handle, handler)` as a value, for the
/// library's own coroutines (a multi-lock's members, a semaphore's holds): `failure`, or
/// `std::tuple<failure, Result...>`; never thrown.
template <typename... Result, typename Handle, typename Start>
auto outcome_of(const Handle& l, Start start) {
  namespace asio = boost::asio;
  return asio::async_initiate<const asio::use_awaitable_t<>&, void(failure, Result...)>(
      [](auto completion, Handle self, Start st) {
        const auto ex = self.get_executor();
        st(self, handler<Result...>(std::move(completion), ex));
      },
      asio::use_awaitable, l, std::move(start));
}

}  // namespace detail
}  // namespace rlock

// The handler's associated executor is its base's (the allocator and the cancellation slot
// come with the base's member types).
template <typename... Result, typename Candidate>
struct boost::asio::associated_executor<rlock::detail::handler<Result...>, Candidate>
    : boost::asio::associated_executor<
          boost::asio::any_completion_handler<void(rlock::detail::failure, Result...)>, Candidate> {
};
