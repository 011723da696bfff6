#pragma once

#include "rlock/export.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/system/error_code.hpp>

#include <exception>
#include <system_error>
#include <utility>

namespace rlock::detail {

/// The error code an operation's exception carries, as Asio's error_code; rlock's cancellation
/// (std::errc::operation_canceled) becomes asio::error::operation_aborted.
RLOCK_EXPORT boost::system::error_code to_error_code(const std::exception_ptr& e);

template <typename T>
struct op_signature {
  using type = void(boost::system::error_code, T);
};
template <>
struct op_signature<void> {
  using type = void(boost::system::error_code);
};

/// Calls a handler of signature `Signature` with the completion (std::exception_ptr[, T]) of
/// rlock's callback operations: the exception becomes an error_code for error_code signatures, and
/// a result the signature has no place for (lock()'s bool) is dropped.
template <typename Signature>
struct deliver;
template <>
struct deliver<void(std::exception_ptr)> {
  template <typename Handler, typename... Result>
  static void to(Handler& h, std::exception_ptr e, Result&&...) {
    std::move(h)(std::move(e));
  }
};
template <typename T>
struct deliver<void(std::exception_ptr, T)> {
  template <typename Handler>
  static void to(Handler& h, std::exception_ptr e, T v) {
    std::move(h)(std::move(e), std::move(v));
  }
};
template <>
struct deliver<void(boost::system::error_code)> {
  template <typename Handler, typename... Result>
  static void to(Handler& h, std::exception_ptr e, Result&&...) {
    std::move(h)(to_error_code(e));
  }
};
template <typename T>
struct deliver<void(boost::system::error_code, T)> {
  template <typename Handler>
  static void to(Handler& h, std::exception_ptr e, T v) {
    std::move(h)(to_error_code(e), std::move(v));
  }
};

/// Wraps `handler` (completion signature `Signature`) as a handler of rlock's callback operations,
/// keeping its cancellation slot and its executor (default `ex`, the client's).
template <typename Signature, typename Handler>
auto completion_for(Handler handler, const boost::asio::any_io_executor& ex) {
  auto slot = boost::asio::get_associated_cancellation_slot(handler);
  auto handler_ex = boost::asio::get_associated_executor(handler, ex);
  return boost::asio::bind_cancellation_slot(
      slot,
      boost::asio::bind_executor(
          handler_ex, [h = std::move(handler)](std::exception_ptr e, auto&&... result) mutable {
            deliver<Signature>::to(h, std::move(e), std::forward<decltype(result)>(result)...);
          }));
}

/// Starts `op` on the client's executor `ex` and completes `token` with
/// `void(boost::system::error_code[, T])`, Asio's convention (use_awaitable throws, as_tuple
/// returns).
/// The handler's cancellation slot reaches the operation, and the handler runs on its own
/// associated executor, never inside this call.
template <typename T, typename CompletionToken>
auto async_run(const boost::asio::any_io_executor& ex, boost::asio::awaitable<T> op,
               CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, typename op_signature<T>::type>(
      [](auto handler, const boost::asio::any_io_executor& run_ex,
         boost::asio::awaitable<T> run_op) {
        auto slot = boost::asio::get_associated_cancellation_slot(handler);
        auto handler_ex = boost::asio::get_associated_executor(handler, run_ex);
        boost::asio::co_spawn(
            run_ex, std::move(run_op),
            boost::asio::bind_cancellation_slot(
                slot, boost::asio::bind_executor(handler_ex, [h = std::move(handler)](
                                                                 std::exception_ptr e,
                                                                 auto&&... result) mutable {
                  std::move(h)(to_error_code(e), std::forward<decltype(result)>(result)...);
                })));
      },
      token, ex, std::move(op));
}

}  // namespace rlock::detail
