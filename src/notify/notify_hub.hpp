#pragma once

#include "notify/sleep_set.hpp"
#include "notify/wake_policy.hpp"
#include "session/session.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rlock::detail {

/// Channel → FIFO of local waiters. The session is asked to subscribe with a channel's first
/// waiter and to unsubscribe after its last, so a client holds one subscription per name however
/// many of its coroutines wait. What a message wakes is the channel owner's policy (the lock
/// kind's): the oldest waiter not yet woken, or all; for a lock's unlock message, one: one
/// unlock costs one retry per client, not one per waiter.
///
/// Waking is a flag plus the end of the waiter's sleep (it sleeps until its retry time in the
/// hub's sleep set, which one timer serves), so a wake-up that arrives while the waiter is busy
/// is kept, not lost. Waiters survive
/// a reconnect: once the session confirms their channel again, every one of them retries at once
/// (an unlock published while the connection was down is not replayed by Redis).
class notify_hub {
 public:
  using clock = std::chrono::steady_clock;
  struct channel_state;

  /// Lives in the waiting operation: waiting allocates nothing. Its sleep is an entry in the
  /// hub's sleep set, which one timer serves.
  struct waiter : sleep_set::sleeper {
    waiter() = default;
    waiter(const waiter&) = delete;
    waiter& operator=(const waiter&) = delete;

    /// Called when its sleep ends (a wake-up, its deadline, interrupt(), fail_all()): it only
    /// schedules the waiter's resumption, and must not call into the hub.
    void (*on_unpark)(waiter&) = nullptr;
    // The flags are bits: a waiter lives in every sleeping acquisition (bench S6 counts its
    // bytes). Executor only, as the whole waiter.
    bool woken : 1 = false;       // retry now; cleared by the waiter when it retries
    bool by_message : 1 = false;  // the latest wake-up was an unlock message
    /// Picked for a local handoff whose answer is not in yet: wake-ups pass it by, and it does
    /// not retry on its own (its retry could re-enter a lock handed to it meanwhile).
    bool reserved : 1 = false;
    /// The handoff's answer came: it holds the lock (set with `woken`).
    bool granted : 1 = false;
    /// The client closed, or the server refused the channel: failure_of() says why.
    bool failed : 1 = false;
    /// A fair lock's release handed the lock to this waiter's acquisition by push (set with
    /// `woken`): grant_since() bounds when.
    bool pushed_grant : 1 = false;
    /// A wake of one passes older waiters for it (lock_kind::woken_first: a writer that the
    /// readers on its channel wait for).
    bool woken_first : 1 = false;
    /// Names the acquisition in a fair lock's handoff by push (its `g<ticket>` message).
    std::uint32_t ticket = 0;
    void* owner = nullptr;  // the waiting operation, for a local handoff
    /// Its hub, from add() or attach() on: through it the waiter leaves, sleeps, is interrupted
    /// and reads why it failed or when a grant was pushed to it.
    notify_hub* hub = nullptr;
    channel_state* channel = nullptr;
    waiter* prev = nullptr;
    waiter* next = nullptr;

    /// The hub's remove(); nothing if it never joined.
    void leave();
    /// The hub's sleep() (joined or attached first).
    void sleep(clock::time_point wake_at);
    /// The hub's interrupt(); nothing if it never joined.
    void interrupt();
    std::error_code failure() const noexcept;
    std::string refusal() const;
    clock::time_point take_grant_since() noexcept;
    void wake_for_handoff();
  };

  /// Hears every payload published on its waiter's channel, before the channel's policy wakes
  /// anybody: an election's observers are told each change, not only that one came. Called
  /// from inside on_message, so it only queues, and must not call into the hub.
  struct payload_sink {
    void (*heard)(payload_sink&, std::string_view payload) = nullptr;
  };

  struct channel_state {
    std::string name;
    std::string key;  // routes the subscription (Cluster: the lock key's slot)
    message_policy policy = nullptr;
    waiter* head = nullptr;
    waiter* tail = nullptr;
    std::size_t size = 0;
    std::size_t woken_first = 0;  // waiters among them that a wake of one goes to first
    std::string refusal;          // Redis's text when the server refused the channel
    std::error_code refused;      // and its code
    /// The earliest `since` of the grants pushed here and not yet taken (grant_since()).
    clock::time_point grant_since = clock::time_point::max();
    /// Who hears its payloads (listen()), with the waiter each leaves with.
    std::vector<std::pair<const waiter*, payload_sink*>> sinks;
  };

  notify_hub(session& s, const boost::asio::any_io_executor& ex)
      : session_(s), timer_(ex, clock::time_point::max()) {}
  notify_hub(const notify_hub&) = delete;
  notify_hub& operator=(const notify_hub&) = delete;

  /// Links `w` at the tail of `channel`'s FIFO, subscribing if it is the first. If the
  /// subscription is already active, `w` is woken at once: it registered after its failed
  /// attempt, so it must try again to close the window in which an unlock went unheard.
  void add(std::string_view key, std::string_view channel, message_policy policy, waiter& w);

  /// Makes the hub `w`'s without a channel: a waiter that only sleeps (a polling one).
  void attach(waiter& w) noexcept { w.hub = this; }

  /// Gives `sink` every payload on the channel `w` joined (add() first), until `w` leaves it.
  void listen(waiter& w, payload_sink& sink) {
    if (w.channel != nullptr) w.channel->sinks.emplace_back(&w, &sink);
  }

  /// Unlinks `w` in O(1). An unconsumed wake-up passes to the next waiter; the last waiter out
  /// unsubscribes.
  void remove(waiter& w);

  /// Puts `w` to sleep until `until`: its on_unpark is called when a wake-up comes, or at
  /// `until` (an asleep waiter has nothing in flight: a local handoff may pick it).
  void sleep(waiter& w, clock::time_point until);
  /// Ends `w`'s sleep now (its caller cancelled); nothing if it is not asleep.
  void interrupt(waiter& w);
  /// The client that holds the hub: the timer's handler does nothing once it is gone.
  void set_owner(std::weak_ptr<void> owner) { owner_ = std::move(owner); }

  /// Why `w` failed: its channel's refusal (the code, and Redis's text), or the reason the
  /// client closed (and no text).
  std::error_code failure_of(const waiter& w) const noexcept {
    return w.channel != nullptr ? w.channel->refused : closed_;
  }
  std::string refusal_of(const waiter& w) const;
  /// Why the client closed (fail_all), or nothing while it is open: a waiter that would join
  /// after it fails instead (nobody would ever confirm or fail its channel).
  std::error_code closed() const noexcept { return closed_; }

  /// The oldest waiter on `channel` that a local handoff may pick (parked, not woken, not
  /// reserved, not failed), or null.
  waiter* handoff_candidate(std::string_view channel);
  /// Wakes `w` (a handoff's answer came: granted or not).
  void wake_for_handoff(waiter& w) { wake(w, false); }

  /// From the session: an unlock message, a (re)confirmed channel, a refused one. `since`: the
  /// server sent the message after running a request written then (connection::listener).
  void on_message(std::string_view channel, std::string_view payload, clock::time_point since);
  /// When a grant pushed to `w` (pushed_grant) was made at the earliest: the server ran the
  /// release that made it after a request written then. Taken once.
  clock::time_point take_grant_since(waiter& w) noexcept {
    if (w.channel == nullptr) return clock::time_point{};
    return std::exchange(w.channel->grant_since, clock::time_point::max());
  }
  void on_subscribed(std::string_view channel);
  void on_refused(std::string_view channel, std::error_code ec, std::string_view text);

  /// Wakes every waiter with `reason` and forgets them all (the client is closing).
  void fail_all(std::error_code reason);

  /// Channels with local waiters.
  std::size_t channel_count() const noexcept { return channels_.size(); }
  /// Waiters linked in every channel.
  std::size_t waiter_total() const noexcept {
    std::size_t n = 0;
    for (const auto& [name, ch] : channels_) n += ch.size;
    return n;
  }
  std::size_t waiter_count(std::string_view channel) const;

 private:
  struct hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };

  void wake(waiter& w, bool by_message);
  void wake_one(channel_state& c, bool by_message);
  void unpark(waiter& w);
  /// Keeps the timer armed for the earliest sleeper (early is fine: it re-arms), and idle when
  /// nobody sleeps, so that an io_context with nothing else to do returns from run().
  void arm();
  void on_timer();

  session& session_;
  std::unordered_map<std::string, channel_state, hash, std::equal_to<>> channels_;
  sleep_set sleepers_;
  std::error_code closed_;  // fail_all's reason
  boost::asio::steady_timer timer_;
  clock::time_point armed_until_ = clock::time_point::max();
  std::weak_ptr<void> owner_;
};

inline void notify_hub::waiter::leave() {
  if (hub != nullptr) hub->remove(*this);
}
inline void notify_hub::waiter::sleep(clock::time_point wake_at) { hub->sleep(*this, wake_at); }
inline void notify_hub::waiter::interrupt() {
  if (hub != nullptr) hub->interrupt(*this);
}
inline std::error_code notify_hub::waiter::failure() const noexcept {
  return hub != nullptr ? hub->failure_of(*this) : std::error_code{};
}
inline std::string notify_hub::waiter::refusal() const {
  return hub != nullptr ? hub->refusal_of(*this) : std::string{};
}
inline notify_hub::clock::time_point notify_hub::waiter::take_grant_since() noexcept {
  return hub != nullptr ? hub->take_grant_since(*this) : clock::time_point{};
}
inline void notify_hub::waiter::wake_for_handoff() { hub->wake_for_handoff(*this); }

}  // namespace rlock::detail
