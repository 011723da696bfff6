#include "session/sentinel/sentinel_session.hpp"

#include "rlock/error.hpp"
#include "session/sentinel/sentinel_locator.hpp"
#include "session/sentinel/sentinel_replies.hpp"

namespace rlock::detail {

namespace {

constexpr std::string_view switch_channel = "+switch-master";

}  // namespace

sentinel_session::sentinel_session(boost::asio::any_io_executor ex, const config& cfg)
    : node_session(ex, cfg) {
  auto watch_cfg = sentinel_connection_config(cfg);
  sentinel_ = std::make_shared<connection>(ex, std::move(watch_cfg));
  sentinel_->set_locator(std::make_shared<sentinel_rotation>(cfg.sentinel.nodes));
  sentinel_->keep_trying();
  switches_.owner = this;
  sentinel_->set_listener(&switches_);
  node_->set_locator(std::make_shared<sentinel_locator>(ex, cfg));
  // The sentinels' view may be stale (a failover under way): the node itself must say it is
  // the master before anything runs on it.
  node_->add_handshake_step({"*1\r\n$4\r\nROLE\r\n", [](resp3::value& reply, std::string& why) {
                               if (says_master(reply, why)) return std::error_code{};
                               why = "the node Sentinel named is not the master: " + why;
                               return make_error_code(errc::not_master);
                             }});
}

sentinel_session::~sentinel_session() {
  sentinel_->set_listener(nullptr);
  sentinel_->close(make_error_code(std::errc::operation_canceled));
}

void sentinel_session::async_connect(connection::connect_handler h) {
  // The `+switch-master` listener starts once the master was found: nobody waits on it, and it
  // keeps trying the sentinels in turn until the client closes. Weak: the completion may run
  // after the session is gone.
  node_->async_connect([watch = std::weak_ptr<connection>(sentinel_), h = std::move(h)](
                           std::error_code ec, std::string diagnostic) mutable {
    auto listener = watch.lock();
    if (!ec && listener && listener->state() == connection_state::disconnected) {
      listener->subscribe(switch_channel);
      listener->async_connect([](std::error_code, std::string) {});
    }
    std::move(h)(ec, std::move(diagnostic));
  });
}

void sentinel_session::close(std::error_code reason) {
  sentinel_->close(reason);
  node_->close(reason);
}

void sentinel_session::switch_listener::on_message(std::string_view channel,
                                                   std::string_view payload,
                                                   std::chrono::steady_clock::time_point) {
  if (channel != switch_channel) return;
  auto event = parse_switch_master(payload);
  const auto& cfg = owner->node_->cfg();
  if (!event || event->name != cfg.sentinel.master_name) return;
  owner->node_->move_to(event->to, fmt::format("Sentinel switched master '{}' to {}:{}",
                                               event->name, event->to.host, event->to.port));
}

}  // namespace rlock::detail
