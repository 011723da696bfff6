#pragma once

// A lock's single round trips (queries, a force unlock, a semaphore's admin calls): one command
// or script call on the lock key's connection, bounded by config::command_timeout, its answer
// read into the operation's result or its failure. Callbacks, not coroutines: nothing is thrown.
#include "engine/delivery.hpp"
#include "engine/engine_context.hpp"
#include "engine/lock_kind.hpp"
#include "engine/lock_state.hpp"
#include "resp3/request.hpp"
#include "rlock/detail/completion.hpp"
#include "rlock/error.hpp"

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace rlock::detail {

/// The options of a single round trip, bounded by config::command_timeout.
inline request_options round_trip(const lock_state& s) {
  request_options opts;
  opts.deadline = std::chrono::steady_clock::now() + s.ctx->cfg.command_timeout;
  return opts;
}

/// A latched request's latch key: the lock's unlock latch with this call's request id appended
/// to `out`. A retry after a lost answer sends the same key, so the script answers what its first
/// run did (FAULTS.md: a release-kind request is written again).
inline void append_request_latch(const lock_state& s, std::string& out) {
  append_unlock_latch(s.key(), out);
  s.ctx->append_request_id(out);
}

/// The inputs of a latched release-kind script call with its latch key made already: the
/// latch's lifetime and the publish command. Views: valid while `channel` and `latch` are.
inline release_inputs latched_inputs(const lock_state& s, std::string_view channel,
                                     std::string_view latch) {
  release_inputs in;
  in.channel = channel;
  in.latch = latch;
  in.latch_ttl = s.ctx->latch_ttl_arg.view();
  in.publish = s.ctx->session.publish_command();
  return in;
}

/// The inputs of a latched release-kind script call (a force unlock, a permit's release by id):
/// `latch` is filled by append_request_latch; the views stay valid while `channel` and `latch`
/// live (the operation's closure keeps both until the answer).
inline release_inputs latched_release_inputs(const lock_state& s, std::string_view channel,
                                             std::string& latch) {
  append_request_latch(s, latch);
  return latched_inputs(s, channel, latch);
}

/// A reply's integer: a number, a decimal string, nil as 0; none for anything else.
inline std::optional<std::int64_t> as_integer(const resp3::value& v) noexcept {
  if (v.type == resp3::type::number) return v.integer;
  if (v.is_null()) return 0;
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(v.str.data(), v.str.data() + v.str.size(), n);
  if (ec != std::errc{} || end != v.str.data() + v.str.size()) return std::nullopt;
  return n;
}

/// The completion of a round trip `what` that completes `h` with `read(state, reply)` (none: the
/// reply is not what the operation expects, errc::protocol_error), or with the round trip's own
/// failure (Redis's text, the bound, the lost connection), on the handler's executor.
template <typename T, typename Read>
auto answer_to(std::shared_ptr<lock_state> s, std::string what, handler<T> h, Read read) {
  return [s = std::move(s), what = std::move(what), h = std::move(h), read](
             std::error_code ec, const resp3::value& reply) mutable {
    failure f;
    T result{};
    if (ec || reply.is_error()) {
      f = failure_of(*s->ctx, ec, reply, what);
    } else if (auto v = read(*s, reply)) {
      result = std::move(*v);
    } else {
      f = failure(errc::protocol_error,
                  fmt::format("{}: unexpected reply {}", what, resp3::brief(reply)));
    }
    if (f) s->set_last_error(f);
    const auto ex = s->executor();
    // These operations ignore cancellation: no slot handler was installed, none is cleared.
    ops::deliver(ex, std::move(h), boost::asio::cancellation_slot(), false, std::move(f),
                 std::move(result));
  };
}

/// Runs `c` on the lock key's connection and completes `h` as answer_to says. Started from the
/// client's executor, never inside the initiating call.
template <typename T, typename Read>
void run_command(std::shared_ptr<lock_state> s, command c, std::string what, handler<T> h,
                 Read read) {
  const auto ex = s->executor();
  boost::asio::post(ex, [s = std::move(s), c = std::move(c), what = std::move(what),
                         h = std::move(h), read]() mutable {
    auto* state = s.get();
    state->ask(std::move(c), answer_to<T>(std::move(s), std::move(what), std::move(h), read));
  });
}

/// Runs the kind's script call that `make(state, call)` builds on the client's executor (or the
/// failure it returns: bad input) and completes `h` as answer_to says. The call's views may point
/// into `make`'s own captures: both live on the heap until the answer, since the registry may
/// send the call again (a NOSCRIPT answer, a script not loaded yet).
template <typename T, typename Make, typename Read>
void run_script(std::shared_ptr<lock_state> s, Make make, std::string what, handler<T> h,
                Read read) {
  struct prepared {
    Make make;
    release_script_call call;
  };
  auto p = std::make_unique<prepared>(prepared{std::move(make), {}});
  const auto ex = s->executor();
  boost::asio::post(ex, [s = std::move(s), p = std::move(p), what = std::move(what),
                         h = std::move(h), read]() mutable {
    if (auto f = p->make(*s, p->call)) {
      s->set_last_error(f);
      const auto client_ex = s->executor();
      ops::deliver(client_ex, std::move(h), boost::asio::cancellation_slot(), false, std::move(f),
                   T{});
      return;
    }
    auto& scripts = s->ctx->scripts;
    auto& latches = s->ctx->latches;
    const auto opts = round_trip(*s);
    auto* call = &p->call;
    auto done = answer_to<T>(std::move(s), std::move(what), std::move(h), read);
    scripts.async_run(call->which, call->key_span(), call->arg_span(), opts,
                      [p = std::move(p), done = std::move(done), &latches](
                          std::error_code ec, const resp3::value& reply) mutable {
                        // Answered: no retry of it can come any more, its latch has done its
                        // work. Unanswered, the session may write it again: the latch stays
                        // (and expires by its TTL).
                        if (!ec && !p->call.latch.empty()) latches.add(p->call.latch);
                        done(ec, reply);  // `p` (the call's bytes) lives until here
                      });
  });
}

}  // namespace rlock::detail
