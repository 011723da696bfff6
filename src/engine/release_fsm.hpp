#pragma once

// What a release's answer, or its absence, means: sans-I/O, as acquire_fsm is for an
// acquisition. The shell (release_shell.cpp) sends the unlock script and does what this says; the
// owner's bookkeeping of the answer is lock_state::on_released.
//
// A release is made idempotent by Redisson's unlock latch: written and unanswered when its
// connection dies, the session writes it again with the same request id, and the retry returns
// the first run's answer (docs/design/fault-model.md). So the machine sees one answer or one
// failure per release. A release that hands the lock to a coroutine of this client parked on it
// (a transfer: the local handoff) may have handed it over even when its answer says nothing
// certain: the server is asked before the waiter is let go.

#include "rlock/error.hpp"

#include <cstdint>
#include <system_error>

namespace rlock::detail {

class release_fsm {
 public:
  /// `transfer`: the release hands the lock over (a handoff ticket was reserved).
  explicit release_fsm(bool transfer) noexcept : transfer_(transfer) {}

  /// What an answer asks the shell to do, in this order.
  struct plan {
    /// Ask the server whether the transfer handed the lock over (the receiver's reconcile
    /// question), then grant the waiter or let it retry: the answer says nothing certain.
    bool settle_transfer = false;
    /// Record the answer in the owner's bookkeeping (lock_state::on_released); a handoff's
    /// "handed over" (2) is recorded as "released" (1).
    bool record = false;
    bool as_released = false;
    /// Let the waiter of the transfer go, with the hold or without it.
    bool finish_handoff = false;
    bool handed_over = false;
    /// The release was never written: undo what was done before it was sent.
    bool undo = false;
    /// The latch has done its work: delete it (not awaited).
    bool drop_latch = false;
    /// Tell the caller: the outcome's error (record) or the failure (`ec`).
    bool tell = false;
    /// The caller was told the outcome is unknown before this answer came: log what it was.
    bool late = false;
  };

  /// The bound passed with the release written and unanswered: whether to tell the caller its
  /// outcome is unknown (once; the answer, when it comes, still updates the owner).
  bool on_deadline() noexcept;

  /// The release's answer (`ec` empty: `reply_number` is the script's integer answer, or
  /// `reply_null`), or why there is none. `written`: it reached the socket, so a failure leaves
  /// its outcome unknown. errc::replicas_not_synced counts as answered: released on the master.
  plan on_answer(std::error_code ec, bool reply_null, bool reply_is_number,
                 std::int64_t reply_number, bool written) noexcept;

  bool caller_told() const noexcept { return told_; }

 private:
  bool transfer_;
  bool told_ = false;
};

}  // namespace rlock::detail
