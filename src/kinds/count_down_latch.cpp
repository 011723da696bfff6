// Redisson's RCountDownLatch: the kind's descriptor (a wait for the count to reach zero, run by
// the engine as an acquisition that takes no hold), then the public forms. Its scripts are the
// latch_* rows of scripts.hpp.
#include "rlock/count_down_latch.hpp"

#include "engine/define_kind.hpp"
#include "engine/engine_context.hpp"
#include "engine/lock_kind.hpp"
#include "engine/lock_state.hpp"
#include "engine/operations.hpp"
#include "engine/probe_row.hpp"
#include "engine/round_trip.hpp"
#include "kinds/hash_lock.hpp"
#include "kinds/registry.hpp"
#include "names/names.hpp"
#include "rlock/error.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <string>

namespace rlock::detail {

namespace {

/// A look at the count: open (nil) or not yet (-1).
void latch_wait_call(const lock_identity& s, const acquire_inputs&, acquire_script_call& call) {
  call.which = script::latch_wait;
  call.keys[0] = s.key;
  call.key_count = 1;
  call.arg_count = 0;
}

/// The look's own answer was lost: the count, asked again (a look changes nothing).
command count_question(const lock_identity& s) {
  return command(command_kind::query, "GET", {std::string_view(s.key)});
}

reconcile_result count_judge(std::uint64_t, const resp3::value& answer) noexcept {
  const auto n = as_integer(answer);
  const bool open = n && *n <= 0;
  return {open ? reconcile_result::outcome::ran : reconcile_result::outcome::not_run};
}

/// "0" (zero reached) and "1" (a new count, or deleted): every waiter looks again.
wake_policy on_latch_message(std::string_view, std::uint32_t&) noexcept { return wake_policy::all; }

/// One latched change (latch_try_set, latch_count_down, latch_delete): KEYS = key, channel,
/// request latch; ARGV = [count,] publish command, latch TTL. Its answer, an integer.
void run_change(const std::shared_ptr<lock_state>& s, script which, std::string count,
                std::string what, handler<std::int64_t> h) {
  std::string words = fmt::format("count-down latch '{}': {}", s->name(), what);
  // The call views these captures until its answer.
  auto make = [which, count = std::move(count), channel = std::string(), latch = std::string()](
                  lock_state& st, release_script_call& call) mutable {
    append_latch_channel(st.key(), channel);
    const auto in = latched_release_inputs(st, channel, latch);
    call.which = which;
    call.keys = {st.key(), channel, latch};
    call.key_count = 3;
    call.arg_count = 0;
    if (!count.empty()) call.args[call.arg_count++] = count;
    call.args[call.arg_count++] = in.publish;
    call.args[call.arg_count++] = in.latch_ttl;
    call.latch = latch;
    return failure();
  };
  run_script(s, std::move(make), std::move(words), std::move(h),
             [](lock_state&, const resp3::value& reply) { return as_integer(reply); });
}

// rlock::inspect: an integer counter, told from a semaphore's only while it has waiters on the
// latch channel and no semaphore's holds or total (the key alone cannot tell them apart).
bool latch_probe_claim(const probe_answers& a, lock_info& info) {
  if (!info.permits.empty() || info.total || !a.subscribers || *a.subscribers <= 0) return false;
  info.count = probe_int(a[probe_common::value].str);
  return true;
}

constexpr probe_row latch_probe{
    .kind = key_kind::count_down_latch,
    .stored_as = "string",
    .order = 0,  // before the semaphore, which claims every counter
    .claim = &latch_probe_claim,
};

}  // namespace

constinit const lock_kind count_down_latch_kind = define_kind({
    .name = "count-down-latch",
    .acquire_call = &latch_wait_call,
    .decode = &hash_lock::reentrant_decode,  // nil: open; a number: wait for a message
    .reconcile_question = &count_question,
    .judge = &count_judge,
    .release_call = nullptr,  // no hold: nothing to release, hand over or renew
    .transfer_call = nullptr,
    .force_call = nullptr,
    .leave_call = nullptr,
    .renew = script::renew,
    .channel = &append_latch_channel,
    .waiting = wait_mode::lock_channel,
    .on_message = &on_latch_message,
    .takes_hold = false,
    .probe = &latch_probe,
});

}  // namespace rlock::detail

namespace rlock {

namespace asio = boost::asio;
using detail::failure;

std::string_view count_down_latch::name() const noexcept { return state_->name(); }
std::string_view count_down_latch::key() const noexcept { return state_->key(); }
std::string count_down_latch::channel() const { return std::string(state_->channel()); }
count_down_latch::executor_type count_down_latch::get_executor() const noexcept {
  return state_->executor();
}
std::string count_down_latch::last_error() const { return state_->last_error(); }

void count_down_latch::start_try_set(const count_down_latch& l, std::uint64_t count,
                                     detail::handler<bool> h) {
  const auto ex = l.state_->executor();
  if (count > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    failure f(errc::invalid_argument,
              fmt::format("count-down latch '{}': a count of {} (at most 2^63 - 1)",
                          l.state_->name(), count));
    l.state_->set_last_error(f);
    detail::ops::deliver(ex, std::move(h), asio::cancellation_slot(), true, std::move(f), false);
    return;
  }
  detail::run_change(
      l.state_, detail::script::latch_try_set, std::to_string(count), "try_set_count",
      detail::ops::mapped<std::int64_t>(std::move(h), ex, [](std::int64_t r) { return r == 1; }));
}

void count_down_latch::start_count_down(const count_down_latch& l, detail::handler<> h) {
  const auto ex = l.state_->executor();
  detail::run_change(l.state_, detail::script::latch_count_down, {}, "count_down",
                     detail::ops::mapped<std::int64_t>(std::move(h), ex, [](std::int64_t) {}));
}

void count_down_latch::start_remove(const count_down_latch& l, detail::handler<bool> h) {
  const auto ex = l.state_->executor();
  detail::run_change(
      l.state_, detail::script::latch_delete, {}, "remove",
      detail::ops::mapped<std::int64_t>(std::move(h), ex, [](std::int64_t r) { return r == 1; }));
}

void count_down_latch::start_count(const count_down_latch& l, detail::handler<std::int64_t> h) {
  const auto& s = l.state_;
  detail::run_command<std::int64_t>(
      s, detail::command(detail::command_kind::query, "GET", {s->key()}),
      fmt::format("count-down latch '{}': count (the key must hold an integer or nothing)",
                  s->name()),
      std::move(h), [](detail::lock_state&, const detail::resp3::value& reply) {
        auto n = detail::as_integer(reply);
        if (n && *n < 0) n = 0;  // a count-down past zero deleted it: open
        return n;
      });
}

void count_down_latch::start_wait(const count_down_latch& l, detail::handler<> h) {
  detail::async_lock(l.state_, std::nullopt, std::move(h));
}

void count_down_latch::start_try_wait(const count_down_latch& l, milliseconds wait,
                                      detail::handler<bool> h) {
  detail::async_acquire(l.state_, wait, std::nullopt, std::move(h));
}

// --- the awaitable forms ----------------------------------------------------------------------

asio::awaitable<bool> count_down_latch::try_set_count(std::uint64_t count) {
  return detail::awaitable_of<bool>(*this,
                                    [count](const count_down_latch& l, detail::handler<bool> h) {
                                      start_try_set(l, count, std::move(h));
                                    });
}

asio::awaitable<void> count_down_latch::count_down() {
  return detail::awaitable_of<>(*this, [](const count_down_latch& l, detail::handler<> h) {
    start_count_down(l, std::move(h));
  });
}

asio::awaitable<std::int64_t> count_down_latch::count() {
  return detail::awaitable_of<std::int64_t>(
      *this, [](const count_down_latch& l, detail::handler<std::int64_t> h) {
        start_count(l, std::move(h));
      });
}

asio::awaitable<void> count_down_latch::wait() {
  return detail::awaitable_of<>(
      *this, [](const count_down_latch& l, detail::handler<> h) { start_wait(l, std::move(h)); });
}

asio::awaitable<bool> count_down_latch::try_wait(milliseconds wait) {
  return detail::awaitable_of<bool>(*this,
                                    [wait](const count_down_latch& l, detail::handler<bool> h) {
                                      start_try_wait(l, wait, std::move(h));
                                    });
}

asio::awaitable<bool> count_down_latch::remove() {
  return detail::awaitable_of<bool>(*this, [](const count_down_latch& l, detail::handler<bool> h) {
    start_remove(l, std::move(h));
  });
}

}  // namespace rlock
