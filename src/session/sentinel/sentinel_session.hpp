#pragma once

#include "session/node/node_session.hpp"

#include <memory>
#include <string_view>

namespace rlock::detail {

/// A node_session whose node is the master the sentinels name: a locator asks them before every
/// connection attempt, a `ROLE` check in the handshake refuses a node that is not the master,
/// and a second connection, to a sentinel, listens for `+switch-master` and moves the data
/// connection to the new master at once.
class sentinel_session final : public node_session {
 public:
  sentinel_session(boost::asio::any_io_executor ex, const config& cfg);
  ~sentinel_session() override;

  void async_connect(connection::connect_handler h) override;
  void close(std::error_code reason) override;

 private:
  /// Hears `+switch-master` on the sentinel connection.
  struct switch_listener final : connection::listener {
    sentinel_session* owner = nullptr;
    void on_message(std::string_view channel, std::string_view payload,
                    std::chrono::steady_clock::time_point since) override;
    void on_subscribed(std::string_view) override {}
    void on_refused(std::string_view, std::error_code, std::string_view) override {}
    void on_state(connection_state, std::error_code, const std::string&) override {}
  };

  std::shared_ptr<connection> sentinel_;  // the `+switch-master` listener
  switch_listener switches_;
};

}  // namespace rlock::detail
