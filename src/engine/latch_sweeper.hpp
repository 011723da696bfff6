#pragma once

#include "session/session.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::detail {

/// Deletes unlock latch keys once their release has been answered (the latch only matters while a
/// retry may still come). Batched: one `DEL` per `max_batch` answered unlocks, or `max_delay`
/// after the first of a batch, whichever comes first, so an unlock costs a small fraction of a
/// command (S1 paid a whole `DEL` and its answer per unlock when every event-loop turn sent
/// one). Deleting later is safe: a latch can only answer a retry of its own unlock, and none
/// comes once the answer is in. Not awaited by the unlocks; a latch that is not deleted expires
/// by itself (its TTL). `client::close()` flushes and waits for the DELs (bounded), so a closed
/// client leaves no latch behind.
class latch_sweeper {
 public:
  /// At most this many latches wait for one DEL, and at most this long.
  static constexpr std::size_t max_batch = 128;
  static constexpr std::chrono::milliseconds max_delay{20};

  latch_sweeper(boost::asio::any_io_executor ex, session& s, std::chrono::milliseconds timeout)
      : session_(s), timeout_(timeout), timer_(std::move(ex)) {}

  /// The object whose lifetime bounds this one's (the client); a pending sweep keeps it alive.
  void set_owner(std::weak_ptr<void> owner) { owner_ = std::move(owner); }

  /// Queues the latch key `key` for deletion (copied into one buffer: no allocation per key).
  void add(std::string_view key);
  /// Latches waiting for their DEL.
  std::size_t pending() const noexcept { return ends_.size(); }
  /// DELs written and not answered yet.
  std::size_t in_flight() const noexcept { return in_flight_; }

  /// Sends the pending DELs now (close() is about to end the session).
  void flush() { sweep(); }
  /// Called once when no DEL is in flight any more (replaces an earlier one; empty: none).
  void on_drained(std::function<void()> f) { drained_ = std::move(f); }

 private:
  void sweep();
  void answered();

  session& session_;
  std::chrono::milliseconds timeout_;
  std::weak_ptr<void> owner_;
  std::string keys_;                 // the pending keys, back to back
  std::vector<std::uint32_t> ends_;  // where each ends in keys_
  boost::asio::steady_timer timer_;  // the batch's deadline (max_delay)
  bool armed_ = false;
  std::size_t in_flight_ = 0;
  std::function<void()> drained_;
};

}  // namespace rlock::detail
