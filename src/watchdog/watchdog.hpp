#pragma once

#include "script/script_registry.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/unordered/unordered_flat_map.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace rlock::detail {

/// Keeps leases alive and tells holders the moment they may no longer hold: one timer per client
/// renews every registered lease each `lease / 3` with the lease's own renewal script (its lock
/// kind's), up to 100 locks per script call (Redisson's batch size), never two scripts and never
/// keys of two groups in one call (on a cluster a group is a hash slot: a
/// script over several is refused, CROSSSLOT); the calls of one round are made in one turn, so
/// each node gets them in one write. It fires at the earliest *belief deadline*:
///
///     sent time of the last acquire or renewal known to have run + lease − margin,
///     margin = lease / 100 + 5 ms
///
/// The server starts a lease no earlier than the command that sets it was sent, so at that
/// deadline the key cannot have expired yet: a holder that could not renew (server down, stopped,
/// unreachable) is told `lost()` strictly before another owner can acquire. The margin covers
/// clock-rate drift between the two machines (1 %, as Redlock's drift factor) and timer latency
/// (5 ms). A renewal answered "not ours" (expired, deleted, force-unlocked, wrong type) is
/// reported at once. Renewals are idempotent: written and unanswered when the connection drops,
/// they are written again on the next connection, and a round that fell due during an outage is
/// sent as soon as the session is back (renewal requests wait until their leases' deadlines).
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
    /// The script that renews it, batched with the others of the same script and group: KEYS =
    /// lock keys, ARGV[1] = lease ms, ARGV[i + 1] = the field of KEYS[i]; one 1 or 0 per key.
    virtual script renewal_script() const noexcept = 0;
    /// Called once when the lease is lost; it is unregistered by then.
    virtual void on_lease_lost(std::string_view why) = 0;
    /// Called when the watchdog stops (the client closes) while the lease is registered.
    virtual void on_watchdog_stopped() = 0;
    /// Whether a change of its key by another client means it may be gone, worth a check at
    /// once (check()): false where other holders change the key too (a read hold, a semaphore
    /// permit), whose checks would cost a round trip per other holder's acquire or release.
    virtual bool checked_when_changed() const noexcept { return true; }

    bool renewing() const noexcept { return keep_alive_ != nullptr; }

   protected:
    ~lease() = default;

   private:
    friend class watchdog;
    // The small ones last, together: one per held lock (bench S5) and per waiter (S6).
    lease* prev_ = nullptr;
    lease* next_ = nullptr;
    lease* same_key_ = nullptr;         // the next lease of its key (check(): by_key_)
    std::uint64_t generation_ = 0;      // bumped at every add: tells a stale batch reply apart
    clock::time_point confirmed_{};     // send time of the last acquire/renewal known to have run
    std::shared_ptr<void> keep_alive_;  // the owner stays alive while renewed
    std::uint32_t claim_ms_ = 0;        // nonzero: the server's lease until a renewal runs
    std::uint16_t group_ = 0;           // its key's script group (a cluster's hash slot)
    script renew_{};                    // its renewal script
    bool failing_ = false;              // its last renewal call failed (reported once)
  };

  watchdog(boost::asio::any_io_executor ex, script_registry& scripts,
           std::chrono::milliseconds lease);
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;

  /// The object whose lifetime bounds this watchdog's (the client); pending timers and renewal
  /// calls keep it alive.
  void set_owner(std::weak_ptr<void> owner) { owner_ = std::move(owner); }

  /// Starts renewing `l`, whose acquire (with this watchdog's lease) was sent at `sent`;
  /// `keep_alive` owns it. A nonzero `claim` shorter than the lease: the server holds it only
  /// that long from `sent` (a fair lock's handoff by push, config::fair_lock::handoff_claim), so
  /// its holder believes until `sent + claim - margin` and it is renewed at once, alone; the
  /// first renewal that runs gives it the whole lease.
  void add(lease& l, std::shared_ptr<void> keep_alive, clock::time_point sent,
           std::chrono::milliseconds claim = {});

  /// Stops renewing `l`; called before the final unlock is sent, so a released lock is never
  /// renewed. No effect if `l` is not registered.
  void remove(lease& l) noexcept;

  /// Forgets every lease and stops the timer.
  void stop() noexcept;

  /// Keeps an index of the leases by key, which check() needs (config::track_holds): off, a held
  /// lock costs no entry. Before the first add().
  void index_keys(bool on) noexcept { indexed_ = on; }
  /// Another client changed these keys (a tracking invalidation): each lease of one of them
  /// whose checked_when_changed() is renewed at once, alone with the others of its script and
  /// group, instead of at the next round: a renewal answered "not ours" reports it lost now.
  void check(std::span<const std::string_view> keys);
  /// Every lease renewed at once, whatever its kind: the server forgot what this client read (a
  /// FLUSHALL, a new connection) and may have lost the keys (a failover, a restart).
  void check_all();
  /// Checks made so far (leases renewed by check() and check_all(), for tests and benchmarks).
  std::uint64_t checks() const noexcept { return checks_.load(std::memory_order_relaxed); }

  /// The send time of `l`'s last acquire or renewal known to have run (epoch if not renewed).
  clock::time_point confirmed(const lease& l) const noexcept {
    return l.renewing() ? l.confirmed_ : clock::time_point{};
  }

  /// `l`'s claim while no renewal has run since it was added with one (zero otherwise).
  std::chrono::milliseconds claim(const lease& l) const noexcept {
    return l.renewing() ? std::chrono::milliseconds(l.claim_ms_) : std::chrono::milliseconds{};
  }

  std::size_t size() const noexcept { return size_; }
  /// Whether the timer is armed for a lease (once nothing is renewed it may still fire once,
  /// to no effect), and renewal batches are in flight (for client::activity()).
  bool armed() const noexcept { return size_ != 0 && armed_at_ != clock::time_point::max(); }
  std::size_t batches_in_flight() const noexcept { return batches_in_flight_; }
  /// Renewal script calls made so far (for tests and benchmarks).
  std::uint64_t renew_calls() const noexcept {
    return renew_calls_.load(std::memory_order_relaxed);
  }
  /// Renewal script calls that failed (no answer in time, connection lost, an error reply).
  std::uint64_t renew_failures() const noexcept {
    return renew_failures_.load(std::memory_order_relaxed);
  }
  /// Called when a renewal call fails, with the leases it carried whose renewals were not
  /// failing already (a lease's failures are reported once until a renewal of it succeeds), and
  /// why (for the log).
  using failure_hook = std::function<void(std::span<const lease* const> newly_failing,
                                          std::error_code ec, const resp3::value& reply)>;
  void on_failure(failure_hook h) { on_failure_ = std::move(h); }
  std::chrono::milliseconds lease_length() const noexcept { return lease_; }
  /// How long before a lease can expire on the server its holder stops believing.
  std::chrono::milliseconds margin() const noexcept { return margin_; }
  /// The margin of a watchdog whose lease is `lease`: lease / 100 + 5 ms, at most half of it.
  static constexpr std::chrono::milliseconds margin_for(std::chrono::milliseconds lease) noexcept {
    return std::min(lease / 100 + std::chrono::milliseconds(5), lease / 2);
  }

  static constexpr std::size_t batch_size = 100;

 private:
  struct batch;

  clock::time_point believe_until(const lease& l) const noexcept {
    return l.confirmed_ + (l.claim_ms_ != 0 ? std::chrono::milliseconds(l.claim_ms_) : lease_) -
           margin_;
  }
  /// One renewal call for `items` (one script, one group), useful until the earliest of them
  /// stops believing.
  /// `round`: part of a round (a round still in flight is not doubled); otherwise a claimed
  /// lease's own renewal, which never holds a round back.
  void send(std::span<lease* const> items, const std::shared_ptr<void>& owner, bool round);
  /// Arms the timer for the next round or the earliest belief deadline (including `deadline`).
  void arm_for(clock::time_point deadline);
  void on_timer();
  void start_round();
  /// Renewal calls for `order`, grouped by script and group, batch_size at most each.
  void send_grouped(std::vector<lease*>& order, const std::shared_ptr<void>& owner, bool round);
  void index(lease& l);
  void unindex(lease& l) noexcept;
  void on_batch(batch& b, std::error_code ec, const resp3::value& reply);
  void report_lost(lease& l, std::string_view why);

  boost::asio::any_io_executor executor_;
  script_registry& scripts_;
  std::chrono::milliseconds lease_;
  std::chrono::milliseconds margin_;
  boost::asio::steady_timer timer_;
  clock::time_point armed_at_ = clock::time_point::max();
  clock::time_point next_round_ = clock::time_point::max();
  clock::time_point earliest_ = clock::time_point::max();  // earliest belief deadline (or before)
  lease* head_ = nullptr;  // acquisition order: batches walk from here
  lease* tail_ = nullptr;
  std::size_t size_ = 0;
  bool indexed_ = false;  // by_key_ is kept (index_keys)
  std::size_t batches_in_flight_ = 0;
  std::size_t round_batches_in_flight_ = 0;
  std::uint64_t next_generation_ = 1;
  std::atomic<std::uint64_t> renew_calls_{0};
  std::atomic<std::uint64_t> renew_failures_{0};
  std::atomic<std::uint64_t> checks_{0};
  /// The leases of each key (a chain through lease::same_key_), for check(). Open addressing:
  /// no allocation per lease (bench S5 counts a held lock's bytes).
  boost::unordered_flat_map<std::string_view, lease*> by_key_;
  failure_hook on_failure_;
  std::weak_ptr<void> owner_;
};

}  // namespace rlock::detail
