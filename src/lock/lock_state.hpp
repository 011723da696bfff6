#pragma once

#include "rlock/reentrant_lock.hpp"
#include "watchdog/watchdog.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace rlock::detail {

class client_impl;

/// Redisson's names for an RLock: the unlock channel is `redisson_lock__channel:{<key>}`, without
/// the added braces when the key already contains '{' (it then carries its own hash tag).
std::string unlock_channel(std::string_view key);

/// One owner of one lock, shared by the handles of that owner. Mutable members are touched on
/// the client's executor only.
struct lock_state : std::enable_shared_from_this<lock_state> {
  lock_state(std::shared_ptr<client_impl> c, std::string name, std::uint64_t owner);
  ~lock_state();

  /// One acquire attempt: nullopt if acquired (or re-entered), else the holder's PTTL (which may
  /// be negative for a key without expiry). Not cancellable (see connection::exec).
  boost::asio::awaitable<std::optional<std::chrono::milliseconds>> try_acquire(
      std::chrono::milliseconds lease, bool renew);
  /// One release; throws errc::not_owner if this owner does not hold the lock.
  boost::asio::awaitable<void> release();
  /// Stops renewal and tells lost() waiters; local bookkeeping only.
  void reset(bool lost);

  const std::shared_ptr<client_impl> client;
  const std::string name;
  const std::string key;
  const std::string channel;
  const std::uint64_t owner;
  const std::string field;

  std::uint64_t local_holds = 0;       // acquisitions not yet released, as far as we know
  std::chrono::milliseconds lease{0};  // of the latest acquire: a nested release re-arms it
  std::optional<watchdog::id> renewal;
  bool lost = false;
  std::atomic<wake_reason> last_wake{wake_reason::immediate};
  boost::asio::steady_timer lost_signal;  // at max(); cancelled to wake lost() waiters
};

}  // namespace rlock::detail
