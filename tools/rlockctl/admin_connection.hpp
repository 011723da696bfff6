#pragma once

#include "resp3/value.hpp"
#include "rlock/config.hpp"
#include "rlock/connection_state.hpp"
#include "session/node/connection.hpp"
#include "session/session.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace rlockctl {

using reply = rlock::detail::resp3::value;
using command = std::vector<std::string>;

/// The tool's window on Redis for what the lock API does not do (SCAN, CONFIG GET, keyspace
/// notifications; a lock's state is read with rlock::inspect): rlock's own session — the same
/// handshake, health check, reconnection, resubscription and Sentinel discovery as a client's —
/// with awaitable commands and message callbacks. Use it on its executor only.
class admin_connection : private rlock::detail::connection::listener {
 public:
  admin_connection(boost::asio::any_io_executor ex, rlock::config cfg);
  admin_connection(const admin_connection&) = delete;
  admin_connection& operator=(const admin_connection&) = delete;
  ~admin_connection();

  /// Connects once (config::connect_timeout); throws boost::system::system_error with the reason.
  boost::asio::awaitable<void> connect();

  /// Runs one command; an error reply throws boost::system::system_error (server_error or
  /// permission_denied) with Redis's text, as does a failure (timeout, connection_lost).
  boost::asio::awaitable<reply> run(command cmd);

  /// Runs `cmds` pipelined (written together, answered in order) where key `route` lives, or,
  /// with no route, each where its own key (its second word) lives: on a cluster, the commands
  /// about one lock all go to its slot's master. Error replies are returned as values, so one
  /// refused command does not hide the others; failures throw.
  boost::asio::awaitable<std::vector<reply>> pipeline(std::vector<command> cmds,
                                                      std::string route = {});
  /// The same on one node of masters() (commands about a node: SCAN).
  boost::asio::awaitable<std::vector<reply>> pipeline_on(std::string node,
                                                         std::vector<command> cmds);
  boost::asio::awaitable<reply> run_on(std::string node, command cmd);
  /// Every node serving keys: the server, or a cluster's masters.
  std::vector<std::string> masters() const { return conn_->masters(); }
  /// Whether the session subscribes sharded channels (Cluster on Redis 7).
  bool sharded() const { return conn_->publish_command() == "spublish"; }

  /// Subscribes `channel`, now and after every reconnect.
  void subscribe(std::string_view channel);

  void close();

  /// What the connection tells as it happens, on its executor.
  struct callbacks {
    std::function<void(std::string_view channel, std::string_view payload)> message;
    std::function<void(std::string_view channel)> subscribed;
    std::function<void(std::string_view channel, std::string_view text)> refused;
    std::function<void(rlock::connection_state, const std::string& diagnostic)> state;
  };
  callbacks events;

 private:
  void on_message(std::string_view channel, std::string_view payload,
                  std::chrono::steady_clock::time_point since) override;
  void on_subscribed(std::string_view channel) override;
  void on_refused(std::string_view channel, std::error_code ec, std::string_view text) override;
  void on_state(rlock::connection_state state, std::error_code reason,
                const std::string& diagnostic) override;

  boost::asio::awaitable<std::vector<reply>> send(std::vector<command> cmds, std::string node,
                                                  std::string route);
  [[noreturn]] void fail(std::error_code ec, std::string_view what) const;

  std::unique_ptr<rlock::detail::session> conn_;
};

/// The error a reply stands for: permission_denied for `-NOPERM`, server_error otherwise.
boost::system::system_error reply_error(const reply& r, std::string_view what);

}  // namespace rlockctl
