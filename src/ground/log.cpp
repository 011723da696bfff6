#include "rlock/log.hpp"

#include "rlock/connection_state.hpp"
#include "rlock/wake_reason.hpp"

#include <cstdio>
#include <string>

namespace rlock {

std::string_view to_string(log_level level) noexcept {
  switch (level) {
    case log_level::debug:
      return "debug";
    case log_level::info:
      return "info";
    case log_level::warning:
      return "warning";
    case log_level::error:
      return "error";
  }
  return "unknown";
}

std::string_view to_string(wake_reason reason) noexcept {
  switch (reason) {
    case wake_reason::immediate:
      return "immediate";
    case wake_reason::notification:
      return "notification";
    case wake_reason::expiry:
      return "expiry";
    case wake_reason::handoff:
      return "handoff";
  }
  return "unknown";
}

std::string_view to_string(connection_state state) noexcept {
  switch (state) {
    case connection_state::disconnected:
      return "disconnected";
    case connection_state::connecting:
      return "connecting";
    case connection_state::connected:
      return "connected";
    case connection_state::reconnecting:
      return "reconnecting";
    case connection_state::closed:
      return "closed";
  }
  return "unknown";
}

logger stderr_logger(log_level min) {
  return [min](log_level level, std::string_view line) {
    if (level < min) return;
    std::string out = "rlock ";
    out += to_string(level);
    out += ": ";
    out += line;
    out += '\n';
    std::fwrite(out.data(), 1, out.size(), stderr);  // one write: lines do not interleave
  };
}

}  // namespace rlock
