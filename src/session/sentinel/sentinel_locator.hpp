#pragma once

#include "rlock/config.hpp"
#include "session/node/node_locator.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <cstddef>
#include <optional>
#include <vector>

namespace rlock::detail {

/// The master's address from the sentinels: each in turn is asked `SENTINEL
/// get-master-addr-by-name` on a short-lived connection (its handshake with the sentinel
/// credentials, bounded by connect_timeout; the question by command_timeout) until one names an
/// address. The one that answered is asked first next time, as the sentinel client guidelines
/// say. Fails with master_not_found, naming each sentinel's failure.
class sentinel_locator final : public node_locator {
 public:
  sentinel_locator(boost::asio::any_io_executor ex, const config& cfg);
  boost::asio::awaitable<located> locate() override;
  /// After `+switch-master`: the sentinels that have not heard of the failover yet still name
  /// the old master, which says "master" until Sentinel demotes it (up to seconds later).
  void prefer(std::string host, std::uint16_t port) override {
    hint_ = config::endpoint{std::move(host), port};
  }

 private:
  boost::asio::any_io_executor executor_;
  std::optional<config::endpoint> hint_;
  config sentinel_cfg_;  // the data node's settings with the sentinels' credentials
  std::vector<config::endpoint> nodes_;
  std::string master_name_;
};

/// The sentinels one after the other, for the connection that listens to `+switch-master`:
/// each reconnection goes to the next one, so one sentinel down does not silence the events.
class sentinel_rotation final : public node_locator {
 public:
  explicit sentinel_rotation(std::vector<config::endpoint> nodes) : nodes_(std::move(nodes)) {}
  boost::asio::awaitable<located> locate() override;

 private:
  std::vector<config::endpoint> nodes_;
  std::size_t next_ = 0;
};

/// The settings of a connection to a sentinel: the data node's (TLS, timeouts, client name)
/// with the sentinel's address and credentials, database 0 and no watchdog concerns.
config sentinel_connection_config(const config& cfg);

}  // namespace rlock::detail
