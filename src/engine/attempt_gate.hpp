#pragma once

// At most `limit` acquire attempts without a bound (lock(), and its retries) in flight per
// client; the others wait their turn in FIFO order. A burst of 100 000 lock() calls (bench S6, a
// fleet restarting) otherwise puts 100 000 requests in flight at once, with their records,
// command bytes and handlers, and a write buffer of tens of megabytes: Redis runs them one at a
// time anyway, and the memory they leave behind stays in the process. Attempts with a bound
// (try_lock with a wait) never wait here: nothing would end their wait at their bound. Sans-I/O.
#include <boost/intrusive/list.hpp>

#include <cstddef>

namespace rlock::detail {

class attempt_gate {
 public:
  /// Lives in the acquisition: waiting for a turn allocates nothing. It leaves the line on its
  /// own (withdraw(), or its destruction): the gate need not be at hand.
  struct entry : boost::intrusive::list_base_hook<
                     boost::intrusive::link_mode<boost::intrusive::auto_unlink>> {
    bool queued() const noexcept { return is_linked(); }
    /// Out of the line (its caller cancelled); nothing if it is not waiting.
    void withdraw() noexcept { unlink(); }
  };

  /// `limit` 0: no limit (every attempt is let through and counted).
  explicit attempt_gate(std::size_t limit) noexcept : limit_(limit) {}
  attempt_gate(const attempt_gate&) = delete;
  attempt_gate& operator=(const attempt_gate&) = delete;
  ~attempt_gate() { queue_.clear(); }

  /// True: `e` may send its attempt now (counted until leave()). False: it waits in line, and a
  /// leave() returns it when its turn comes.
  bool enter(entry& e) {
    if (limit_ == 0 || in_flight_ < limit_) {
      ++in_flight_;
      return true;
    }
    queue_.push_back(e);
    return false;
  }
  /// A counted attempt was answered (or failed): the oldest waiting entry takes its place and is
  /// returned (it may send now), or null.
  entry* leave() noexcept {
    if (!queue_.empty()) {
      entry& next = queue_.front();
      queue_.pop_front();
      return &next;
    }
    --in_flight_;
    return nullptr;
  }
  /// The oldest waiting entry, taken out of the line without a turn (the client is closing).
  entry* take_waiting() noexcept {
    if (queue_.empty()) return nullptr;
    entry& e = queue_.front();
    queue_.pop_front();
    return &e;
  }
  std::size_t in_flight() const noexcept { return in_flight_; }
  std::size_t waiting() const noexcept { return queue_.size(); }

 private:
  std::size_t limit_;
  std::size_t in_flight_ = 0;
  // Entries unlink themselves: no constant-time size (waiting() counts; it is a statistic).
  boost::intrusive::list<entry, boost::intrusive::constant_time_size<false>> queue_;
};

}  // namespace rlock::detail
