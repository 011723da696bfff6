#pragma once

#include "conn/connection.hpp"
#include "notify/notify_hub.hpp"
#include "rlock/config.hpp"
#include "script/script_registry.hpp"
#include "watchdog/watchdog.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace rlock::detail {

struct lock_state;

/// What a client owns. Everything but `states_` and the counters is touched only on `executor`.
class client_impl : public std::enable_shared_from_this<client_impl> {
 public:
  client_impl(const boost::asio::any_io_executor& ex, config c);
  ~client_impl();

  /// Wires the parts together once the object is owned by a shared_ptr.
  void start();
  boost::asio::awaitable<void> connect();
  /// Fails everything pending with `reason` and closes the connection.
  void shutdown(std::error_code reason);

  /// The state of (name, owner), shared by every handle of that owner. Thread-safe.
  std::shared_ptr<lock_state> state_for(std::string_view name, std::uint64_t owner);
  /// The state of a new owner of `name`, with a fresh id. Thread-safe.
  std::shared_ptr<lock_state> new_owner(std::string_view name);
  void forget(const lock_state& s);

  const boost::asio::any_io_executor executor;
  const config cfg;
  const std::string uuid;
  std::shared_ptr<connection> conn;
  script_registry scripts;
  /// Counters behind client::stats(); atomics because stats() may be read from any thread.
  struct {
    std::atomic<std::uint64_t> acquire_attempts{0};
    std::atomic<std::uint64_t> notified_wakeups{0};
    std::atomic<std::uint64_t> expiry_wakeups{0};
    std::atomic<std::uint64_t> lost_locks{0};
  } counters;
  notify_hub hub;
  watchdog dog;

 private:
  std::mutex states_mutex_;
  std::unordered_map<std::string, std::weak_ptr<lock_state>> states_;
};

/// A fresh owner id from the per-process counter (also used for blocking-facade threads).
std::uint64_t next_owner_id() noexcept;

}  // namespace rlock::detail
