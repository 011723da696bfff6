#pragma once

// What the engine (the acquire and release shells, lost(), handoff, lock state) and the kinds
// see of the client: one narrow context the client builds once. No engine or kind file includes
// the client's internals; a unit test can build a context over its own parts.
#include "engine/attempt_gate.hpp"
#include "engine/decimal.hpp"
#include "engine/engine_config.hpp"
#include "engine/engine_metrics.hpp"
#include "engine/latch_sweeper.hpp"
#include "engine/owner_table.hpp"
#include "notify/notify_hub.hpp"
#include "rlock/config.hpp"
#include "rlock/log.hpp"
#include "script/script_registry.hpp"
#include "session/session.hpp"
#include "watchdog/watchdog.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace rlock::detail {

/// Requests a client owes the server so that it leaves nothing behind (a fair waiter's leave, a
/// writer taking back its mark): nobody waits for them, but client::close() does, bounded by
/// command_timeout, as for the unlock latches' DELs. Executor only.
class owed_requests {
 public:
  /// One request owed, from its making until it is destroyed (its answer came, it failed, or
  /// it was dropped). Move-only; empty (default, or moved from) owes nothing.
  class debt {
   public:
    debt() = default;
    explicit debt(owed_requests& o) noexcept : to_(&o) { o.begin(); }
    debt(debt&& other) noexcept : to_(std::exchange(other.to_, nullptr)) {}
    debt& operator=(debt&& other) noexcept {
      if (this != &other) {
        if (to_ != nullptr) to_->end();
        to_ = std::exchange(other.to_, nullptr);
      }
      return *this;
    }
    ~debt() {
      if (to_ != nullptr) to_->end();
    }
    explicit operator bool() const noexcept { return to_ != nullptr; }

   private:
    owed_requests* to_ = nullptr;
  };

  void begin() noexcept { ++in_flight_; }
  /// One answered (or failed); the drained callback runs once when none is left.
  void end() {
    if (in_flight_ > 0) --in_flight_;
    if (in_flight_ == 0 && drained_) std::exchange(drained_, {})();
  }
  std::size_t in_flight() const noexcept { return in_flight_; }
  /// Called once when none is in flight any more (replaces an earlier one; empty: none).
  void on_drained(std::function<void()> f) { drained_ = std::move(f); }

 private:
  std::size_t in_flight_ = 0;
  std::function<void()> drained_;
};

/// The engine's view of a client: its executor, its ports (commands, scripts, waits, leases, the
/// attempt gate, unlock latches), where it counts and logs, its ids and the settings it needs.
/// Everything but the owner table, the counters and the histograms is touched only on
/// `executor`.
class engine_context {
 public:
  /// The parts the client owns; they outlive the context.
  struct ports {
    detail::session& commands;
    script_registry& scripts;
    notify_hub& waits;
    watchdog& leases;
    attempt_gate& attempts;
    latch_sweeper& latches;
  };

  engine_context(boost::asio::any_io_executor ex, const config& c, std::string client_uuid,
                 ports p);
  engine_context(const engine_context&) = delete;
  engine_context& operator=(const engine_context&) = delete;

  const boost::asio::any_io_executor executor;
  const engine_config cfg;
  /// The client's UUID: the first half of every owner's hash field.
  const std::string uuid;
  /// Script arguments every lock command repeats, formatted once: the watchdog's lease, and
  /// how long an unlock latch keeps its answer (2 × command_timeout: a retry may come until the
  /// release's bound and one reconnect later). A kind's own settings are formatted by the kind
  /// (lock_kind::prepare_attempt).
  const decimal watchdog_lease_arg;
  const decimal latch_ttl_arg;
  /// `lease` as a script argument: the watchdog's (also for zero or less: none of its own),
  /// formatted once, or formatted into `own`.
  std::string_view lease_arg(std::chrono::milliseconds lease, decimal& own) const noexcept {
    if (lease.count() <= 0 || lease == cfg.watchdog_timeout) return watchdog_lease_arg.view();
    own.assign(lease.count());
    return own.view();
  }

  // --- ports ------------------------------------------------------------------------------------
  /// Commands: exec, withdraw, the publish command, ordered pushes (Standalone, Sentinel or
  /// Cluster: the engine talks to it alone).
  detail::session& session;
  script_registry& scripts;
  notify_hub& hub;  // waits: where waiters listen and sleep
  watchdog& dog;    // leases: renewal, and lost()
  attempt_gate& attempts;
  latch_sweeper& latches;
  owner_table owners;  // the owners of this client, and their latest errors
  owed_requests owed;  // leaves in flight: close() waits for them

  // --- metrics ----------------------------------------------------------------------------------
  engine_metrics metrics;
  /// Until then, a release answered "still held" with no caller holding is taken for holds a
  /// failover left behind (lock_state::maybe_orphaned): set by the client on moving to another
  /// node, for the longest lease, after which every hold from before the move has expired unless
  /// renewed. Executor only.
  std::chrono::steady_clock::time_point counts_uncertain_until{};

  // --- logging and ids --------------------------------------------------------------------------
  /// Logs a line through config::log (nothing when unset), prefixed with the client's name.
  /// A logger that throws is ignored: logging never breaks the client.
  template <typename... Args>
  void log(log_level level, fmt::format_string<Args...> text, Args&&... args) const {
    if (!log_) return;
    try {
      log_(level, fmt::format("{}: {}", log_name_, fmt::format(text, std::forward<Args>(args)...)));
    } catch (...) {
    }
  }
  /// Whether config::log is set: a caller need format nothing otherwise.
  bool logging() const noexcept { return static_cast<bool>(log_); }
  /// The owner in log lines: its id and the client's UUID cut to 8 digits.
  std::string short_owner(std::uint64_t owner) const {
    return fmt::format("{}:{}", std::string_view(uuid).substr(0, 8), owner);
  }
  /// A new acquisition's ticket (never 0): names it in a fair lock's handoff by push.
  std::uint32_t next_ticket() noexcept {
    if (++last_ticket_ == 0) ++last_ticket_;
    return last_ticket_;
  }
  /// Appends 32 lowercase hex digits to `out`, unique per call: the request id of an unlock
  /// (Redisson's latch), written into the latch key itself. The client's 64 random bits, then a
  /// counter from a random start: unique within the client by the counter, across clients by
  /// the random bits, and a table lookup per byte, not a generator call per unlock.
  void append_request_id(std::string& out);

 private:
  logger log_;
  std::string log_name_;
  std::uint32_t last_ticket_ = 0;
  char id_prefix_[16];        // the client's random half of every request id, in hex
  std::uint64_t id_counter_;  // the other half
};

}  // namespace rlock::detail
