#pragma once

// A quorum lock runs on its first node's executor, and some of its work goes on after its
// caller was answered (a release's stragglers, give-backs, late grants): each piece goes to
// another node's executor and comes back to the lock's. Counted here, so that whoever lets the
// first node's io_context go can first wait for every piece to be back (blocking::quorum_lock's
// destructor does).
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>

namespace rlock::detail {

class quorum_flights {
 public:
  /// One piece out, from its making to its destruction (after it ran on the lock's executor,
  /// or dropped unrun). Move-only; a moved-from ticket counts nothing.
  class ticket {
   public:
    explicit ticket(std::shared_ptr<quorum_flights> f) : f_(std::move(f)) { f_->add(); }
    ticket(ticket&&) noexcept = default;
    ticket& operator=(ticket&&) = delete;
    ticket(const ticket&) = delete;
    ticket& operator=(const ticket&) = delete;
    ~ticket() {
      if (f_) f_->done();
    }

   private:
    std::shared_ptr<quorum_flights> f_;
  };

  /// Until no piece is out, or for `bound` at most; whether none is. Any thread but the lock's
  /// executor's (the pieces come back through it).
  bool wait_for(std::chrono::milliseconds bound) {
    std::unique_lock lock(m_);
    return cv_.wait_for(lock, bound, [this] { return out_ == 0; });
  }

 private:
  void add() {
    const std::lock_guard lock(m_);
    ++out_;
  }
  void done() {
    {
      const std::lock_guard lock(m_);
      --out_;
    }
    cv_.notify_all();
  }

  std::mutex m_;
  std::condition_variable cv_;
  std::size_t out_ = 0;
};

}  // namespace rlock::detail
