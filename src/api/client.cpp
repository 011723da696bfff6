#include "rlock/client.hpp"

#include "api/client_impl.hpp"
#include "engine/acquire_reply.hpp"
#include "engine/kind_access.hpp"
#include "engine/lock_state.hpp"
#include "engine/operations.hpp"
#include "engine/spawn.hpp"
#include "kinds/registry.hpp"
#include "rlock/error.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <string_view>
#include <vector>

namespace rlock {

namespace asio = boost::asio;

namespace detail {

namespace {

/// Boost.Uuid's random_generator draws from the operating system's CSPRNG (getrandom).
std::string random_uuid() { return boost::uuids::to_string(boost::uuids::random_generator()()); }

/// Settings that cannot work together are refused when the client is made, not at first use.
const config& validated(const config& cfg) {
  const auto& sync = cfg.sync_replicas;
  if (sync.replicas < 0) {
    throw_error(errc::invalid_argument,
                fmt::format("sync_replicas.replicas must not be negative, got {}", sync.replicas));
  }
  if (sync.replicas > 0 && (sync.timeout.count() <= 0 || sync.timeout >= cfg.command_timeout)) {
    // WAIT 0 would block the connection until a replica answers, however long that takes.
    throw_error(errc::invalid_argument,
                fmt::format("sync_replicas.timeout must be positive and below command_timeout "
                            "({} ms), got {} ms",
                            cfg.command_timeout.count(), sync.timeout.count()));
  }
  if (cfg.watchdog_timeout < std::chrono::milliseconds(100) ||
      cfg.watchdog_timeout > longest_server_wait) {
    // Renewed every third of it and believed until a margin (1 % + 5 ms) before it ends: below
    // 100 ms timer latency eats the margin; above 2^31 ms its deadlines are none a server keeps.
    throw_error(errc::invalid_argument,
                fmt::format("watchdog_timeout must be between 100 ms and {} ms, got {} ms",
                            longest_server_wait.count(), cfg.watchdog_timeout.count()));
  }
  // Each kind's own settings, checked by the kind that reads them.
  for (const lock_kind* kind : registered_kinds()) {
    if (kind->settings_error == nullptr) continue;
    if (auto why = kind->settings_error(cfg); !why.empty()) {
      throw_error(errc::invalid_argument, why);
    }
  }
  if (!cfg.cluster.nodes.empty() && !cfg.sentinel.nodes.empty()) {
    throw_error(
        errc::invalid_argument,
        "cluster.nodes and sentinel.nodes are both set: a client talks to one or the other");
  }
  if (cfg.pubsub == config::pubsub_mode::sharded && cfg.cluster.nodes.empty()) {
    throw_error(errc::invalid_argument,
                "pubsub = sharded needs cluster.nodes: sharded channels are a Cluster feature");
  }
  if (!cfg.sentinel.nodes.empty() && cfg.sentinel.master_name.empty()) {
    throw_error(errc::invalid_argument, "sentinel.master_name must be set with sentinel.nodes");
  }
  for (const auto& node : cfg.sentinel.nodes) {
    if (node.host.empty() || node.port == 0) {
      throw_error(
          errc::invalid_argument,
          fmt::format("sentinel node '{}:{}' needs a host and a port", node.host, node.port));
    }
  }
  return cfg;
}

}  // namespace

client_impl::client_impl(const asio::any_io_executor& ex, config c)
    : executor_(ex),
      cfg_(std::move(c)),
      session_(make_session(executor_, cfg_)),
      scripts_(*session_, executor_),
      hub_(*session_, executor_),
      attempts_(cfg_.max_attempts_in_flight),
      dog_(executor_, scripts_, cfg_.watchdog_timeout),
      latches_(executor_, *session_, cfg_.command_timeout),
      ctx_(executor_, cfg_, random_uuid(), {*session_, scripts_, hub_, dog_, attempts_, latches_}) {
}

client_impl::~client_impl() {
  // The connection may outlive us by a few handlers: it must not call back into a dead hub.
  session_->set_listener(nullptr);
  shutdown(std::make_error_code(std::errc::operation_canceled));
}

void client_impl::start() {
  dog_.set_owner(weak_from_this());
  dog_.index_keys(cfg_.track_holds);  // only a tracking client is told which keys changed
  dog_.on_failure([this](std::span<const watchdog::lease* const> locks, std::error_code ec,
                         const resp3::value& reply) { log_renewal_failure(locks, ec, reply); });
  latches_.set_owner(weak_from_this());
  hub_.set_owner(weak_from_this());
  session_->set_listener(this);
}

void client_impl::log_renewal_failure(std::span<const watchdog::lease* const> locks,
                                      std::error_code ec, const resp3::value& reply) {
  // Named (a few at most), each with its short owner: the client's UUID in full is noise.
  constexpr std::size_t named = 5;
  std::string which;
  for (std::size_t i = 0; i < locks.size() && i < named; ++i) {
    std::string_view key = locks[i]->lease_key();
    std::string_view field = locks[i]->lease_field();
    key.remove_prefix(std::min(key.size(), cfg_.key_prefix.size()));
    const auto colon = field.rfind(':');
    which += fmt::format("{}'{}' (owner {}:{})", i == 0 ? "" : ", ", key,
                         std::string_view(ctx_.uuid).substr(0, 8),
                         colon == std::string_view::npos ? field : field.substr(colon + 1));
  }
  if (locks.size() > named) which += fmt::format(" and {} more", locks.size() - named);
  ctx_.log(log_level::warning,
           "renewal of {} lock(s) failed: {}: {}{}{} (the next rounds retry; lost() if none "
           "succeeds in time)",
           locks.size(), which, ec.message(), reply.is_error() ? ": " : "",
           reply.is_error() ? reply.str : std::string());
}

void client_impl::shutdown(std::error_code reason) {
  dog_.stop();  // pending lost() waiters complete with operation_aborted: nobody watches now
  session_->close(reason);
  hub_.fail_all(reason);
  fail_waiting_attempts(ctx_, reason);
}

void client_impl::on_message(std::string_view channel, std::string_view payload,
                             std::chrono::steady_clock::time_point since) {
  hub_.on_message(channel, payload, since);
}

void client_impl::on_subscribed(std::string_view channel) { hub_.on_subscribed(channel); }

void client_impl::on_invalidate(std::span<const std::string_view> keys, bool all) {
  // A key of a hold changed by another client, or everything forgotten: its holder is told at
  // once if the renewal finds it gone (docs/guide/faults.md, "Deposed holders").
  if (all) {
    dog_.check_all();
  } else {
    dog_.check(keys);
  }
}

void client_impl::on_refused(std::string_view channel, std::error_code ec, std::string_view text) {
  hub_.on_refused(channel, ec, text);
}

void client_impl::on_state(connection_state state, std::error_code reason,
                           const std::string& diagnostic) {
  state_.store(state, std::memory_order_relaxed);
  const bool protocol = reason == errc::protocol_error;
  switch (state) {
    case connection_state::reconnecting:
      ctx_.log(protocol ? log_level::error : log_level::warning,
               "connection lost ({}); reconnecting",
               diagnostic.empty() ? reason.message() : diagnostic);
      break;
    case connection_state::connected: {
      const auto node = session_->node_address();
      if (was_connected_) {
        ctx_.log(log_level::info, "reconnected{} ({} reconnects so far)",
                 node != node_ ? fmt::format(" to {} (was {})", node, node_) : std::string(),
                 session_->stats().reconnects);
        if (node != node_) {
          // A new node (a failover) has the old one's data as replication had it: releases the
          // old master acknowledged may be missing, so it may count holds of our owners that no
          // caller has; renewing them would keep a lock for nobody. Until every hold from before
          // the move has expired, a release that leaves such holds gives them back.
          ctx_.counts_uncertain_until =
              std::chrono::steady_clock::now() +
              std::max(ctx_.metrics.longest_lease(), cfg_.watchdog_timeout);
        }
      } else {
        ctx_.log(log_level::debug, "connected to {}{}", node, cfg_.tls.enabled ? " over TLS" : "");
      }
      node_ = node;
      if (cfg_.track_holds) {
        if (auto why = session_->tracking_refusal(); !why.empty() && why != tracking_refusal_) {
          ctx_.log(log_level::warning,
                   "a holder whose key another client changes is told at its next renewal, not "
                   "at once ({}); set track_holds = false to silence this",
                   why);
          tracking_refusal_ = std::move(why);
        }
      }
      if (cfg_.tls.enabled && !cfg_.tls.verify_peer) {
        ctx_.log(log_level::warning,
                 "TLS certificate verification is OFF (tls.verify_peer = false): any server is "
                 "accepted, a man in the middle included");
      }
      was_connected_ = true;
      break;
    }
    case connection_state::disconnected:
      if (reason) {
        ctx_.log(protocol ? log_level::error : log_level::warning, "disconnected: {}",
                 diagnostic.empty() ? reason.message() : diagnostic);
      }
      break;
    default:
      break;
  }
  if (state_handler_) {
    state_handler_(connection_event{state, boost::system::error_code(reason), diagnostic});
  }
}

asio::awaitable<failure> client_impl::connect_op(std::shared_ptr<client_impl> c) {
  co_await asio::this_coro::throw_if_cancelled(false);  // bounded by connect_timeout instead
  // The initiation captures a plain pointer: g++ 12 destroys some temporaries of a co_await
  // expression twice, and a captured shared_ptr then loses a reference.
  auto result = co_await asio::async_initiate<const asio::use_awaitable_t<>&,
                                              void(std::error_code, std::string)>(
      [impl = c.get()](auto handler) { impl->session_->async_connect(std::move(handler)); },
      asio::use_awaitable);
  co_return failure(std::get<0>(result), std::move(std::get<1>(result)));
}

asio::awaitable<failure> client_impl::close_op(std::shared_ptr<client_impl> c) {
  co_await asio::this_coro::throw_if_cancelled(false);
  // Unlocks already answered still owe their latch DEL, and waiters that gave up their leave
  // (a fair queue's entry, a writer's mark): send what is pending and wait for the answers (at
  // most command_timeout; cancellation ends the wait), so a closed client leaves nothing behind.
  c->latches_.flush();
  const auto settled = [&c] {
    return c->latches_.in_flight() == 0 && c->ctx_.owed.in_flight() == 0;
  };
  if (!settled()) {
    asio::steady_timer drained(c->executor_, c->cfg_.command_timeout);
    const auto check = [&] {
      if (settled()) drained.cancel();
    };
    c->latches_.on_drained(check);
    c->ctx_.owed.on_drained(check);
    co_await drained.async_wait(asio::as_tuple(asio::use_awaitable));
    c->latches_.on_drained({});
    c->ctx_.owed.on_drained({});
  }
  c->shutdown(std::make_error_code(std::errc::operation_canceled));
  co_return failure();
}

}  // namespace detail

client::client(executor_type ex, config cfg)
    : impl_(std::make_shared<detail::client_impl>(ex, detail::validated(cfg))) {
  impl_->start();
}

client::~client() {
  if (impl_) impl_->shutdown(std::make_error_code(std::errc::operation_canceled));
}

client::executor_type client::get_executor() const noexcept { return impl_->executor_; }
const config& client::get_config() const noexcept { return impl_->cfg_; }
const std::string& client::id() const noexcept { return impl_->ctx_.uuid; }

client_stats client::stats() const noexcept {
  client_stats s;
  s.acquire_attempts =
      impl_->ctx_.metrics.counters.acquire_attempts.load(std::memory_order_relaxed);
  s.notified_wakeups =
      impl_->ctx_.metrics.counters.notified_wakeups.load(std::memory_order_relaxed);
  s.expiry_wakeups = impl_->ctx_.metrics.counters.expiry_wakeups.load(std::memory_order_relaxed);
  s.renewal_calls = impl_->dog_.renew_calls();
  s.hold_checks = impl_->dog_.checks();
  s.lost_locks = impl_->ctx_.metrics.counters.lost_locks.load(std::memory_order_relaxed);
  const auto link = impl_->session_->stats();
  s.reconnects = link.reconnects;
  s.health_check_failures = link.health_check_failures;
  s.retried_commands = link.retried_commands;
  s.writes = link.writes;
  s.reconciled_acquires =
      impl_->ctx_.metrics.counters.reconciled_acquires.load(std::memory_order_relaxed);
  s.given_back = impl_->ctx_.metrics.counters.given_back.load(std::memory_order_relaxed);
  s.local_handoffs = impl_->ctx_.metrics.counters.local_handoffs.load(std::memory_order_relaxed);
  s.handoffs_given_back =
      impl_->ctx_.metrics.counters.handoffs_given_back.load(std::memory_order_relaxed);
  return s;
}

client_activity client::activity() const noexcept {
  client_activity a;
  a.renewed_locks = impl_->dog_.size();
  a.renewal_batches = impl_->dog_.batches_in_flight();
  a.watchdog_armed = impl_->dog_.armed();
  a.waiters = impl_->hub_.waiter_total();
  a.waiter_channels = impl_->hub_.channel_count();
  a.queued_attempts = impl_->attempts_.waiting();
  a.subscriptions = impl_->session_->subscriptions();
  a.requests = impl_->session_->outstanding();
  a.latches = impl_->latches_.pending();
  return a;
}

client_metrics detail::client_impl::metrics() const {
  client_metrics m;
  m.acquisitions_immediate =
      ctx_.metrics.counters.acquired_immediate.load(std::memory_order_relaxed);
  m.acquisitions_notification =
      ctx_.metrics.counters.acquired_notification.load(std::memory_order_relaxed);
  m.acquisitions_expiry = ctx_.metrics.counters.acquired_expiry.load(std::memory_order_relaxed);
  m.acquisitions_handoff = ctx_.metrics.counters.acquired_handoff.load(std::memory_order_relaxed);
  m.acquire_attempts = ctx_.metrics.counters.acquire_attempts.load(std::memory_order_relaxed);
  m.acquire_wait = ctx_.metrics.wait_times.snapshot();
  m.hold = ctx_.metrics.hold_times.snapshot();
  m.renewal_calls = dog_.renew_calls();
  m.renewal_failures = dog_.renew_failures();
  m.lost_locks = ctx_.metrics.counters.lost_locks.load(std::memory_order_relaxed);
  m.reconnects = session_->stats().reconnects;
  m.reconciled_acquires = ctx_.metrics.counters.reconciled_acquires.load(std::memory_order_relaxed);
  m.given_back = ctx_.metrics.counters.given_back.load(std::memory_order_relaxed);
  m.requests_in_flight = session_->outstanding();
  m.subscriptions = session_->subscriptions();
  m.renewed_locks = dog_.size();
  m.waiters = hub_.waiter_total();
  m.connected = state() == connection_state::connected;
  return m;
}

client_metrics client::metrics() const { return impl_->metrics(); }

void client::start_metrics(const std::shared_ptr<detail::client_impl>& impl,
                           detail::handler<client_metrics> h) {
  detail::spawn(
      impl->executor_,
      [](std::shared_ptr<detail::client_impl> c)
          -> asio::awaitable<std::pair<detail::failure, client_metrics>> {
        co_return std::pair{detail::failure(), c->metrics()};
      }(impl),
      std::move(h));
}

connection_state client::state() const noexcept { return impl_->state(); }

void client::on_state_change(std::function<void(const connection_event&)> handler) {
  impl_->set_state_handler(std::move(handler));
}

std::chrono::milliseconds client::lease_margin() const noexcept { return impl_->dog_.margin(); }

void client::start_connect(const std::shared_ptr<detail::client_impl>& impl, detail::handler<> h) {
  detail::spawn(impl->executor_, detail::client_impl::connect_op(impl), std::move(h));
}

void client::start_close(const std::shared_ptr<detail::client_impl>& impl, detail::handler<> h) {
  detail::spawn(impl->executor_, detail::client_impl::close_op(impl), std::move(h));
}

namespace {

/// The awaitable form: a failure is thrown with its code and Redis's or the OS's words.
template <typename Start>
asio::awaitable<void> awaitable_of(const std::shared_ptr<detail::client_impl>& impl, Start st) {
  return asio::async_initiate<const asio::use_awaitable_t<>&, void(std::exception_ptr)>(
      [](auto handler, std::shared_ptr<detail::client_impl> c, Start start) {
        start(c, detail::handler<>(detail::throwing(std::move(handler))));
      },
      asio::use_awaitable, impl, st);
}

}  // namespace

asio::awaitable<void> client::connect() { return awaitable_of(impl_, &client::start_connect); }

asio::awaitable<void> client::close() { return awaitable_of(impl_, &client::start_close); }

reentrant_lock client::get_lock(std::string_view name) { return get<reentrant_lock>(name); }
reentrant_lock client::get_lock(std::string_view name, std::uint64_t owner_id) {
  return get<reentrant_lock>(name, owner_id);
}
fenced_lock client::get_fenced_lock(std::string_view name) { return get<fenced_lock>(name); }
fenced_lock client::get_fenced_lock(std::string_view name, std::uint64_t owner_id) {
  return get<fenced_lock>(name, owner_id);
}
non_reentrant_lock client::get_non_reentrant_lock(std::string_view name) {
  return get<non_reentrant_lock>(name);
}
non_reentrant_lock client::get_non_reentrant_lock(std::string_view name, std::uint64_t owner_id) {
  return get<non_reentrant_lock>(name, owner_id);
}
fair_lock client::get_fair_lock(std::string_view name) { return get<fair_lock>(name); }
fair_lock client::get_fair_lock(std::string_view name, std::uint64_t owner_id) {
  return get<fair_lock>(name, owner_id);
}
non_reentrant_fair_lock client::get_non_reentrant_fair_lock(std::string_view name) {
  return get<non_reentrant_fair_lock>(name);
}
non_reentrant_fair_lock client::get_non_reentrant_fair_lock(std::string_view name,
                                                            std::uint64_t owner_id) {
  return get<non_reentrant_fair_lock>(name, owner_id);
}
spin_lock client::get_spin_lock(std::string_view name) { return get<spin_lock>(name); }
spin_lock client::get_spin_lock(std::string_view name, std::uint64_t owner_id) {
  return get<spin_lock>(name, owner_id);
}
read_write_lock client::get_read_write_lock(std::string_view name) {
  return get<read_write_lock>(name);
}
read_write_lock client::get_read_write_lock(std::string_view name, rw_priority priority) {
  return read_write_lock(*this, name, priority);
}
read_write_lock client::get_read_write_lock(std::string_view name, std::uint64_t owner_id) {
  return get<read_write_lock>(name, owner_id);
}
read_write_lock client::get_read_write_lock(std::string_view name, std::uint64_t owner_id,
                                            rw_priority priority) {
  return read_write_lock(*this, name, owner_id, priority);
}
semaphore client::get_semaphore(std::string_view name) { return get<semaphore>(name); }
permit_expirable_semaphore client::get_permit_expirable_semaphore(std::string_view name) {
  return get<permit_expirable_semaphore>(name);
}
}  // namespace rlock

namespace rlock::detail {

std::shared_ptr<lock_state> kind_access::new_owner(client& c, std::string_view name,
                                                   const lock_kind& kind) {
  return c.impl_->new_owner(name, kind);
}

std::shared_ptr<lock_state> kind_access::new_owner(client& c, std::string_view name,
                                                   const lock_kind& kind, std::uint64_t owner) {
  return c.impl_->new_owner(name, kind, owner);
}

std::shared_ptr<lock_state> kind_access::state_for(client& c, std::string_view name,
                                                   std::uint64_t owner, const lock_kind& kind) {
  return c.impl_->state_for(name, owner, kind);
}

const config& kind_access::config_of(client& c) { return c.get_config(); }

std::shared_ptr<engine_context> kind_access::context(client& c) { return c.impl_->context(); }

}  // namespace rlock::detail
