#pragma once

// A local handoff (config::local_handoff): a final unlock that finds a coroutine of the same
// client parked on the lock hands the hold to it in the unlock's own script, so the waiter learns
// it holds the lock from the unlock's answer, with no publish, wake-up or acquire round trip.
//
// The unlock reserves the waiter (it must not retry meanwhile: its attempt could re-enter the
// lock handed to it), sends the transfer, and on the answer either grants the hold to the waiter
// or, if the waiter left meanwhile (cancelled, out of time), gives it back. The ticket is shared
// by both sides; either may finish first.
#include "engine/decimal.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

namespace rlock::detail {

struct lock_state;

struct handoff_ticket {
  std::shared_ptr<lock_state> to;  // the new owner
  void* waiter_op = nullptr;       // the waiting acquisition; null once it left
  std::chrono::milliseconds lease{0};
  bool watchdog = false;  // the new hold is kept by the watchdog
  decimal lease_arg;
  std::uint32_t streak = 0;  // the new holder's lock_state::handoff_streak
  std::chrono::steady_clock::time_point streak_since{};
};

/// Reserves a parked waiter of this client on `releasing`'s lock for a handoff (another owner,
/// same kind, the streak within config::local_handoff); null if there is none or the kind does
/// not hand off.
std::shared_ptr<handoff_ticket> reserve_handoff(lock_state& releasing, std::string_view channel);

/// The transfer's answer: `handed_over` (the script ran and the new owner holds the lock, its
/// lease counted from `sent`), or not (still held, not the owner, an error): the waiter is woken
/// to retry, or to take the hold.
void finish_handoff(const std::shared_ptr<handoff_ticket>& t, bool handed_over,
                    std::chrono::steady_clock::time_point sent);

}  // namespace rlock::detail
