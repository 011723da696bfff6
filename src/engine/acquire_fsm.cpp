#include "engine/acquire_fsm.hpp"

#include "engine/deadline.hpp"

#include <algorithm>
#include <utility>

namespace rlock::detail {

using action = acquire_fsm::action;

acquire_fsm::acquire_fsm(clock::time_point now, const milliseconds* wait, milliseconds round_trip,
                         milliseconds default_nap, milliseconds longest_nap) noexcept
    : last_now_(now),
      default_nap_(default_nap),
      longest_nap_(longest_nap),
      single_attempt_(wait && wait->count() <= 0) {
  // One attempt is one round trip; a wait is the caller's own bound; lock() has none.
  deadline_ = single_attempt_ ? saturating_add(now, round_trip)
              : wait          ? saturating_add(now, *wait)
                              : clock::time_point::max();
}

acquire_fsm::clock::time_point acquire_fsm::request_deadline() const noexcept {
  // Once the caller was told, a question stays open until answered or the client closes: the
  // hold it may have made must be found and given back.
  return told_ ? clock::time_point::max() : deadline_;
}

action acquire_fsm::tell(verdict v, action then) noexcept {
  told_ = true;
  verdict_ = v;
  after_telling_ = then;
  if (then == action::done) phase_ = phase::over;
  return action::complete;
}

action acquire_fsm::attempt() noexcept {
  phase_ = phase::attempting;
  return action::attempt;
}

action acquire_fsm::start(bool cancelled) noexcept {
  if (cancelled) {
    cancelled_ = true;
    return tell(verdict::cancelled);
  }
  return attempt();
}

action acquire_fsm::on_hold() noexcept {
  const auto until = std::exchange(hold_until_, clock::time_point::max());
  if (cancelled_ || told_) {
    phase_ = phase::giving_back;
    pending_ = verdict::cancelled;
    return action::give_back;
  }
  if (last_now_ >= until) {
    // Its lease may have run out on the server before this answer: handing it out would make
    // a believing holder the server no longer backs. Given back, then tried again.
    phase_ = phase::giving_back;
    late_hold_ = true;
    if (late_holds_ < max_late_holds) ++late_holds_;
    return action::give_back;
  }
  return tell(verdict::acquired);
}

action acquire_fsm::on_not_taken(clock::time_point now, bool reconciled) noexcept {
  if (told_) {
    phase_ = phase::over;
    return action::done;
  }
  if (cancelled_) return tell(verdict::cancelled);
  if (reconciled) {
    // The attempt never ran: it is tried again (it used up no wake-up) while the bound allows.
    return now < deadline_ ? attempt() : tell(verdict::not_acquired);
  }
  if (single_attempt_) return tell(verdict::not_acquired);
  if (!joined_) {
    joined_ = true;
    phase_ = phase::parked;
    return action::join;
  }
  return sleep_or_end(now);
}

action acquire_fsm::sleep_or_end(clock::time_point now) noexcept {
  if (cancelled_) return tell(verdict::cancelled);
  if (now >= deadline_) return tell(verdict::not_acquired);
  // Until the holder's lease runs out (key expiry publishes nothing), never past the bound, and
  // never longer than a lease: whatever the server answered (decoded through server_wait), a
  // waiter looks again at least once per lease, and a sleep always lies ahead.
  // A server that keeps answering "1 ms more" (a score it never reclaims, a clock that does not
  // move) gets a wait that doubles from the second such answer on, up to a second: never a
  // round trip a millisecond.
  auto nap = ttl_.count() >= 0 ? ttl_ : default_nap_;
  if (short_waits_ >= 2) {
    nap = std::max(nap, std::min(default_nap_,
                                 milliseconds(std::int64_t{1} << std::min(short_waits_ - 1, 10))));
  }
  nap = std::clamp(nap, milliseconds(1), std::max(longest_nap_, milliseconds(1)));
  const auto until = saturating_add(now, nap);
  sleep_until_ = until < deadline_ ? until : deadline_;
  phase_ = phase::parked;
  return action::sleep;
}

action acquire_fsm::on_attempt(answer a, milliseconds ttl, clock::time_point now) noexcept {
  last_now_ = now;
  wake_taken_ = false;
  switch (a) {
    case answer::acquired:
      answered_ = true;
      return on_hold();
    case answer::unsynced:
      answered_ = true;
      phase_ = phase::giving_back;
      pending_ = cancelled_ ? verdict::cancelled : verdict::failed;
      return action::give_back;
    case answer::busy:
      answered_ = true;
      ttl_ = ttl;
      short_waits_ = ttl >= milliseconds(0) && ttl <= milliseconds(1)
                         ? static_cast<std::uint8_t>(std::min(short_waits_ + 1, 16))
                         : 0;
      return on_not_taken(now, false);
    case answer::unknown:
      phase_ = phase::reconciling;
      if (cancelled_ && !told_) return tell(verdict::cancelled, action::reconcile);
      return action::reconcile;
    case answer::not_run:
      // Refused unrun: tried again at once (it used up no wake-up) while the bound allows.
      answered_ = true;
      return on_not_taken(now, true);
    case answer::not_written:
      // Out of the caller's time while queued: it never reached the server.
      if (told_) break;
      if (cancelled_) return tell(verdict::cancelled);
      return tell(answered_ ? verdict::not_acquired : verdict::timed_out);
    case answer::failed:
    case answer::ran_no_token:
      if (told_) break;
      return tell(cancelled_ ? verdict::cancelled : verdict::failed);
  }
  phase_ = phase::over;
  return action::done;
}

action acquire_fsm::on_reconciled(answer a, clock::time_point now) noexcept {
  last_now_ = now;
  switch (a) {
    case answer::acquired:
      answered_ = true;
      return on_hold();
    case answer::ran_no_token:
      // It ran, but the hold cannot be handed out as the kind promises: given back.
      answered_ = true;
      phase_ = phase::giving_back;
      pending_ = cancelled_ ? verdict::cancelled : verdict::failed;
      return action::give_back;
    case answer::busy:
    case answer::unsynced:
    case answer::not_run:
      answered_ = true;
      not_run_ = true;
      return on_not_taken(now, true);
    case answer::unknown:
    case answer::not_written:
      // The question is out of the caller's time: the caller is told; the question stays open.
      if (!told_) {
        return tell(answered_ ? verdict::not_acquired : verdict::timed_out, action::reconcile);
      }
      return action::reconcile;
    case answer::failed:
      // Closed, or fail-fast while down: nobody can learn more. A hold it made expires with
      // its lease; the watchdog does not renew it.
      if (told_) break;
      return tell(cancelled_ ? verdict::cancelled : verdict::failed);
  }
  phase_ = phase::over;
  return action::done;
}

action acquire_fsm::on_woken(wake why, clock::time_point now, bool reserved) noexcept {
  last_now_ = now;
  if (why == wake::failed) return tell(verdict::failed);
  if (why == wake::granted) {
    // Handed over by an unlock of this client: the hold is this operation's (or, cancelled,
    // given back).
    answered_ = true;
    return on_hold();
  }
  if (cancelled_) return tell(verdict::cancelled);
  if (why == wake::timer && now >= deadline_) return tell(verdict::not_acquired);
  if (reserved) return sleep_or_end(now);
  // A timer before the bound: the holder's lease ran out. Otherwise an unlock message, or the
  // subscription confirmed (an unlock may have gone unheard before it).
  wake_taken_ = why != wake::timer;
  return attempt();
}

action acquire_fsm::on_cancel(bool written, bool connected) noexcept {
  if (told_ || cancelled_) return action::wait;
  cancelled_ = true;
  switch (phase_) {
    case phase::parked:
      return action::interrupt;
    case phase::attempting:
      if (!written) return action::withdraw;
      [[fallthrough]];
    case phase::reconciling:
      // The answer is due at once while connected (a hold it made is given back before the
      // caller is told); with the connection down, the caller does not wait for the reconnect.
      if (!connected) return tell(verdict::cancelled, action::wait);
      return action::wait;
    default:
      return action::wait;
  }
}

action acquire_fsm::on_bound_passed() noexcept {
  if (told_) return action::wait;
  return tell(answered_ ? verdict::not_acquired : verdict::timed_out, action::wait);
}

action acquire_fsm::on_given_back(bool failed, clock::time_point now) noexcept {
  last_now_ = now;
  const bool again = std::exchange(late_hold_, false);
  if (failed) pending_ = verdict::failed;
  if (told_) {
    phase_ = phase::over;
    return action::done;
  }
  // A late hold given back: the attempt is made again (it used up no wake-up) while the bound
  // allows, as one that did not run.
  if (again && !failed) return on_not_taken(now, true);
  return tell(pending_);
}

}  // namespace rlock::detail
