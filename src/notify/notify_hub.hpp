#pragma once

#include "conn/connection.hpp"
#include "resp3/value.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>

namespace rlock::detail {

/// Channel → FIFO of local waiters. SUBSCRIBE goes out with a channel's first waiter and
/// UNSUBSCRIBE after its last, so a client holds one subscription per name however many of its
/// coroutines wait. An unlock message "0" wakes the oldest waiter not yet woken, "1" wakes all:
/// one unlock costs one retry per client, not one per waiter.
///
/// Waking is a flag plus a cancelled timer (the waiter sleeps on its timer until its retry
/// time), so a wake-up that arrives while the waiter is busy is kept, not lost.
class notify_hub {
 public:
  struct channel_state;

  /// Lives in the waiting coroutine's frame: waiting allocates nothing beyond the timer.
  struct waiter {
    explicit waiter(const boost::asio::any_io_executor& ex)
        : timer(ex, boost::asio::steady_timer::time_point::max()) {}
    waiter(const waiter&) = delete;
    waiter& operator=(const waiter&) = delete;

    boost::asio::steady_timer timer;
    bool woken = false;       // retry now; cleared by the waiter when it retries
    bool by_message = false;  // the latest wake-up was an unlock message
    std::error_code failed;   // the hub was shut down or the connection lost
    channel_state* channel = nullptr;
    waiter* prev = nullptr;
    waiter* next = nullptr;
  };

  struct channel_state {
    std::string name;
    waiter* head = nullptr;
    waiter* tail = nullptr;
    std::size_t size = 0;
    bool want = false;            // the last command sent for it was SUBSCRIBE
    std::size_t outstanding = 0;  // SUBSCRIBE / UNSUBSCRIBE sent, confirmation not yet pushed
    bool active() const noexcept { return want && outstanding == 0; }
  };

  explicit notify_hub(connection& conn) : conn_(conn) {}
  notify_hub(const notify_hub&) = delete;
  notify_hub& operator=(const notify_hub&) = delete;

  /// Links `w` at the tail of `channel`'s FIFO, subscribing if it is the first. If the
  /// subscription is already active, `w` is woken at once: it registered after its failed
  /// attempt, so it must try again to close the window in which an unlock went unheard.
  void add(std::string_view channel, waiter& w);

  /// Unlinks `w` in O(1). An unconsumed wake-up passes to the next waiter; the last waiter out
  /// unsubscribes.
  void remove(waiter& w);

  /// Routes a RESP3 push from the connection.
  void on_push(const resp3::value& push);

  /// Wakes every waiter with `reason` and forgets all subscriptions (the connection is gone).
  void fail_all(std::error_code reason);

  /// Channels with local waiters or unconfirmed (un)subscriptions.
  std::size_t channel_count() const noexcept { return channels_.size(); }
  std::size_t waiter_count(std::string_view channel) const;

 private:
  void wake(waiter& w, bool by_message);
  void wake_one(channel_state& c, bool by_message);
  void subscribe(channel_state& c, bool on);

  connection& conn_;
  std::unordered_map<std::string, channel_state> channels_;
};

}  // namespace rlock::detail
