#pragma once

#include "engine/attempt_gate.hpp"
#include "engine/engine_context.hpp"
#include "engine/latch_sweeper.hpp"
#include "notify/notify_hub.hpp"
#include "rlock/client.hpp"
#include "rlock/config.hpp"
#include "rlock/detail/failure.hpp"
#include "script/script_registry.hpp"
#include "session/session.hpp"
#include "watchdog/watchdog.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace rlock::detail {

/// What a client owns: the session and the services on it, and the engine's context over them.
/// Everything but the counters and the state snapshot is touched only on the executor. The lock
/// layer sees none of it but the context (engine/engine_context.hpp).
class client_impl final : public std::enable_shared_from_this<client_impl>,
                          private connection::listener {
 public:
  client_impl(const boost::asio::any_io_executor& ex, config c);
  ~client_impl();

  /// Wires the parts together once the object is owned by a shared_ptr.
  void start();
  /// Fails everything pending with `reason` and closes the session.
  void shutdown(std::error_code reason);

  /// The engine's view of this client, sharing its ownership: an operation that holds it keeps
  /// the client's parts alive.
  std::shared_ptr<engine_context> context() { return {shared_from_this(), &ctx_}; }

  void set_state_handler(std::function<void(const connection_event&)> h) {
    state_handler_ = std::move(h);
  }
  connection_state state() const noexcept { return state_.load(std::memory_order_relaxed); }
  /// Everything client::metrics() reports; on the executor.
  client_metrics metrics() const;

 private:
  friend class rlock::client;
  friend struct kind_access;
  static boost::asio::awaitable<failure> connect_op(std::shared_ptr<client_impl> c);
  static boost::asio::awaitable<failure> close_op(std::shared_ptr<client_impl> c);

  /// The state of (name, owner), shared by every handle of that owner. Thread-safe.
  std::shared_ptr<lock_state> state_for(std::string_view name, std::uint64_t owner,
                                        const lock_kind& kind) {
    return ctx_.owners.state_for(context(), name, owner, kind);
  }
  /// The state of a new owner of `name` (owner_table::new_owner). Thread-safe.
  std::shared_ptr<lock_state> new_owner(std::string_view name, const lock_kind& kind,
                                        std::optional<std::uint64_t> id = std::nullopt) {
    return owner_table::new_owner(context(), name, kind, id);
  }

  /// Logs a failed renewal call once per lock and failure streak, naming the locks.
  void log_renewal_failure(std::span<const watchdog::lease* const> locks, std::error_code ec,
                           const resp3::value& reply);

  void on_message(std::string_view channel, std::string_view payload,
                  std::chrono::steady_clock::time_point since) override;
  void on_subscribed(std::string_view channel) override;
  void on_invalidate(std::span<const std::string_view> keys, bool all) override;
  void on_refused(std::string_view channel, std::error_code ec, std::string_view text) override;
  void on_state(connection_state state, std::error_code reason,
                const std::string& diagnostic) override;

  const boost::asio::any_io_executor executor_;
  const config cfg_;
  const std::unique_ptr<detail::session> session_;  // Standalone, Sentinel or Cluster (config)
  script_registry scripts_;
  notify_hub hub_;
  attempt_gate attempts_;  // after the hub: a waiting attempt may have a waiter in it
  watchdog dog_;
  latch_sweeper latches_;
  engine_context ctx_;  // last: made over the parts above, gone before them

  std::function<void(const connection_event&)> state_handler_;
  std::atomic<connection_state> state_{connection_state::disconnected};
  bool was_connected_ = false;
  std::string node_;              // the node of the last connection (host:port)
  std::string tracking_refusal_;  // logged once per reason
};

}  // namespace rlock::detail
