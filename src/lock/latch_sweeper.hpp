#pragma once

#include "session/session.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rlock::detail {

/// Deletes unlock latch keys once their release has been answered (the latch only matters while a
/// retry may still come), one `DEL` per turn of the event loop however many unlocks completed in
/// it: under load the latch costs a fraction of a command per unlock, not one. Not awaited by the
/// unlocks; a latch that is not deleted expires by itself (its TTL). `client::close()` flushes
/// and waits for the DELs (bounded), so a closed client leaves no latch behind.
class latch_sweeper {
 public:
  latch_sweeper(boost::asio::any_io_executor ex, session& s, std::chrono::milliseconds timeout)
      : executor_(std::move(ex)), session_(s), timeout_(timeout) {}

  /// The object whose lifetime bounds this one's (the client); a posted sweep keeps it alive.
  void set_owner(std::weak_ptr<void> owner) { owner_ = std::move(owner); }

  void add(std::string key);
  /// Latches waiting for their DEL.
  std::size_t pending() const noexcept { return keys_.size(); }
  /// DELs written and not answered yet.
  std::size_t in_flight() const noexcept { return in_flight_; }

  /// Sends the pending DELs now, not a turn later (close() is about to end the session).
  void flush() { sweep(); }
  /// Called once when no DEL is in flight any more (replaces an earlier one; empty: none).
  void on_drained(std::function<void()> f) { drained_ = std::move(f); }

 private:
  void sweep();
  void answered();

  boost::asio::any_io_executor executor_;
  session& session_;
  std::chrono::milliseconds timeout_;
  std::weak_ptr<void> owner_;
  std::vector<std::string> keys_;
  bool scheduled_ = false;
  std::size_t in_flight_ = 0;
  std::function<void()> drained_;
};

}  // namespace rlock::detail
