// Redisson's RFencedLock: RLock plus a token counter `redisson_lock_token:{<key>}` every
// acquisition increments (kept forever, as Redisson's, or clock-bounded and expiring:
// config::fenced_lock); the descriptor, then fenced_lock's own forms.
#include "engine/define_kind.hpp"
#include "engine/engine_config.hpp"
#include "engine/operations.hpp"
#include "engine/probe_row.hpp"
#include "engine/round_trip.hpp"
#include "kinds/hash_lock.hpp"
#include "kinds/registry.hpp"
#include "names/names.hpp"
#include "rlock/config.hpp"
#include "rlock/fenced_lock.hpp"

#include <fmt/format.h>

namespace rlock::detail {

namespace {

using namespace hash_lock;

/// config::fenced_lock's token_idle_ttl, if set: the clock-bounded tokens' counter lifetime.
void fenced_prepare(const attempt_facts& f, attempt_room& room, acquire_inputs& in) {
  const auto ttl = f.settings.fenced_lock.token_idle_ttl;
  if (ttl.count() <= 0) return;
  room.numbers[0].assign(ttl.count());
  in.token_ttl_ms = room.numbers[0].view();
}

/// config::fenced_lock: clock-bounded tokens need a counter that outlives a server's clock step.
std::string fenced_settings_error(const config& c) {
  const auto ttl = c.fenced_lock.token_idle_ttl;
  if (ttl.count() != 0 && ttl.count() < 1000) {
    return fmt::format(
        "fenced_lock.token_idle_ttl must be 0 (keep token counters forever, as Redisson) or at "
        "least 1000 ms (a server clock step back within it could repeat a token), got {} ms",
        ttl.count());
  }
  return {};
}

/// Redisson's acquire, or with config::fenced_lock's token_idle_ttl the clock-bounded one, whose
/// counter expires that long after the latest acquisition.
void fenced_acquire(const lock_identity& s, const acquire_inputs& in, acquire_script_call& call) {
  const bool clocked = !in.token_ttl_ms.empty();
  call.which = clocked ? script::acquire_fenced_clocked : script::acquire_fenced;
  if (call.scratch.empty()) call.scratch = token_counter(s.key);
  call.keys[0] = s.key;
  call.keys[1] = call.scratch;
  call.key_count = 2;
  call.args[0] = in.lease_ms;
  call.args[1] = s.field;
  call.args[2] = in.token_ttl_ms;
  call.arg_count = clocked ? 3 : 2;
}

/// The hold count and the token counter, in one round trip (the counter shares the key's slot).
command fenced_question(const lock_identity& s) {
  command c = reentrant_question(s);
  const std::string counter = token_counter(s.key);
  c.then(command(command_kind::query, "GET", {std::string_view(counter)}).take_payload());
  return c;
}

// rlock::inspect: a lock's hash beside a token counter.
void fenced_probe_commands(std::string_view key, std::string_view,
                           std::vector<probe_command>& out) {
  out.push_back({"GET", token_counter(key)});
}

void fenced_probe_read(const probe_answers& a, lock_info& info) {
  if (!a.own[0].is_null()) info.token = probe_int(a.own[0].str);
}

bool fenced_probe_claim(const probe_answers&, lock_info& info) { return info.token.has_value(); }

constexpr probe_row fenced_probe{
    .kind = key_kind::fenced,
    .stored_as = "hash",
    .order = 10,
    .command_count = 1,
    .commands = &fenced_probe_commands,
    .read = &fenced_probe_read,
    .claim = &fenced_probe_claim,
};

}  // namespace

constinit const lock_kind fenced_kind = define_kind({
    .name = "fenced",
    .acquire_call = &fenced_acquire,
    .decode = &token_decode,
    .reconcile_question = &fenced_question,
    .judge = &token_judge,
    .release_call = &release_call,
    .transfer_call = nullptr,  // every acquisition takes a new token: no handoff
    .force_call = &force_call,
    .leave_call = nullptr,
    .renew = script::renew,
    .channel = &append_unlock_channel,
    .waiting = wait_mode::lock_channel,
    .on_message = &on_unlock_message,
    .settings_error = &fenced_settings_error,
    .prepare_attempt = &fenced_prepare,
    .probe = &fenced_probe,
});

}  // namespace rlock::detail

namespace rlock {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using token_result = std::optional<std::int64_t>;

std::int64_t fenced_lock::token() const noexcept {
  return state_of(*this)->token.load(std::memory_order_relaxed);
}

std::string fenced_lock::token_key() const { return detail::token_counter(state_of(*this)->key()); }

void fenced_lock::start_try_lock_token(const lock_handle& l, milliseconds wait,
                                       std::optional<milliseconds> lease,
                                       detail::handler<token_result> h) {
  detail::async_acquire_token(state_of(l), wait, lease, std::move(h));
}

void fenced_lock::start_lock_token(const lock_handle& l, std::optional<milliseconds> lease,
                                   detail::handler<std::int64_t> h) {
  // lock() is an acquisition without a bound: the token operation with no wait limit, its
  // optional always set on success. The caller's slot and executor go with the adapter.
  detail::async_acquire_token(
      state_of(l), std::nullopt, lease,
      detail::ops::mapped<token_result>(std::move(h), l.get_executor(),
                                        [](token_result token) { return token.value_or(0); }));
}

void fenced_lock::start_current_token(const lock_handle& l, detail::handler<std::int64_t> h) {
  const auto& s = state_of(l);
  const std::string counter = detail::token_counter(s->key());
  const std::array<std::string_view, 1> key{counter};
  detail::run_command(s, detail::command(detail::command_kind::query, "GET", key), "GET token",
                      std::move(h), [](detail::lock_state&, const detail::resp3::value& reply) {
                        return detail::as_integer(reply);
                      });
}

asio::awaitable<std::int64_t> fenced_lock::lock() {
  return detail::awaitable_of<std::int64_t>(
      *this, [](const lock_handle& l, detail::handler<std::int64_t> h) {
        start_lock_token(l, std::nullopt, std::move(h));
      });
}
asio::awaitable<std::int64_t> fenced_lock::lock(milliseconds lease) {
  return detail::awaitable_of<std::int64_t>(
      *this, [lease](const lock_handle& l, detail::handler<std::int64_t> h) {
        start_lock_token(l, lease, std::move(h));
      });
}
asio::awaitable<token_result> fenced_lock::try_lock() { return try_lock(milliseconds::zero()); }
asio::awaitable<token_result> fenced_lock::try_lock(milliseconds wait) {
  return detail::awaitable_of<token_result>(
      *this, [wait](const lock_handle& l, detail::handler<token_result> h) {
        start_try_lock_token(l, wait, std::nullopt, std::move(h));
      });
}
asio::awaitable<token_result> fenced_lock::try_lock(milliseconds wait, milliseconds lease) {
  return detail::awaitable_of<token_result>(
      *this, [wait, lease](const lock_handle& l, detail::handler<token_result> h) {
        start_try_lock_token(l, wait, lease, std::move(h));
      });
}
asio::awaitable<std::int64_t> fenced_lock::current_token() {
  return detail::awaitable_of<std::int64_t>(
      *this, [](const lock_handle& l, detail::handler<std::int64_t> h) {
        start_current_token(l, std::move(h));
      });
}

asio::awaitable<fenced_lock::hold_type> fenced_lock::scoped() { return scoped_awaitable({}, {}); }
asio::awaitable<fenced_lock::hold_type> fenced_lock::scoped(milliseconds lease) {
  return scoped_awaitable({}, lease);
}
asio::awaitable<fenced_lock::hold_type> fenced_lock::try_scoped(milliseconds wait) {
  return scoped_awaitable(wait, {});
}
asio::awaitable<fenced_lock::hold_type> fenced_lock::try_scoped(milliseconds wait,
                                                                milliseconds lease) {
  return scoped_awaitable(wait, lease);
}
asio::awaitable<fenced_lock::hold_type> fenced_lock::scoped_awaitable(
    std::optional<milliseconds> wait, std::optional<milliseconds> lease) {
  return detail::awaitable_of<hold_type>(
      *this, [wait, lease](const lock_handle& l, detail::handler<hold_type> h) {
        hold_type::start_scoped(fenced_lock(state_of(l)), wait, lease, std::move(h));
      });
}

}  // namespace rlock
