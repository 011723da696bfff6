#pragma once

#include "rlock/export.hpp"
#include "rlock/log.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace rlock {

/// Where and how to reach Redis, and the lock defaults. Plain data: copy and edit freely.
struct RLOCK_EXPORT config {
  /// Redis host name or address, and port. Only a standalone server in this version.
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;

  /// ACL user and password sent with `HELLO 3 AUTH`; with an empty username and a password,
  /// the user is "default" (a `requirepass` server).
  std::string username;
  std::string password;

  /// Logical database selected after the handshake.
  int database = 0;

  /// TLS (Asio's SSL stream over OpenSSL). Off by default; a `rediss://` URL turns it on.
  struct tls_settings {
    bool enabled = false;
    /// The CAs that sign the server's certificate, a PEM file and/or a directory of hashed PEM
    /// files (`openssl rehash`); both empty: the system's default trust store.
    std::string ca_file;
    std::string ca_dir;
    /// A client certificate and its private key (PEM), for servers that require one
    /// (`tls-auth-clients yes`: mutual TLS). Both or neither.
    std::string cert_file;
    std::string key_file;
    /// The name sent for SNI and checked against the server's certificate (its DNS or IP
    /// subject alternative names); empty: `host`.
    std::string server_name;
    /// Whether the server's certificate is verified (chain to a trusted CA, name). Turning it
    /// off accepts any server, a man in the middle included: only for tests; it is logged at
    /// every connection.
    bool verify_peer = true;
  };
  tls_settings tls;

  /// Sent with `HELLO 3 ... SETNAME` on every connection, so operators can tell this client's
  /// connections apart in `CLIENT LIST`. Empty: no name. Must not contain spaces or newlines.
  std::string client_name;

  /// Lease of locks taken without an explicit lease; the watchdog renews them every third of it.
  /// Redisson's default is 30 s (lockWatchdogTimeout).
  std::chrono::milliseconds watchdog_timeout{30'000};

  /// Prepended to every lock name to form its Redis key (and thus its channel). Off by default,
  /// as in Redisson: a Java service and a C++ service share a lock only if both use the same key.
  std::string key_prefix;

  /// Bound on every Redis round trip; a command without a reply by then fails with errc::timeout.
  std::chrono::milliseconds command_timeout{5'000};

  /// Bound on resolving, connecting and the handshake, on every connection attempt.
  std::chrono::milliseconds connect_timeout{5'000};

  /// What to do when the connection is lost. By default the client reconnects with exponential
  /// backoff and full jitter (delay n is uniform in [0, min(backoff_cap, backoff_initial * 2^n)])
  /// until it is closed, redoes the handshake, reloads the scripts and resubscribes.
  struct reconnect_policy {
    /// false: never reconnect; after a loss every operation fails with errc::connection_lost.
    bool enabled = true;
    std::chrono::milliseconds backoff_initial{50};
    std::chrono::milliseconds backoff_cap{2'000};
  };
  reconnect_policy reconnect;

  /// When nothing has been read for this long, a PING is sent; if nothing has been read for
  /// another interval after it, the connection is taken for dead and replaced. Catches half-open
  /// TCP connections long before a lease runs out. Zero turns the health check off.
  std::chrono::milliseconds health_check_interval{2'000};

  /// While the client is disconnected, fail operations at once with errc::connection_lost
  /// instead of letting them wait (within their own bounds) for the reconnection.
  bool fail_fast = false;

  /// Where the client logs reconnects, lost locks, failed renewals, slow acquisitions and
  /// protocol errors (rlock/log.hpp); unset: silent. rlock::stderr_logger() is ready to use.
  logger log;

  /// An acquisition that waited this long or longer is logged (warning). Zero: never.
  std::chrono::milliseconds slow_acquire_threshold{1'000};

  /// Parses `redis://[[user]:password@]host[:port][/db]`, or `rediss://...` for TLS (with the
  /// system's trust store; set tls.ca_file etc. afterwards for a private CA); throws
  /// std::system_error carrying errc::invalid_argument on anything else.
  static config from_url(const std::string& url);
};

}  // namespace rlock
