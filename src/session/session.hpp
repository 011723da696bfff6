#pragma once

#include "rlock/config.hpp"
#include "session/connection.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <fmt/format.h>

#include <memory>
#include <string>
#include <string_view>
#include <system_error>

namespace rlock::detail {

/// What the services (scripts, wait hub, watchdog, queries) talk to: they run a request or
/// (un)subscribe a channel, addressed by the key the request is about. A standalone server has
/// one connection for every key. The variants keep this interface: TLS changes the
/// connection's stream, Sentinel how it finds its node (a locator asking the sentinels before
/// every attempt, a `ROLE` check in the handshake, and a second connection, to a sentinel,
/// listening for `+switch-master`), and Cluster, to come, keeps one connection per master and
/// routes each key by its hash slot (sharded pub/sub for channels).
class session {
 public:
  session(boost::asio::any_io_executor ex, config cfg);
  session(const session&) = delete;
  session& operator=(const session&) = delete;
  ~session();

  void set_listener(connection::listener* l) noexcept { node_->set_listener(l); }
  void add_handshake_step(handshake_step step) { node_->add_handshake_step(std::move(step)); }
  void async_connect(connection::connect_handler h);
  void close(std::error_code reason);

  multiplexer::id_type exec(std::string_view /*key*/, std::string payload, request_options opts,
                            reply_handler handler) {
    return node_->exec(std::move(payload), opts, std::move(handler));
  }
  bool withdraw(std::string_view /*key*/, multiplexer::id_type id, std::error_code reason) {
    return node_->withdraw(id, reason);
  }
  void subscribe(std::string_view /*key*/, std::string_view channel) { node_->subscribe(channel); }
  void unsubscribe(std::string_view /*key*/, std::string_view channel) {
    node_->unsubscribe(channel);
  }
  bool subscribed(std::string_view /*key*/, std::string_view channel) const {
    return node_->subscribed(channel);
  }

  connection_state state() const noexcept { return node_->state(); }
  bool connected() const noexcept { return node_->connected(); }
  const std::string& last_error() const noexcept { return node_->last_error(); }
  const connection::counters& stats() const noexcept { return node_->stats(); }
  std::size_t subscriptions() const noexcept { return node_->subscriptions(); }
  std::size_t outstanding() const noexcept { return node_->outstanding(); }
  const config& cfg() const noexcept { return node_->cfg(); }
  /// The data node of the current (or latest) connection attempt.
  std::string node_address() const { return fmt::format("{}:{}", node_->host(), node_->port()); }

 private:
  /// Hears `+switch-master` on the sentinel connection.
  struct switch_listener final : connection::listener {
    session* owner = nullptr;
    void on_message(std::string_view channel, std::string_view payload) override;
    void on_subscribed(std::string_view) override {}
    void on_refused(std::string_view, std::error_code, std::string_view) override {}
    void on_state(connection_state, std::error_code, const std::string&) override {}
  };

  std::shared_ptr<connection> node_;
  std::shared_ptr<connection> sentinel_;  // Sentinel only: the `+switch-master` listener
  switch_listener switches_;
};

}  // namespace rlock::detail
