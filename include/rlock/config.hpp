#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace rlock {

/// Where and how to reach Redis, and the lock defaults. Plain data: copy and edit freely.
struct config {
  /// Redis host name or address, and port. Only a standalone server in this version.
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;

  /// ACL user and password sent with `HELLO 3 AUTH`; with an empty username and a password,
  /// the user is "default" (a `requirepass` server).
  std::string username;
  std::string password;

  /// Logical database selected after the handshake.
  int database = 0;

  /// Lease of locks taken without an explicit lease; the watchdog renews them every third of it.
  /// Redisson's default is 30 s (lockWatchdogTimeout).
  std::chrono::milliseconds watchdog_timeout{30'000};

  /// Prepended to every lock name to form its Redis key (and thus its channel). Off by default,
  /// as in Redisson: a Java service and a C++ service share a lock only if both use the same key.
  std::string key_prefix;

  /// Bound on every Redis round trip; a command without a reply by then fails with errc::timeout.
  std::chrono::milliseconds command_timeout{5'000};

  /// Bound on resolving, connecting and the handshake.
  std::chrono::milliseconds connect_timeout{5'000};

  /// Parses `redis://[[user]:password@]host[:port][/db]`; throws std::system_error carrying
  /// errc::invalid_argument on anything else.
  static config from_url(const std::string& url);
};

}  // namespace rlock
