#pragma once

// The acquisition of a lock of any kind as a sans-I/O state machine, in the shape of Boost.Redis's
// exec_fsm: the I/O shell (acquire_shell.cpp) feeds it events (a reply decoded by the lock kind, a
// wake-up, the caller's cancellation, the caller's bound passing) and does what the returned
// action says. Every fault rule of an acquisition lives here, once, for every kind:
//
// - An attempt is not idempotent. Written and unanswered when its connection dies, it is
//   reconciled (the kind's question to the server says whether it ran), never written again.
// - **The caller's wait is the bound.** try_lock(wait) completes at its wait whatever the server
//   does: an attempt or question still unanswered then goes on in the background, and a hold it
//   made is given back. Only the first attempt of try_lock() with no wait (one attempt) is
//   bounded by config::command_timeout instead, as a single round trip.
// - A hold taken for a caller who was told otherwise (cancelled, out of time) is given back.
// - **A hold is never handed out after its holder must stop believing.** An answer that comes
//   after the hold's lease, counted from the attempt's write, could have run out on the server
//   (a reconciled attempt after a long outage, a server stalled past the lease) is given back and
//   the attempt made again while the bound allows: the server may have given that hold to
//   another owner already. After max_late_holds such answers the acquisition fails instead: a
//   lease shorter than the round trip would retry for ever.
// - A cancellation withdraws a queued attempt, interrupts a sleep, and otherwise waits for the
//   answer that is due (an acquisition it made is given back before the caller is told), unless
//   the connection is down: then the caller is told at once and the answer settles it later.
#include <chrono>
#include <cstdint>

namespace rlock::detail {

class acquire_fsm {
 public:
  using clock = std::chrono::steady_clock;
  using milliseconds = std::chrono::milliseconds;

  /// What the shell does next.
  enum class action : std::uint8_t {
    attempt,    // send the kind's acquire attempt, bounded by request_deadline()
    reconcile,  // ask the kind's reconcile question, bounded by request_deadline()
    join,       // join the lock's channel in the wait hub, then call on_joined()
    sleep,      // sleep in the hub until sleep_until() (a wake-up may end it earlier)
    interrupt,  // end the sleep now (its end comes as on_woken)
    withdraw,   // take back the queued request (it completes as not written)
    give_back,  // release the hold an answer just took (then on_given_back)
    complete,   // tell the caller verdict(); then call resume() if it says so (`detached`)
    wait,       // nothing until the next event
    done,       // the operation is over: leave the hub, destroy
  };

  /// What the caller is told.
  enum class verdict : std::uint8_t {
    acquired,
    not_acquired,  // busy for the whole wait (or for its one attempt)
    cancelled,
    timed_out,  // no answer from the server at all within the caller's bound
    failed,     // the shell's failure (an error reply, the hub's refusal, a closed client)
  };

  /// What an attempt's answer says (decoded by the lock kind, or the transport's outcome).
  enum class answer : std::uint8_t {
    acquired,      // taken or re-entered (the shell has recorded the hold)
    unsynced,      // taken, but too few replicas acknowledged it: to be given back
    busy,          // held by another owner; `ttl` is the holder's remaining lease
    unknown,       // written, and no answer (connection lost, or the request's own bound)
    not_written,   // never reached the server (withdrawn, out of time while queued)
    not_run,       // the server answered that it did not run it (NOSCRIPT): attempt again
    failed,        // an error reply, a malformed reply, fail-fast while down
    ran_no_token,  // reconciled as run, but the kind could not recover its result
  };

  /// Why a waiter woke: an unlock message, its channel confirmed, its timer (the holder's lease
  /// or the bound), the hub's failure, or a local handoff that gave it the lock (the shell has
  /// recorded the hold).
  enum class wake : std::uint8_t { message, subscribed, timer, failed, granted };

  /// `wait`: none = no bound (lock()); 0 = one attempt (try_lock()); otherwise the caller's
  /// bound (a bound too far to represent is none). `round_trip` bounds one attempt
  /// (config::command_timeout); `default_nap` is how long a waiter sleeps when the holder's lease
  /// has no TTL to go by; `longest_nap` (the longer of the acquisition's lease and the
  /// watchdog's) caps every sleep, whatever the server answered.
  acquire_fsm(clock::time_point now, const milliseconds* wait, milliseconds round_trip,
              milliseconds default_nap, milliseconds longest_nap) noexcept;

  // --- events ---------------------------------------------------------------------------------
  /// The operation starts (cancelled: the caller cancelled before it started).
  action start(bool cancelled) noexcept;
  /// The caller's arguments are invalid: the shell's failure is the verdict.
  action reject() noexcept { return tell(verdict::failed); }
  /// The answer to an attempt; `ttl` for busy (negative: the holder's key has no TTL).
  action on_attempt(answer a, milliseconds ttl, clock::time_point now) noexcept;
  /// The answer to a reconcile question: acquired (it ran), busy (it did not), unknown (no answer
  /// within request_deadline()), failed, ran_no_token.
  action on_reconciled(answer a, clock::time_point now) noexcept;
  /// The waiter joined its channel.
  action on_joined() noexcept { return sleep_or_end(last_now_); }
  /// The waiter's sleep ended. `reserved`: a local handoff to it is in flight, so it must not
  /// retry on its own (its attempt could re-enter the lock handed to it meanwhile): it sleeps on
  /// until the handoff's answer wakes it, unless cancelled, out of time or failed.
  action on_woken(wake why, clock::time_point now, bool reserved = false) noexcept;
  /// The caller cancelled; `written`: the request in flight (if any) reached the server;
  /// `connected`: the session is up (a written request's answer is due).
  action on_cancel(bool written, bool connected) noexcept;
  /// The caller's bound passed while a written request is unanswered (the request's deadline
  /// hook): the caller is told; the answer, when it comes, is still processed.
  action on_bound_passed() noexcept;
  /// A give-back's release completed (`failed`: it did not; the shell keeps why).
  action on_given_back(bool failed, clock::time_point now) noexcept;
  /// The hold the answer about to be reported took is believed until `until` (its write plus
  /// its lease, less the watchdog's margin): reported at or after it, it is given back.
  void hold_believed_until(clock::time_point until) noexcept { hold_until_ = until; }
  /// After `complete` when detached(): what the operation still waits for.
  action resume() noexcept { return after_telling_; }

  // --- what the actions need ----------------------------------------------------------------
  verdict outcome() const noexcept { return verdict_; }
  /// The caller was told and the operation goes on (for its request's answer).
  bool detached() const noexcept { return told_; }
  /// The bound of the request about to be sent.
  clock::time_point request_deadline() const noexcept;
  clock::time_point sleep_until() const noexcept { return sleep_until_; }
  /// The attempt about to be sent uses up a wake-up of the waiter (passed on if never written).
  bool retry_after_wake() const noexcept { return wake_taken_; }
  /// An attempt's answer that was unknown and then reconciled as not run: the kind's state notes
  /// that a late run could still add a hold (lock_state::maybe_orphaned).
  bool reconciled_not_run() const noexcept { return not_run_; }
  /// The give-back under way is of a hold answered too late to believe: the attempt is made
  /// again after it (and a release that finds the hold gone already is no failure).
  bool giving_back_late_hold() const noexcept { return late_hold_; }
  /// Late holds one operation gives back before it fails (the shell names why).
  static constexpr std::uint8_t max_late_holds = 3;
  /// This give-back is of the max_late_holds-th late hold: the shell fails the operation.
  bool late_holds_exhausted() const noexcept { return late_holds_ >= max_late_holds; }

 private:
  enum class phase : std::uint8_t { idle, attempting, reconciling, parked, giving_back, over };

  action tell(verdict v, action then = action::done) noexcept;
  action attempt() noexcept;
  action sleep_or_end(clock::time_point now) noexcept;
  /// An answer took a hold for this operation.
  action on_hold() noexcept;
  /// Busy, or reconciled as not run: wait on, or end.
  action on_not_taken(clock::time_point now, bool reconciled) noexcept;

  clock::time_point deadline_;  // the caller's bound (max: none)
  clock::time_point sleep_until_{};
  clock::time_point hold_until_ = clock::time_point::max();
  clock::time_point last_now_;
  milliseconds default_nap_;
  milliseconds longest_nap_;
  milliseconds ttl_{-1};
  std::uint8_t short_waits_ = 0;  // busy answers in a row that said "at most 1 ms more"
  std::uint8_t late_holds_ = 0;   // holds answered too late to believe, given back
  phase phase_ = phase::idle;
  verdict verdict_ = verdict::not_acquired;
  verdict pending_ = verdict::not_acquired;  // told after a give-back completes
  action after_telling_ = action::done;
  bool single_attempt_;
  bool cancelled_ = false;
  bool told_ = false;
  bool late_hold_ = false;
  bool answered_ = false;  // the server answered this operation at least once
  bool joined_ = false;
  bool wake_taken_ = false;
  bool not_run_ = false;
};

}  // namespace rlock::detail
