#pragma once

#include "rlock/export.hpp"

#include <functional>
#include <string_view>

namespace rlock {

/// How much a log line matters.
enum class log_level {
  debug,    ///< routine events (a connection made)
  info,     ///< a recovery (reconnected)
  warning,  ///< a fault the client works around (connection lost, renewal failed, slow acquire)
  error,    ///< a fault a caller must know of (a lock lost, a protocol error)
};

/// "debug", "info", "warning", "error".
RLOCK_EXPORT std::string_view to_string(log_level level) noexcept;

/// Where a client's log lines go: called on the client's executor with the level and a line
/// that names the client, the lock and the owner (its id and the first 8 digits of the client's
/// UUID) where there is one. Unset (the default): silent.
using logger = std::function<void(log_level, std::string_view line)>;

/// A logger writing `rlock <level>: <line>` to stderr (one write per line, so lines of several
/// threads do not interleave), for the levels from `min` up.
RLOCK_EXPORT logger stderr_logger(log_level min = log_level::info);

}  // namespace rlock
