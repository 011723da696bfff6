#pragma once

// What the lock handles (lock_handle and every kind's) share to give their operations both forms:
// the awaitable form of a callback operation, and single-round-trip queries.
#include "engine/engine_context.hpp"
#include "lock/lock_kind.hpp"
#include "lock/lock_state.hpp"
#include "resp3/request.hpp"
#include "rlock/error.hpp"
#include "rlock/lock_handle.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <array>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace rlock::detail {

namespace asio = boost::asio;

/// The options of a single round trip, bounded by config::command_timeout.
inline request_options round_trip(const lock_state& s) {
  request_options opts;
  opts.deadline = std::chrono::steady_clock::now() + s.ctx->cfg.command_timeout;
  return opts;
}

/// One command, a single round trip on the lock key's connection; error replies become
/// server_error (or their own code), with Redis's text; `what` names it in other errors.
inline asio::awaitable<resp3::value> run(std::shared_ptr<lock_state> s, command c,
                                         std::string_view what) {
  auto [ec, reply] = co_await asio::async_initiate<const asio::use_awaitable_t<>&,
                                                   void(std::error_code, resp3::value)>(
      [&](auto completion) {
        s->ctx->session.exec(std::move(c), round_trip(*s), std::move(completion));
      },
      asio::use_awaitable);
  if (ec || reply.is_error()) std::rethrow_exception(failure_of(*s->ctx, ec, reply, what));
  co_return reply;
}

/// One script call of the kind (a force unlock, a semaphore's admin), a single round trip on the
/// lock key's connection; an error reply (the registry makes it an error code) or a transport
/// failure is thrown with Redis's text, `what` naming it.
inline asio::awaitable<resp3::value> run_script(std::shared_ptr<lock_state> s,
                                                const release_script_call& call, std::string what) {
  auto [ec, reply] = co_await asio::async_initiate<const asio::use_awaitable_t<>&,
                                                   void(std::error_code, resp3::value)>(
      [&](auto completion) {
        s->ctx->scripts.async_run(call.which, call.key_span(), call.arg_span(), round_trip(*s),
                                  std::move(completion));
      },
      asio::use_awaitable);
  if (ec) std::rethrow_exception(failure_of(*s->ctx, ec, reply, what));
  co_return reply;
}

/// A query of the lock key (`name key [field]`).
inline asio::awaitable<resp3::value> query(std::shared_ptr<lock_state> s, std::string_view name,
                                           bool with_field) {
  // Spans over arrays, not braced lists: g++ 12 miscompiles those inside coroutines.
  const std::array<std::string_view, 1> key{s->key()};
  const std::array<std::string_view, 1> field{s->field()};
  command c(
      command_kind::query, name, key,
      with_field ? std::span<const std::string_view>(field) : std::span<const std::string_view>());
  co_return co_await run(std::move(s), std::move(c), name);
}

inline std::int64_t as_integer(const resp3::value& v) {
  if (v.type == resp3::type::number) return v.integer;
  if (v.is_null()) return 0;
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(v.str.data(), v.str.data() + v.str.size(), n);
  if (ec != std::errc{} || end != v.str.data() + v.str.size()) {
    throw_error(errc::protocol_error, "expected an integer reply");
  }
  return n;
}

/// A single-round-trip query run as a coroutine on the client's executor, completing `h`. It
/// ignores cancellation: bounded by config::command_timeout, it always runs to its answer.
template <typename T>
void run_query(const std::shared_ptr<lock_state>& s,
               asio::awaitable<T> (*op)(std::shared_ptr<lock_state>), handler<T> h) {
  asio::co_spawn(s->ctx->executor, op(s), std::move(h));
}

}  // namespace rlock::detail
