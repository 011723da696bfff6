#pragma once

#include "script/script_registry.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace rlock::detail {

/// Keeps leases alive: one timer per client renews every registered lease each `lease / 3`, up
/// to 100 locks per script call (Redisson's batch size). A lease found no longer ours, or not
/// confirmed for a whole lease, is reported lost once and dropped. A failed round (connection
/// trouble) is simply retried at the next tick.
///
/// Leases are intrusive: a lock embeds its `lease` node, so holding 100 000 locks costs no
/// allocation here and a few dozen bytes per lock (see bench S5).
class watchdog {
 public:
  using clock = std::chrono::steady_clock;

  /// What the watchdog renews; embedded in its owner.
  class lease {
   public:
    lease() = default;
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;

    virtual std::string_view lease_key() const noexcept = 0;
    virtual std::string_view lease_field() const noexcept = 0;
    /// Called once when the lease is lost; it is unregistered by then.
    virtual void on_lease_lost() = 0;
    /// Called when the watchdog stops (the client closes) while the lease is registered.
    virtual void on_watchdog_stopped() = 0;

    bool renewing() const noexcept { return keep_alive_ != nullptr; }

   protected:
    ~lease() = default;

   private:
    friend class watchdog;
    lease* prev_ = nullptr;
    lease* next_ = nullptr;
    std::uint64_t generation_ = 0;   // bumped at every add: tells a stale batch reply apart
    clock::time_point confirmed_{};  // when the last successful renewal (or the acquire) was sent
    std::shared_ptr<void> keep_alive_;  // the owner stays alive while renewed
  };

  watchdog(boost::asio::any_io_executor ex, script_registry& scripts,
           std::chrono::milliseconds lease);
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;

  /// The object whose lifetime bounds this watchdog's (the client); the renewal loop keeps it
  /// alive while it runs.
  void set_owner(std::weak_ptr<void> owner) { owner_ = std::move(owner); }

  /// Starts renewing `l` (just acquired with this watchdog's lease); `keep_alive` owns it.
  void add(lease& l, std::shared_ptr<void> keep_alive);

  /// Stops renewing `l`; called before the final unlock is sent, so a released lock is never
  /// renewed. No effect if `l` is not registered.
  void remove(lease& l) noexcept;

  /// Forgets every lease and stops the timer.
  void stop() noexcept;

  std::size_t size() const noexcept { return size_; }
  /// Renewal script calls made so far (for tests and benchmarks).
  std::uint64_t renew_calls() const noexcept {
    return renew_calls_.load(std::memory_order_relaxed);
  }

  static constexpr std::size_t batch_size = 100;

 private:
  struct snapshot {
    std::shared_ptr<void> keep_alive;
    lease* l;
    std::uint64_t generation;
  };

  boost::asio::awaitable<void> run();
  boost::asio::awaitable<void> renew_round();
  boost::asio::awaitable<void> renew_batch(std::vector<snapshot> batch, clock::time_point sent);
  void report_lost(lease& l);

  boost::asio::any_io_executor executor_;
  script_registry& scripts_;
  std::chrono::milliseconds lease_;
  boost::asio::steady_timer timer_;
  lease* head_ = nullptr;  // acquisition order: batches walk from here
  lease* tail_ = nullptr;
  std::size_t size_ = 0;
  std::uint64_t next_generation_ = 1;
  bool running_ = false;
  std::atomic<std::uint64_t> renew_calls_{0};
  std::weak_ptr<void> owner_;
};

}  // namespace rlock::detail
