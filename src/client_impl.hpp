#pragma once

#include "lock/attempt_gate.hpp"
#include "lock/decimal.hpp"
#include "lock/latch_sweeper.hpp"
#include "lock/lock_kind.hpp"
#include "metrics/log_histogram.hpp"
#include "notify/notify_hub.hpp"
#include "rlock/client.hpp"
#include "rlock/config.hpp"
#include "script/script_registry.hpp"
#include "session/session.hpp"
#include "watchdog/watchdog.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

namespace rlock::detail {

struct lock_state;

/// What a client owns: the session and the services on it. Everything but `states_`, the
/// counters and the state snapshot is touched only on `executor`.
class client_impl : public std::enable_shared_from_this<client_impl>, private connection::listener {
 public:
  client_impl(const boost::asio::any_io_executor& ex, config c);
  ~client_impl();

  /// Wires the parts together once the object is owned by a shared_ptr.
  void start();
  /// Fails everything pending with `reason` and closes the session.
  void shutdown(std::error_code reason);
  /// Logs a failed renewal call once per lock and failure streak, naming the locks.
  void log_renewal_failure(std::span<const watchdog::lease* const> locks, std::error_code ec,
                           const resp3::value& reply);

  /// The state of (name, owner), shared by every handle of that owner. Thread-safe.
  std::shared_ptr<lock_state> state_for(std::string_view name, std::uint64_t owner,
                                        const lock_kind& kind = reentrant_kind);
  /// The state of a new owner of `name`, with a fresh id (or `id`, one a new owner got from
  /// this call: a read-write lock's second half). Thread-safe.
  std::shared_ptr<lock_state> new_owner(std::string_view name,
                                        const lock_kind& kind = reentrant_kind,
                                        std::optional<std::uint64_t> id = std::nullopt);
  void forget(const lock_state& s);

  /// Appends 32 lowercase hex digits to `out`, unique per call: the request id of an unlock
  /// (Redisson's latch), written into the latch key itself. The client's 64 random bits, then a
  /// counter from a random start: unique within the client by the counter, across clients by
  /// the random bits, and a table lookup per byte, not a generator call per unlock.
  void append_request_id(std::string& out);

  /// The text of an owner's latest failed operation (empty: none; setting empty forgets).
  /// Thread-safe.
  void set_last_error(const lock_state* owner, std::string text);
  std::string last_error(const lock_state* owner);

  void set_state_handler(std::function<void(const connection_event&)> h) {
    state_handler_ = std::move(h);
  }
  connection_state state() const noexcept { return state_.load(std::memory_order_relaxed); }

  const boost::asio::any_io_executor executor;
  const config cfg;
  const std::string uuid;
  /// Script arguments every lock command repeats, formatted once: the watchdog's lease, and
  /// how long an unlock latch keeps its answer (2 × command_timeout: a retry may come until the
  /// release's bound and one reconnect later).
  const decimal watchdog_lease_arg;
  const decimal latch_ttl_arg;
  const decimal fair_wait_arg;  // config::fair_lock::wait_timeout
  /// A new acquisition's ticket (never 0): names it in a fair lock's handoff by push.
  std::uint32_t next_ticket() noexcept {
    if (++last_ticket_ == 0) ++last_ticket_;
    return last_ticket_;
  }
  /// `lease` as a script argument: the watchdog's, formatted once, or formatted into `own`.
  std::string_view lease_arg(std::chrono::milliseconds lease, decimal& own) const noexcept {
    if (lease == cfg.watchdog_timeout) return watchdog_lease_arg.view();
    own.assign(lease.count());
    return own.view();
  }
  const std::unique_ptr<detail::session> session_owner;
  /// Standalone, Sentinel or Cluster (config): everything below talks to it alone.
  detail::session& session;
  script_registry scripts;
  /// Counters behind client::stats(); atomics because stats() may be read from any thread.
  struct {
    std::atomic<std::uint64_t> acquire_attempts{0};
    std::atomic<std::uint64_t> notified_wakeups{0};
    std::atomic<std::uint64_t> expiry_wakeups{0};
    std::atomic<std::uint64_t> lost_locks{0};
    std::atomic<std::uint64_t> reconciled_acquires{0};
    std::atomic<std::uint64_t> given_back{0};
    std::atomic<std::uint64_t> acquired_immediate{0};
    std::atomic<std::uint64_t> acquired_notification{0};
    std::atomic<std::uint64_t> acquired_expiry{0};
    std::atomic<std::uint64_t> acquired_handoff{0};
    std::atomic<std::uint64_t> local_handoffs{0};
    std::atomic<std::uint64_t> handoffs_given_back{0};
  } counters;
  log_histogram wait_times;
  log_histogram hold_times;
  /// The longest lease any acquisition of this client was given (executor only).
  std::chrono::milliseconds longest_lease{0};
  /// Until then, a release answered "still held" with no caller holding is taken for holds a
  /// failover left behind (lock_state::maybe_orphaned): set on moving to another node, for the
  /// longest lease, after which every hold from before the move has expired unless renewed.
  /// Executor only.
  std::chrono::steady_clock::time_point counts_uncertain_until{};

  /// Logs a line through config::log (nothing when unset), prefixed with the client's name.
  /// A logger that throws is ignored: logging never breaks the client.
  template <typename... Args>
  void log(log_level level, fmt::format_string<Args...> text, Args&&... args) const {
    if (!cfg.log) return;
    try {
      cfg.log(level,
              fmt::format("{}: {}", log_name_, fmt::format(text, std::forward<Args>(args)...)));
    } catch (...) {
    }
  }
  /// The owner in log lines: its id and the client's UUID cut to 8 digits.
  std::string short_owner(std::uint64_t owner) const {
    return fmt::format("{}:{}", std::string_view(uuid).substr(0, 8), owner);
  }
  /// Everything client::metrics() reports; on the executor.
  client_metrics metrics() const;
  notify_hub hub;
  attempt_gate attempts;  // after the hub: a waiting attempt may have a waiter in it
  watchdog dog;
  latch_sweeper latches;

 private:
  void on_message(std::string_view channel, std::string_view payload,
                  std::chrono::steady_clock::time_point since) override;
  void on_subscribed(std::string_view channel) override;
  void on_refused(std::string_view channel, std::error_code ec, std::string_view text) override;
  void on_state(connection_state state, std::error_code reason,
                const std::string& diagnostic) override;

  std::uint32_t last_ticket_ = 0;  // on the executor
  std::mutex states_mutex_;
  std::unordered_map<std::string, std::weak_ptr<lock_state>> states_;
  std::unordered_map<const lock_state*, std::string> last_errors_;  // under states_mutex_
  std::atomic<bool> any_last_error_{false};
  char id_prefix_[16];        // the client's random half of every request id, in hex
  std::uint64_t id_counter_;  // the other half
  std::function<void(const connection_event&)> state_handler_;
  std::atomic<connection_state> state_{connection_state::disconnected};
  std::string log_name_;
  bool was_connected_ = false;
  std::string node_;  // the node of the last connection (host:port)
};

/// A fresh owner id from the per-process counter (also used for blocking-facade threads).
std::uint64_t next_owner_id() noexcept;

}  // namespace rlock::detail
