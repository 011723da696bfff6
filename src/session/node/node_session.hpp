#pragma once

#include "session/node/connection.hpp"
#include "session/session.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <fmt/format.h>

#include <memory>
#include <string>
#include <string_view>
#include <system_error>

namespace rlock::detail {

/// One connection to one server: every key lives there, so the key is not looked at. The
/// Sentinel variant derives from it and only changes how the connection finds its node.
class node_session : public session {
 public:
  node_session(boost::asio::any_io_executor ex, config cfg);
  ~node_session() override;

  void set_listener(connection::listener* l) override { node_->set_listener(l); }
  void add_handshake_step(handshake_step step) override {
    node_->add_handshake_step(std::move(step));
  }
  void async_connect(connection::connect_handler h) override { node_->async_connect(std::move(h)); }
  void close(std::error_code reason) override { node_->close(reason); }

  multiplexer::id_type exec(command c, request_options opts, reply_handler handler) override {
    opts.unknown = unknown_policy(c.kind());
    opts.answers = c.answers();
    return node_->exec(c.take_payload(), opts, std::move(handler));
  }
  bool withdraw(std::string_view /*key*/, multiplexer::id_type id,
                std::error_code reason) override {
    return node_->withdraw(id, reason);
  }
  void subscribe(std::string_view /*key*/, std::string_view channel) override {
    node_->subscribe(channel);
  }
  void unsubscribe(std::string_view /*key*/, std::string_view channel) override {
    node_->unsubscribe(channel);
  }
  bool subscribed(std::string_view /*key*/, std::string_view channel) const override {
    return node_->subscribed(channel);
  }

  connection_state state() const noexcept override { return node_->state(); }
  std::string last_error() const override { return node_->last_error(); }
  session_stats stats() const noexcept override;
  std::size_t subscriptions() const noexcept override { return node_->subscriptions(); }
  std::size_t outstanding() const noexcept override { return node_->outstanding(); }
  std::string node_address() const override {
    return fmt::format("{}:{}", node_->host(), node_->port());
  }
  std::string tracking_refusal() const override {
    if (node_->tracking_refusal().empty()) return {};
    return fmt::format("{}: {}", node_address(), node_->tracking_refusal());
  }

 protected:
  std::shared_ptr<connection> node_;
};

}  // namespace rlock::detail
