#pragma once

/// @file
/// fmt formatters for the rlock types people print: errc (its message), wake_reason,
/// connection_state and log_level (their to_string()), and config (its URL and main settings,
/// the password masked). Header-only; include it where you format them (it needs {fmt}, which
/// rlock itself only uses privately).
#include "rlock/config.hpp"
#include "rlock/connection_state.hpp"
#include "rlock/error.hpp"
#include "rlock/log.hpp"
#include "rlock/reentrant_lock.hpp"

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <type_traits>

namespace rlock::detail {
/// Formats a value through its to_string() / message as a string_view.
template <typename T>
struct named_formatter : fmt::formatter<std::string_view> {
  template <typename FormatContext>
  auto format(T v, FormatContext& ctx) const {
    if constexpr (std::is_same_v<T, errc>) {
      return fmt::formatter<std::string_view>::format(make_error_code(v).message(), ctx);
    } else {
      return fmt::formatter<std::string_view>::format(to_string(v), ctx);
    }
  }
};
}  // namespace rlock::detail

/// @cond
template <>
struct fmt::formatter<rlock::errc> : rlock::detail::named_formatter<rlock::errc> {};
template <>
struct fmt::formatter<rlock::wake_reason> : rlock::detail::named_formatter<rlock::wake_reason> {};
template <>
struct fmt::formatter<rlock::connection_state>
    : rlock::detail::named_formatter<rlock::connection_state> {};
template <>
struct fmt::formatter<rlock::log_level> : rlock::detail::named_formatter<rlock::log_level> {};

/// `redis[s]://user:***\@host:port/db name=... prefix='...' lease=30000ms timeout=5000ms ...`:
/// the password never appears (TLS file paths do; they are not secrets).
template <>
struct fmt::formatter<rlock::config> : fmt::formatter<std::string_view> {
  template <typename FormatContext>
  auto format(const rlock::config& c, FormatContext& ctx) const {
    std::string user;
    if (!c.username.empty() || !c.password.empty()) {
      user = c.username + (c.password.empty() ? "" : ":***") + "@";
    }
    std::string tls;
    if (c.tls.enabled) {
      tls = fmt::format(" tls(ca='{}' cert='{}' server_name='{}' verify={})", c.tls.ca_file,
                        c.tls.cert_file, c.tls.server_name, c.tls.verify_peer ? "on" : "OFF");
    }
    const auto text = fmt::format(
        "{}://{}{}:{}/{} name='{}' prefix='{}' lease={}ms timeout={}ms connect_timeout={}ms "
        "health_check={}ms reconnect={}{}",
        c.tls.enabled ? "rediss" : "redis", user, c.host, c.port, c.database, c.client_name,
        c.key_prefix, c.watchdog_timeout.count(), c.command_timeout.count(),
        c.connect_timeout.count(), c.health_check_interval.count(),
        c.reconnect.enabled ? "on" : "off", tls);
    return fmt::formatter<std::string_view>::format(text, ctx);
  }
};
/// @endcond
