// The semaphores (Redisson's RSemaphore and RPermitExpirableSemaphore): the kind's descriptor,
// then the public forms. Acquisitions are holds run by the lock engine (semaphore_kind: an owner
// per acquisition, its permits, a lease the watchdog renews); the operations nobody owns are single
// round trips of the semaphore_admin script.
#include "rlock/semaphore.hpp"

#include "engine/define_kind.hpp"
#include "engine/engine_context.hpp"
#include "engine/lock_kind.hpp"
#include "engine/lock_state.hpp"
#include "engine/probe_row.hpp"
#include "engine/round_trip.hpp"
#include "kinds/hash_lock.hpp"
#include "kinds/registry.hpp"
#include "names/names.hpp"
#include "names/permit_id.hpp"
#include "rlock/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <string>

namespace rlock::detail {

namespace {

using namespace hash_lock;

/// An acquisition of more permits than the total (try_set_permits') can never succeed.
constexpr std::string_view permits_refusal =
    "PERMITS_EXCEED_TOTAL the acquisition asks for more permits than the semaphore has in all";
/// Bad input: it can never succeed.
constexpr refusal permits_refusals[] = {{"PERMITS_EXCEED_TOTAL", errc::invalid_argument}};

/// The semaphore's derived keys (scripts.hpp, RLOCK_SEMAPHORE_LUA): holds, sizes, channel and
/// total in `names`, as views in keys[1..4] (keys[0] is the counter).
template <std::size_t Keys>
void semaphore_keys(std::string_view key, std::string& names,
                    std::array<std::string_view, Keys>& keys) {
  names.clear();
  names.reserve(4 * key.size() + 128);  // and room for a count: no reallocation after
  append_semaphore_holds(key, names);
  const std::size_t holds_end = names.size();
  append_tagged_name(semaphore_sizes_prefix, key, names);
  const std::size_t sizes_end = names.size();
  append_semaphore_channel(key, names);
  const std::size_t channel_end = names.size();
  append_tagged_name(semaphore_total_prefix, key, names);
  const std::string_view all(names);
  keys[0] = key;
  keys[1] = all.substr(0, holds_end);
  keys[2] = all.substr(holds_end, sizes_end - holds_end);
  keys[3] = all.substr(sizes_end, channel_end - sizes_end);
  keys[4] = all.substr(channel_end);
}

void semaphore_acquire(const lock_identity& s, const acquire_inputs& in,
                       acquire_script_call& call) {
  call.which = script::acquire_semaphore;
  semaphore_keys(s.key, call.scratch, call.keys);
  call.key_count = 5;
  // The count after the names: the views above stay valid (reserved), this one is taken last.
  const std::size_t count_at = call.scratch.size();
  call.scratch.append(std::to_string(s.permits));
  call.args = {std::string_view(call.scratch).substr(count_at), s.field, in.lease_ms, in.publish,
               permits_refusal};
  call.arg_count = 5;
}

void semaphore_release(const lock_identity& s, const release_inputs& in,
                       release_script_call& call) {
  call.which = script::release_semaphore;
  semaphore_keys(s.key, call.scratch, call.keys);
  call.keys[5] = in.latch;
  call.key_count = 6;
  call.args = {s.field, in.publish, in.latch_ttl};
  call.arg_count = 3;
}

void semaphore_force(const lock_identity& s, const release_inputs& in, release_script_call& call) {
  call.which = script::force_release_semaphore;
  semaphore_keys(s.key, call.scratch, call.keys);
  call.keys[5] = in.latch;
  call.key_count = 6;
  call.args = {s.field, in.publish, in.latch_ttl};
  call.arg_count = 3;
}

/// The hold's expiry in the holds zset: present means the lost attempt took it.
command semaphore_question(const lock_identity& s) {
  std::string holds;
  append_semaphore_holds(s.key, holds);
  return command(command_kind::query, "ZSCORE", {std::string_view(holds)},
                 {std::string_view(s.field)});
}

reconcile_result semaphore_judge(std::uint64_t holds, const resp3::value& answer) noexcept {
  // One hold per owner: an owner that holds already counts nothing more.
  const bool ran = !answer.is_null() && !answer.is_error() && holds == 0;
  return {ran ? reconcile_result::outcome::ran : reconcile_result::outcome::not_run};
}

/// A hold is there or not: 1 or 0.
std::int64_t semaphore_count(const resp3::value& answer) noexcept {
  return answer.is_null() || answer.is_error() ? 0 : 1;
}

/// Redisson's semaphore message is the new count: wake as many waiters (each takes what it
/// asked for, or sleeps again).
wake_policy on_semaphore_message(std::string_view payload, std::uint32_t& count) noexcept {
  std::int64_t value = 0;
  const auto* end = payload.data() + payload.size();
  auto [p, ec] = std::from_chars(payload.data(), end, value);
  if (ec != std::errc{} || p != end || value <= 0) return wake_policy::none;
  count = static_cast<std::uint32_t>(std::min<std::int64_t>(value, 1 << 30));
  return wake_policy::some;
}

// rlock::inspect: an integer counter with holds (each hold's permits when more than one) and a
// total.
void semaphore_probe_commands(std::string_view key, std::string_view,
                              std::vector<probe_command>& out) {
  out.push_back({"ZRANGE", probe_name(&append_semaphore_holds, key), "0", "-1", "WITHSCORES"});
  out.push_back({"HGETALL", probe_tagged(semaphore_sizes_prefix, key)});
  out.push_back({"GET", probe_tagged(semaphore_total_prefix, key)});
}

void semaphore_probe_read(const probe_answers& a, lock_info& info) {
  const auto& sizes = a.own[1].elements;
  probe_each_scored(a.own[0], [&](std::string_view member, const resp3::value* score) {
    permit_hold h;
    h.id = std::string(member);
    if (score != nullptr && a.now) {
      if (probe_score(*score) >= static_cast<double>(redisson_never_expires)) {
        h.never_expires = true;
      } else {
        h.expires_in = probe_until(*score, *a.now);
      }
    }
    for (std::size_t k = 0; k + 1 < sizes.size(); k += 2) {
      if (sizes[k].str == member) h.permits = probe_int(sizes[k + 1].str).value_or(1);
    }
    // A permit id is 16 bytes on the wire; Redisson and rlock show it in hex.
    if (h.id.size() == permit_id_size) h.id = permit_id_hex(h.id);
    info.permits.push_back(std::move(h));
  });
  if (!a.own[2].is_null()) info.total = probe_int(a.own[2].str);
}

bool semaphore_probe_claim(const probe_answers& a, lock_info& info) {
  info.available = probe_int(a[probe_common::value].str);
  return true;
}

constexpr probe_row semaphore_probe{
    .kind = key_kind::semaphore,
    .stored_as = "string",
    .order = 10,  // any integer counter the latch does not claim
    .command_count = 3,
    .commands = &semaphore_probe_commands,
    .read = &semaphore_probe_read,
    .claim = &semaphore_probe_claim,
};

}  // namespace

void semaphore_admin_call(const lock_identity& s, std::string_view what, std::string_view n,
                          std::string_view publish, std::string_view latch,
                          std::string_view latch_ttl, release_script_call& call) {
  call.which = script::semaphore_admin;
  semaphore_keys(s.key, call.scratch, call.keys);
  call.keys[5] = latch;
  call.key_count = 6;
  call.args = {what, n, publish, latch_ttl};
  call.arg_count = 4;
}

constinit const lock_kind semaphore_kind = define_kind({
    .name = "semaphore",
    .acquire_call = &semaphore_acquire,
    .decode = &reentrant_decode,  // nil: taken; a number: how long to sleep at most
    .reconcile_question = &semaphore_question,
    .judge = &semaphore_judge,
    .release_call = &semaphore_release,
    .transfer_call = nullptr,
    .force_call = &semaphore_force,
    .leave_call = nullptr,
    .renew = script::renew_semaphore,
    .channel = &append_semaphore_channel,
    .waiting = wait_mode::lock_channel,
    .on_message = &on_semaphore_message,
    .count_question = &semaphore_question,
    .count_of = &semaphore_count,
    .field_suffix = {},
    .permit_id_field = true,
    .refusals = permits_refusals,
    .shared_key = true,  // every other permit's acquire and release changes it too
    .probe = &semaphore_probe,
});

}  // namespace rlock::detail

namespace rlock {

namespace asio = boost::asio;

namespace {

using detail::failure;
using detail::lock_state;

failure check_count(std::uint64_t n, std::string_view what) {
  if (n == 0 || n > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())) {
    return {errc::invalid_argument,
            fmt::format("semaphore: {} of {} permits (1 to 2^31 - 1)", what, n)};
  }
  return {};
}

/// The handler of an acquisition (`void(failure[, bool])`) that completes `h` with the permit
/// `p` if it acquired, and keeps a failure's words in the semaphore's last_error(); `h`'s
/// executor and cancellation slot go with it.
template <typename... Acquired>
detail::handler<Acquired...> giving(std::shared_ptr<lock_state> sem, permit p,
                                    detail::handler<std::optional<permit>> h,
                                    const asio::any_io_executor& ex) {
  auto slot = asio::get_associated_cancellation_slot(h);
  auto handler_ex = asio::get_associated_executor(h, ex);
  auto done = [sem = std::move(sem), p = std::move(p), h = std::move(h)](failure f,
                                                                         Acquired... got) mutable {
    if (f) sem->set_last_error(f);
    const bool ok = !f && (got && ...);
    std::move(h)(std::move(f), ok ? std::optional<permit>(std::move(p)) : std::nullopt);
  };
  return detail::handler<Acquired...>(
      asio::bind_cancellation_slot(slot, asio::bind_executor(handler_ex, std::move(done))), ex);
}

/// A semaphore_admin call: what, count; latched (a request id): a retry after a lost answer is
/// answered the first run's answer, and changes nothing.
void run_admin(const std::shared_ptr<lock_state>& s, std::string what, std::int64_t n,
               detail::handler<std::int64_t> h) {
  std::string words = fmt::format("semaphore '{}': {}", s->name(), what);
  // The call keeps views into these captures until it is sent.
  auto make = [what = std::move(what), count = std::to_string(n), latch = std::string()](
                  lock_state& st, detail::release_script_call& call) mutable {
    // A request id names the call (the latch keeps its answer for a retry).
    const auto in = detail::latched_release_inputs(st, {}, latch);
    detail::semaphore_admin_call(st.identity(), what, count, in.publish, latch, in.latch_ttl, call);
    call.latch = latch;
    return failure();
  };
  detail::run_script(
      s, std::move(make), std::move(words), std::move(h),
      [](lock_state&, const detail::resp3::value& reply) { return detail::as_integer(reply); });
}

}  // namespace

std::uint32_t permit::count() const noexcept { return state_of(*this)->permits; }

std::string permit::id() const { return state_of(*this)->shown_field(); }

std::string_view semaphore::name() const noexcept { return state_->name(); }
std::string semaphore::last_error() const { return state_->last_error(); }
std::string_view semaphore::key() const noexcept { return state_->key(); }
semaphore::executor_type semaphore::get_executor() const noexcept { return state_->executor(); }

void semaphore::start_take(const semaphore& sem, std::uint32_t permits,
                           std::optional<milliseconds> wait, std::optional<milliseconds> lease,
                           detail::handler<std::optional<permit>> h) {
  const auto& s = sem.state_;
  const auto ex = s->executor();
  if (auto f = check_count(permits, "an acquisition")) {
    s->set_last_error(f);
    detail::ops::deliver(ex, std::move(h), asio::cancellation_slot(), true, std::move(f),
                         std::optional<permit>());
    return;
  }
  // A hold is an owner of its own: the engine reconciles, gives back and renews it as a lock.
  auto held = detail::owner_table::new_owner(s->ctx, s->name(), detail::semaphore_kind);
  held->permits = permits;
  permit p(std::move(held));
  if (!wait) {
    lock_handle::start_acquire(p, lease, giving<>(s, p, std::move(h), ex));
  } else {
    lock_handle::start_try_acquire(p, *wait, lease, giving<bool>(s, p, std::move(h), ex));
  }
}

void semaphore::start_admin(const semaphore& sem, std::string what, std::int64_t n,
                            detail::handler<std::int64_t> h) {
  run_admin(sem.state_, std::move(what), n, std::move(h));
}

void semaphore::start_release(const semaphore& sem, std::uint32_t permits, detail::handler<> h) {
  const auto ex = sem.state_->executor();
  if (auto f = check_count(permits, "a release")) {
    sem.state_->set_last_error(f);
    detail::ops::deliver(ex, std::move(h), asio::cancellation_slot(), true, std::move(f));
    return;
  }
  run_admin(sem.state_, "release", permits,
            detail::ops::mapped<std::int64_t>(std::move(h), ex, [](std::int64_t) {}));
}

void semaphore::start_try_set(const semaphore& sem, std::uint32_t permits,
                              detail::handler<bool> h) {
  const auto ex = sem.state_->executor();
  run_admin(
      sem.state_, "set", permits,
      detail::ops::mapped<std::int64_t>(std::move(h), ex, [](std::int64_t n) { return n == 1; }));
}

void semaphore::start_release_id(const semaphore& sem, std::string id, detail::handler<bool> h) {
  const auto& s = sem.state_;
  std::string words = fmt::format("semaphore '{}': release", s->name());
  // The call keeps views into these captures until it is sent.
  auto make = [id = std::move(id), raw = std::string(), channel = std::string(),
               latch = std::string()](lock_state& st, detail::release_script_call& call) mutable {
    auto parsed = detail::permit_id_from_hex(id);
    if (!parsed) {
      return failure(errc::invalid_argument,
                     fmt::format("semaphore '{}': permit id '{}' is not 32 hex digits (the form "
                                 "permit::id() and Redisson's RPermitExpirableSemaphore give)",
                                 st.name(), id.substr(0, 64)));
    }
    raw = std::move(*parsed);
    detail::append_semaphore_channel(st.key(), channel);
    // Latched: a retry after a lost answer answers the first run's (true once it released).
    st.kind.force_call({st.key(), raw, 1}, detail::latched_release_inputs(st, channel, latch),
                       call);
    call.latch = latch;
    return failure();
  };
  detail::run_script(s, std::move(make), std::move(words), std::move(h),
                     [](lock_state&, const detail::resp3::value& reply) -> std::optional<bool> {
                       if (auto n = detail::as_integer(reply)) return *n == 1;
                       return std::nullopt;
                     });
}

// --- the awaitable forms ----------------------------------------------------------------------

asio::awaitable<permit> semaphore::acquire(std::uint32_t permits,
                                           std::optional<milliseconds> lease) {
  // A permit has no empty state: the acquisition's optional is unwrapped (always set on
  // success; a failure was thrown at the edge).
  return
      [](semaphore sem, std::uint32_t n, std::optional<milliseconds> l) -> asio::awaitable<permit> {
        auto taken = detail::awaitable_of<std::optional<permit>>(
            sem, [n, l](const semaphore& self, detail::handler<std::optional<permit>> h) {
              start_take(self, n, std::nullopt, l, std::move(h));
            });
        co_return std::move(*co_await std::move(taken));
      }(*this, permits, lease);
}

asio::awaitable<std::optional<permit>> semaphore::try_acquire(std::uint32_t permits,
                                                              milliseconds wait,
                                                              std::optional<milliseconds> lease) {
  return detail::awaitable_of<std::optional<permit>>(
      *this,
      [permits, wait, lease](const semaphore& self, detail::handler<std::optional<permit>> h) {
        start_take(self, permits, wait, lease, std::move(h));
      });
}

asio::awaitable<void> semaphore::release(std::uint32_t permits) {
  return detail::awaitable_of<>(*this, [permits](const semaphore& self, detail::handler<> h) {
    start_release(self, permits, std::move(h));
  });
}

asio::awaitable<std::int64_t> semaphore::available() { return admin_form("available", 0); }

asio::awaitable<bool> semaphore::try_set_permits(std::uint32_t permits) {
  return detail::awaitable_of<bool>(*this,
                                    [permits](const semaphore& self, detail::handler<bool> h) {
                                      start_try_set(self, permits, std::move(h));
                                    });
}

asio::awaitable<std::int64_t> semaphore::add_permits(std::int64_t delta) {
  return admin_form("add", delta);
}

asio::awaitable<std::int64_t> semaphore::drain() { return admin_form("drain", 0); }

asio::awaitable<std::int64_t> semaphore::admin_form(const char* what, std::int64_t n) {
  return detail::awaitable_of<std::int64_t>(
      *this, [what, n](const semaphore& self, detail::handler<std::int64_t> h) {
        start_admin(self, what, n, std::move(h));
      });
}

asio::awaitable<bool> permit_expirable_semaphore::release(std::string_view permit_id) {
  return detail::awaitable_of<bool>(
      semaphore_, [id = std::string(permit_id)](const semaphore& self, detail::handler<bool> h) {
        semaphore::start_release_id(self, id, std::move(h));
      });
}

}  // namespace rlock
