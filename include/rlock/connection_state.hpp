#pragma once

#include "rlock/export.hpp"

#include <boost/system/error_code.hpp>

#include <string>
#include <string_view>

namespace rlock {

/// The state of a client's connection.
enum class connection_state {
  /// Not connected: before connect(), after it failed, or after a loss with reconnection off.
  disconnected,
  /// The first connection attempt (connect()) is under way.
  connecting,
  /// Connected and past the handshake: commands go out.
  connected,
  /// The connection was lost; the client is waiting out its backoff or connecting again.
  /// Operations wait (within their own bounds) unless config::fail_fast.
  reconnecting,
  /// close() was called.
  closed,
};

/// "disconnected", "connecting", "connected", "reconnecting", "closed".
RLOCK_EXPORT std::string_view to_string(connection_state state) noexcept;

/// A change of the connection's state, as client::on_state_change() reports it.
struct connection_event {
  /// The state entered.
  connection_state state;
  /// Why the connection was lost or an attempt failed; empty on `connected`.
  boost::system::error_code reason;
  /// Redis's or the operating system's words for it.
  std::string diagnostic;
};

}  // namespace rlock
