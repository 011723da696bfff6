#pragma once

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <string>
#include <system_error>

namespace rlock::detail {

/// Where a connection attempt goes, or why it cannot go anywhere.
struct located {
  std::error_code ec;
  std::string host;
  std::uint16_t port = 0;
  std::string diagnostic;
};

/// Decides, before each connection attempt, which node the attempt is for: a standalone server
/// needs none (its address is in config), Sentinel asks the sentinels every time.
class node_locator {
 public:
  virtual ~node_locator() = default;
  /// Completes on the connection's executor, within the locator's own bounds.
  virtual boost::asio::awaitable<located> locate() = 0;
  /// The next locate() should try `host:port` first: an authoritative announcement (Sentinel's
  /// `+switch-master`) said the node is there, fresher than what some sentinels may still say.
  virtual void prefer(std::string host, std::uint16_t port) {
    static_cast<void>(host);
    static_cast<void>(port);
  }
};

}  // namespace rlock::detail
