#pragma once

#include "resp3/value.hpp"
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
#include <string_view>

namespace rlock::detail {

class client_impl;

/// Redisson's names for an RLock: the unlock channel is `redisson_lock__channel:{<key>}`, without
/// the added braces when the key already contains '{' (it then carries its own hash tag).
std::string unlock_channel(std::string_view key);

/// One owner of one lock, shared by the handles of that owner. Kept small (bench S5 holds
/// 100 000 of them): the channel is derived when needed, the name is a view into the key, and
/// the lost() timer exists only while someone awaits it. Mutable members are touched on the
/// client's executor only.
struct lock_state final : std::enable_shared_from_this<lock_state>, watchdog::lease {
  lock_state(std::shared_ptr<client_impl> c, std::string_view name, std::uint64_t owner,
             bool registered);
  ~lock_state();

  /// Bookkeeping after the acquire script took (or re-entered) the lock.
  void on_acquired(std::chrono::milliseconds lease, bool renew);
  /// Bookkeeping before a release is sent: stop renewing before the final release goes out,
  /// so a released lock is never renewed.
  void before_release();
  /// Bookkeeping after the release script's reply: null (not held) throws errc::not_owner.
  void on_released(const resp3::value& reply);
  /// Stops renewal and tells lost() waiters; local bookkeeping only.
  void reset(bool lost);

  std::string_view name() const noexcept { return std::string_view(key).substr(prefix_size); }
  std::string channel() const { return unlock_channel(key); }

  std::string_view lease_key() const noexcept override { return key; }
  std::string_view lease_field() const noexcept override { return field; }
  void on_lease_lost() override;
  void on_watchdog_stopped() override { reset(false); }

  const std::shared_ptr<client_impl> client;
  const std::string key;    // key prefix + name
  const std::string field;  // <client uuid>:<owner>
  const std::uint64_t owner;
  const std::uint32_t prefix_size;
  const bool registered;  // listed in the client's owner table (explicit owner ids)

  bool lost = false;
  std::atomic<wake_reason> last_wake{wake_reason::immediate};
  std::uint64_t local_holds = 0;       // acquisitions not yet released, as far as we know
  std::chrono::milliseconds lease{0};  // of the latest acquire: a nested release re-arms it
  std::unique_ptr<boost::asio::steady_timer> lost_signal;  // cancelled to wake lost() waiters
};

}  // namespace rlock::detail
