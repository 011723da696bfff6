#pragma once

#include "rlock/config.hpp"
#include "session/connection.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <system_error>

namespace rlock::detail {

/// What the services (scripts, wait hub, watchdog, queries) talk to: they run a request or
/// (un)subscribe a channel, addressed by the key the request is about. A standalone server has
/// one connection for every key. The variants to come keep this interface: Sentinel changes how
/// the connection finds its node, TLS its stream, and Cluster keeps one connection per master and
/// routes each key by its hash slot (sharded pub/sub for channels).
class session {
 public:
  session(boost::asio::any_io_executor ex, config cfg)
      : node_(std::make_shared<connection>(std::move(ex), std::move(cfg))) {}
  session(const session&) = delete;
  session& operator=(const session&) = delete;
  ~session() { node_->set_listener(nullptr); }

  void set_listener(connection::listener* l) noexcept { node_->set_listener(l); }
  void add_handshake_step(handshake_step step) { node_->add_handshake_step(std::move(step)); }
  void async_connect(connection::connect_handler h) { node_->async_connect(std::move(h)); }
  void close(std::error_code reason) { node_->close(reason); }

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

 private:
  std::shared_ptr<connection> node_;
};

}  // namespace rlock::detail
