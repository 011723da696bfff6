#pragma once

// What the lock operations (acquire_shell.cpp, release_shell.cpp) share: their failures, argument
// checks, running on the client's executor, and delivery to the caller's handler with its
// cancellation slot.
#include "engine/acquire_reply.hpp"
#include "engine/decimal.hpp"
#include "rlock/detail/completion.hpp"
#include "rlock/detail/failure.hpp"
#include "rlock/error.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace rlock::detail::ops {

namespace asio = boost::asio;
using std::chrono::milliseconds;

/// Why the arguments are invalid, or no failure.
inline failure validate(std::optional<milliseconds> wait, std::optional<milliseconds> lease) {
  if (lease && lease->count() <= 0) {
    return failure(errc::invalid_argument,
                   fmt::format("lease must be positive, got {} ms", lease->count()));
  }
  // A lease becomes time points (the holder's belief deadline, the watchdog's): one of years
  // would overflow them. Redis's answers are held to the same bound (server_wait).
  if (lease && *lease > longest_server_wait) {
    return failure(errc::invalid_argument,
                   fmt::format("lease must be at most {} ms (about 24.8 days), got {} ms; use "
                               "the watchdog (no lease) for a hold without an end",
                               longest_server_wait.count(), lease->count()));
  }
  if (wait && wait->count() < 0) {
    return failure(errc::invalid_argument,
                   fmt::format("wait must not be negative, got {} ms", wait->count()));
  }
  return {};
}

/// Whether this thread runs the client's io_context: where dispatch to the client's executor
/// would run a function at once.
inline bool on_client_thread(const asio::any_io_executor& client_ex) noexcept {
  const auto* io = client_ex.target<asio::io_context::executor_type>();
  return io != nullptr && io->running_in_this_thread();
}

/// Runs `f` on the client's executor: at once on its thread (what dispatch would do, without
/// wrapping `f` for a type-erased executor), else dispatched there.
template <typename Function>
void on_client(const asio::any_io_executor& client_ex, Function&& f) {
  if (on_client_thread(client_ex)) {
    std::forward<Function>(f)();
    return;
  }
  asio::dispatch(client_ex, std::forward<Function>(f));
}

/// Runs `h` with the completion on the handler's executor, after clearing the handler's
/// cancellation slot there: the slot belongs to the caller's executor, which is also where a
/// cancellation is emitted, so the two never race. `inside_initiation` posts instead of
/// dispatching, so a handler never runs inside the call that started the operation.
template <typename Handler, typename... Result>
void deliver(const asio::any_io_executor& client_ex, Handler h, asio::cancellation_slot slot,
             bool inside_initiation, failure e, Result... result) {
  if (!inside_initiation && h.on_client() && on_client_thread(client_ex)) {
    // Its executor is the client's, and this is its thread: dispatch would run it here.
    if (slot.is_connected()) slot.clear();
    std::move(h)(std::move(e), std::move(result)...);
    return;
  }
  auto ex = asio::get_associated_executor(h, client_ex);
  auto run = [h = std::move(h), slot, e = std::move(e), result...]() mutable {
    if (slot.is_connected()) slot.clear();
    std::move(h)(std::move(e), result...);
  };
  if (inside_initiation) {
    // Through the client's executor first: the handler's may be this very thread's.
    asio::post(client_ex,
               [ex, run = std::move(run)]() mutable { asio::dispatch(ex, std::move(run)); });
  } else {
    asio::dispatch(ex, std::move(run));
  }
}

/// `h` as the handler of an operation that completes with a `From`: `h` gets `map(from)`, or
/// nothing if it takes nothing (a count-down that reports no count); `h`'s executor and
/// cancellation slot go with it.
template <typename From, typename... To, typename Map>
handler<From> mapped(handler<To...> h, const asio::any_io_executor& client_ex, Map map) {
  auto slot = asio::get_associated_cancellation_slot(h);
  auto handler_ex = asio::get_associated_executor(h, client_ex);
  auto done = [h = std::move(h), map](failure f, From from) mutable {
    if constexpr (sizeof...(To) == 0) {
      (void)map;  // nothing to map to
      std::move(h)(std::move(f));
    } else {
      std::move(h)(std::move(f), map(std::move(from)));
    }
  };
  return handler<From>(
      asio::bind_cancellation_slot(slot, asio::bind_executor(handler_ex, std::move(done))),
      client_ex);
}

/// Shared by an operation and the cancellation handler installed in its caller's slot. The slot
/// handler runs on whatever thread emits the cancellation: it only records the request and posts
/// it to the client's executor, where the operation (if it still exists) acts on it.
template <typename Op>
struct cancel_link {
  std::atomic<bool> requested{false};
  Op* op = nullptr;  // touched on the client's executor only
};

template <typename Op>
void install_cancellation(asio::cancellation_slot& slot,
                          const std::shared_ptr<cancel_link<Op>>& link,
                          const asio::any_io_executor& client_ex) {
  if (!slot.is_connected()) return;
  // Installed in the initiating call, on the caller's side: a cancellation emitted before the
  // operation has started on the client's executor is recorded, not lost.
  slot.assign([link, client_ex](asio::cancellation_type type) {
    if (type == asio::cancellation_type::none) return;
    if (link->requested.exchange(true)) return;
    asio::post(client_ex, [link] {
      if (link->op != nullptr) link->op->on_cancel();
    });
  });
}

}  // namespace rlock::detail::ops
