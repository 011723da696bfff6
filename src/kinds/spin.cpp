// Redisson's RSpinLock: RLock's hash and acquire; releases publish nothing and waiters poll
// with config::spin_lock's backoff.
#include "engine/define_kind.hpp"
#include "engine/engine_context.hpp"
#include "kinds/hash_lock.hpp"
#include "kinds/registry.hpp"
#include "rlock/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>

namespace rlock::detail {

namespace {

using namespace hash_lock;

void spin_release(const lock_identity& s, const release_inputs& in, release_script_call& call) {
  call.which = script::release_spin;
  call.keys[0] = s.key;
  call.keys[1] = in.latch;
  call.key_count = 2;
  call.args = {in.lease_ms, s.field, in.latch_ttl};
  call.arg_count = 3;
}

void spin_force(const lock_identity& s, const release_inputs& in, release_script_call& call) {
  call.which = script::force_unlock_spin;
  call.keys[0] = s.key;
  call.keys[1] = in.latch;
  call.key_count = 2;
  call.args[0] = in.latch_ttl;
  call.arg_count = 1;
}

/// Redisson's exponential backoff (config::spin_lock): from `initial`, times `multiplier` plus a
/// jitter that grows with the sleeps, at most `cap`.
std::chrono::milliseconds spin_backoff(const engine_config& c, backoff_state& st) {
  thread_local std::minstd_rand jitter_source(std::random_device{}());
  const auto& b = c.spin_lock;
  const auto cap = static_cast<std::uint32_t>(b.cap.count());
  if (st.next_ms == 0) st.next_ms = static_cast<std::uint32_t>(b.initial.count());
  const auto nap = std::chrono::milliseconds(st.next_ms);
  if (st.next_ms < cap) {
    if (st.naps < 255) ++st.naps;
    const auto jitter = std::uniform_int_distribution<std::uint32_t>(0, st.naps)(jitter_source);
    st.next_ms = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(cap, std::uint64_t{st.next_ms} * b.multiplier + jitter));
  }
  return nap;
}

/// config::spin_lock: Redisson's exponential backoff needs a first sleep, a cap at least that
/// long, and a multiplier.
std::string spin_settings_error(const config& c) {
  const auto& spin = c.spin_lock;
  if (spin.initial.count() <= 0 || spin.cap < spin.initial || spin.multiplier == 0) {
    return fmt::format(
        "spin_lock backoff needs initial > 0, cap >= initial and multiplier >= 1, got {} ms, "
        "{} ms, {}",
        spin.initial.count(), spin.cap.count(), spin.multiplier);
  }
  return {};
}

}  // namespace

constinit const lock_kind spin_kind = define_kind({
    .name = "spin",
    .acquire_call = &reentrant_acquire,  // RSpinLock's acquire is RLock's
    .decode = &reentrant_decode,
    .reconcile_question = &reentrant_question,
    .judge = &reentrant_judge,
    .release_call = &spin_release,
    .transfer_call = nullptr,  // its waiters are not in the hub: nobody to hand over to
    .force_call = &spin_force,
    .leave_call = nullptr,
    .renew = script::renew,
    .channel = &append_unlock_channel,  // names the latch's neighbour only: never subscribed
    .waiting = wait_mode::poll,
    .on_message = &on_unlock_message,
    .settings_error = &spin_settings_error,
    .backoff = &spin_backoff,
});

}  // namespace rlock::detail
