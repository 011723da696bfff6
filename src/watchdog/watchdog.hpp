#pragma once

#include "script/script_registry.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rlock::detail {

/// Keeps leases alive: one timer per client renews every registered lease each
/// `lease / 3`, up to 100 locks per script call (Redisson's batch size).
/// A lease found no longer ours, or not confirmed for a whole lease, is reported lost once and
/// dropped. A failed round (connection trouble) is simply retried at the next tick.
class watchdog {
 public:
  using lost_handler = std::function<void()>;
  using id = std::uint64_t;
  using clock = std::chrono::steady_clock;

  watchdog(boost::asio::any_io_executor ex, script_registry& scripts,
           std::chrono::milliseconds lease);
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;

  /// The object whose lifetime bounds this watchdog's (the client); the renewal loop keeps it
  /// alive while it runs.
  void set_owner(std::weak_ptr<void> owner) { owner_ = std::move(owner); }

  /// Starts renewing `field` of hash `key`, just acquired with this watchdog's lease.
  id add(std::string key, std::string field, lost_handler on_lost);

  /// Stops renewing; called before the final unlock is sent, so a released lock is never
  /// renewed. Unknown ids are ignored.
  void remove(id lease_id);

  /// Forgets every lease and stops the timer.
  void stop();

  std::size_t size() const noexcept { return leases_.size(); }
  /// Renewal script calls made so far (for tests and benchmarks).
  std::uint64_t renew_calls() const noexcept {
    return renew_calls_.load(std::memory_order_relaxed);
  }

  static constexpr std::size_t batch_size = 100;

 private:
  struct lease {
    std::string key;
    std::string field;
    lost_handler on_lost;
    clock::time_point confirmed;  // when the last successful renewal (or the acquire) was sent
  };

  boost::asio::awaitable<void> run();
  boost::asio::awaitable<void> renew_round();
  boost::asio::awaitable<void> renew_batch(std::vector<id> ids, clock::time_point sent);
  void report_lost(id lease_id);

  boost::asio::any_io_executor executor_;
  script_registry& scripts_;
  std::chrono::milliseconds lease_;
  boost::asio::steady_timer timer_;
  std::map<id, lease> leases_;  // ordered by id: batches walk it in acquisition order
  id next_id_ = 1;
  bool running_ = false;
  std::atomic<std::uint64_t> renew_calls_{0};
  std::weak_ptr<void> owner_;
};

}  // namespace rlock::detail
