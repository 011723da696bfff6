#pragma once

// A harness for unit tests of the engine's I/O shells (acquire_shell.cpp, release_shell.cpp): an
// io_context, an engine over a fake session (engine_fixture), owners of one lock, and helpers to
// start their operations, run the engine's handlers until something happens, and find the
// requests it made. The test plays the server: it answers each request when it chooses.
#include "engine/lock_state.hpp"
#include "engine/operations.hpp"
#include "kinds/registry.hpp"
#include "support/engine_fixture.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <system_error>

namespace rlock::test {

/// What an operation completed with, once it has.
struct completion {
  bool done = false;
  bool acquired = false;
  std::error_code error;
};

struct engine_shell {
  boost::asio::io_context io;
  std::shared_ptr<engine_fixture> engine;

  explicit engine_shell(config c = {}) : engine(engine_fixture::make(io.get_executor(), c)) {}
  ~engine_shell() {
    engine->dog.stop();
    engine->session.close(std::make_error_code(std::errc::operation_canceled));
    io.restart();
    io.poll();
  }

  fake_session& server() { return engine->session; }
  detail::engine_counters& counters() { return engine->ctx.metrics.counters; }

  /// A new owner of `name`.
  std::shared_ptr<detail::lock_state> owner(
      std::string_view name = "L", const detail::lock_kind& kind = detail::reentrant_kind) {
    return detail::owner_table::new_owner(engine->context(), name, kind);
  }

  /// Starts an acquisition by `s` (wait: none = until cancelled) reporting into `out`;
  /// cancellable through `cancel` when given.
  void acquire(const std::shared_ptr<detail::lock_state>& s,
               std::optional<std::chrono::milliseconds> wait, completion& out,
               boost::asio::cancellation_signal* cancel = nullptr, bool batched = false) {
    auto done = [&out](const detail::failure& e, bool got) {
      out.done = true;
      out.acquired = got;
      out.error = e.code;
    };
    if (cancel == nullptr) {
      detail::async_acquire(s, wait, std::nullopt, detail::bool_handler(std::move(done)), batched);
      return;
    }
    detail::async_acquire(
        s, wait, std::nullopt,
        detail::bool_handler(boost::asio::bind_cancellation_slot(cancel->slot(), std::move(done))),
        batched);
  }
  /// Starts the release of one of `s`'s holds, reporting into `out`.
  void release(const std::shared_ptr<detail::lock_state>& s, completion& out,
               bool batched = false) {
    detail::async_release(s, detail::void_handler([&out](const detail::failure& e) {
                            out.done = true;
                            out.error = e.code;
                          }),
                          batched);
  }

  /// Runs the engine's handlers until `pred` holds (at most 3 s, 3 000 turns).
  template <typename Pred>
  bool run_until(Pred pred) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    for (int turn = 0; turn < 3000 && !pred(); ++turn) {
      if (std::chrono::steady_clock::now() > until) break;
      io.restart();
      io.run_one_for(std::chrono::milliseconds(1));
    }
    return pred();
  }
  /// Runs the handlers that are ready, without waiting for timers.
  void settle() {
    io.restart();
    io.poll();
  }
  /// Runs until a request is waiting for its answer; the index of the oldest.
  std::size_t next_request() {
    EXPECT_TRUE(run_until([&] { return !server().pending().empty(); }));
    return server().pending().empty() ? 0 : server().pending().front();
  }
  bool is_script(std::size_t i) { return server().script_of(server().requests.at(i)).has_value(); }

  /// `s` holds the lock: its acquisition answered "acquired" at once.
  void hold(const std::shared_ptr<detail::lock_state>& s) {
    completion c;
    acquire(s, std::chrono::milliseconds(0), c);
    server().answer(next_request(), {});
    EXPECT_TRUE(run_until([&] { return c.done; }));
    EXPECT_TRUE(c.acquired);
  }
};

}  // namespace rlock::test
