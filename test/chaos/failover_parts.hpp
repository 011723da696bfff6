#pragma once

// The parts of a failover scenario that do not depend on the topology (Sentinel or Cluster): a
// canary counting the writes the old master acknowledged, and a watchdog holder with a
// contender, recorded into a chaos history.

#include "chaos/history.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <rlock/client.hpp>
#include <string>
#include <thread>

namespace rlock::chaos {

/// Counts writes the master acknowledged (INCR every millisecond, on its own thread), until it
/// stops answering or refuses (a replica, READONLY; a cluster replica, MOVED).
class canary {
 public:
  canary(std::uint16_t port, std::string key);
  ~canary() { stop(); }
  /// Stops writing; returns the last count the old master acknowledged.
  std::int64_t stop();

 private:
  std::string key_;
  std::atomic<bool> stop_{false};
  std::int64_t acked_ = 0;
  std::thread thread_;
};

/// A holder of one lock (`name`, "held" unless told) through the watchdog, and a contender trying
/// it all along, on their own thread: the holder must stop believing before the contender can take
/// it, failover or not.
class held_lock {
 public:
  /// `config_of(name)` gives each client's settings (the topology's, a client name).
  held_lock(const std::function<rlock::config(const std::string&)>& config_of, recorder& rec,
            std::string name = "held");
  ~held_lock() { finish(); }

  bool holding() const { return holding_; }
  bool lost() const { return lost_; }

  /// Ends both (the holder unlocks if it still believes) and joins the thread.
  void finish();

 private:
  boost::asio::awaitable<void> hold();
  boost::asio::awaitable<void> contend();

  recorder& rec_;
  std::string name_;
  boost::asio::io_context io_;
  std::optional<rlock::client> holder_;
  std::optional<rlock::client> contender_;
  boost::asio::cancellation_signal stop_holding_;
  std::atomic<bool> holding_{false};
  std::atomic<bool> lost_{false};
  bool stopping_ = false;  // on io_'s thread
  std::thread thread_;
};

}  // namespace rlock::chaos
