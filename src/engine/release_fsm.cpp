#include "engine/release_fsm.hpp"

#include <utility>

namespace rlock::detail {

bool release_fsm::on_deadline() noexcept { return !std::exchange(told_, true); }

release_fsm::plan release_fsm::on_answer(std::error_code ec, bool reply_null, bool reply_is_number,
                                         std::int64_t reply_number, bool written) noexcept {
  plan p;
  // Released on the master: that is what unlock means (the shell logs the missing replicas).
  if (ec == errc::replicas_not_synced) ec = {};
  p.late = told_;
  p.tell = !std::exchange(told_, true);
  if (transfer_ && ((ec && written) || (!ec && reply_null))) {
    // A transfer written and not answered (unknown), or answered "not the owner" (which a
    // retry reads once the first run's latch is gone), may have handed the lock over: never
    // assumed either way.
    p.settle_transfer = true;
    transfer_ = false;
  }
  if (!ec) {
    const bool handed_over = transfer_ && reply_is_number && reply_number == 2;
    p.record = true;
    p.as_released = handed_over;
    if (transfer_) {
      p.finish_handoff = true;
      p.handed_over = handed_over;
      transfer_ = false;
    }
    p.drop_latch = true;
    return p;
  }
  p.undo = !written;
  if (transfer_) {
    // Never written: the transfer certainly did not run, and the waiter retries on its own.
    p.finish_handoff = true;
    p.handed_over = false;
    transfer_ = false;
  }
  return p;
}

}  // namespace rlock::detail
