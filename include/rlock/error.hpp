#pragma once

#include "rlock/export.hpp"

#include <string>
#include <system_error>

namespace rlock {

/// Errors reported by rlock, in the `rlock` error category. An error code enum
/// (`std::is_error_code_enum<errc>` is true), so the codes rlock reports compare with its values:
/// `e.code() == rlock::errc::not_owner`.
enum class errc {
  /// The caller does not hold the lock it tried to unlock (Redisson's
  /// IllegalMonitorStateException).
  not_owner = 1,
  /// The watchdog found that a held lock is no longer ours (expired, deleted or force-unlocked);
  /// or an acquisition's holds kept coming back later than their lease allows, so none could be
  /// believed (a lease shorter than the round trip).
  lock_lost,
  /// An operation did not complete within its bound (`config::command_timeout` for single round
  /// trips, the wait of try_lock, `config::connect_timeout` for a connection attempt). For a
  /// command already sent, its outcome on the server is unknown.
  timeout,
  /// An argument is out of range: empty lock name, a lease outside 1 ms to 2^31 - 1 ms (about
  /// 24.8 days), negative wait.
  invalid_argument,
  /// The server sent bytes that are not valid RESP3, or a reply of an unexpected shape.
  protocol_error,
  /// Redis answered with an error reply; its text travels beside the code.
  server_error,
  /// The connection to Redis was lost (and reconnection is off, or config::fail_fast is on), or
  /// the client is not connected.
  connection_lost,
  /// A blocking call was made from a handler of the same blocking client, where it would wait
  /// for itself.
  would_deadlock,
  /// The server refused the ACL user a channel (`-NOPERM`: SUBSCRIBE to a lock's channel, or a
  /// script's PUBLISH) or another ACL right not covered by command_not_permitted and
  /// key_not_permitted; Redis's text travels beside the code.
  permission_denied,
  /// The server rejected the credentials (`WRONGPASS`, `NOAUTH`).
  auth_failed,
  /// The server does not speak RESP3 (`HELLO 3` failed): rlock needs Redis 6 or later.
  unsupported_server,
  /// The host name could not be resolved.
  resolve_failed,
  /// No TCP connection could be made (refused, unreachable).
  connect_failed,
  /// The TLS handshake failed for a reason other than those below: e.g. the port does not
  /// speak TLS ("wrong version number": a plaintext port), no common protocol or cipher, or a
  /// TLS setting that cannot be used (an unreadable CA, certificate or key file).
  tls_handshake_failed,
  /// The server's certificate does not chain to a trusted CA (config::tls_settings::ca_file),
  /// or is expired or not yet valid.
  tls_certificate_untrusted,
  /// The server's certificate is valid but not for the name rlock asked for
  /// (config::tls_settings::server_name, else the host).
  tls_hostname_mismatch,
  /// The server refused this client's TLS credentials: a certificate it requires was not sent
  /// (`tls-auth-clients yes`), or it does not trust the one sent.
  tls_client_rejected,
  /// The server closed the connection before answering the handshake (`HELLO`): typically a
  /// plaintext client on a TLS port (use `rediss://` / tls.enabled).
  handshake_closed,
  /// The ACL user may not run a command rlock needs (`-NOPERM ... 'evalsha' command`, or
  /// `script|load` in the handshake): docs/guide/tls-acl.md lists them.
  command_not_permitted,
  /// The ACL user may not access the lock's key (or its channel name, latch or token counter,
  /// which the scripts take as keys): the name is outside the user's key patterns.
  key_not_permitted,
  /// config::sync_replicas: fewer replicas than asked acknowledged an acquisition within the
  /// timeout (`WAIT`). The acquisition was given back; the lock is as it was before the call.
  replicas_not_synced,
  /// Sentinel named a node for the master that says it is not one (`ROLE`), every time it was
  /// asked during connect(): a failover in progress, or sentinels that disagree.
  not_master,
  /// No sentinel in config::sentinel::nodes answered with an address for the master's name
  /// (all unreachable, or none knows the name).
  master_not_found,
  /// config::cluster: no seed node answered `CLUSTER SHARDS` with a slot map (unreachable, or
  /// not a cluster node: "cluster support disabled"); Redis's words travel beside the code.
  not_a_cluster,
  /// config::cluster: the node owning the key's slot answered `-CLUSTERDOWN`, or no node serves
  /// the slot, for as long as the operation's bound allowed retrying.
  cluster_down,
  /// config::cluster: a request was redirected (`-MOVED`/`-ASK`) more often than the router
  /// follows (5): the nodes disagree about who serves its slot.
  too_many_redirects,
  /// The owner asked for a hold it cannot take while it holds what it holds: a re-acquire of a
  /// non-reentrant lock by its holder (Redisson's `NON_REENTRANT_REACQUIRE`). Waiting would
  /// wait for itself, so the acquisition fails at once; Redis's text travels beside the code.
  reentry_refused,
  /// A write acquisition by an owner that holds the same read-write lock's read half (Redis's
  /// `WRITE_AFTER_READ`). It would wait for itself, so it fails at once: release the read
  /// holds first. (A writer taking the read half, a downgrade, is allowed.)
  upgrade_refused,
  /// A quorum lock's wait ended while too few of its nodes could answer (unreachable, failing,
  /// refused) for a majority to be possible; the text names each such node and why.
  quorum_unavailable,
};

/// The category of `rlock::errc`; its name is "rlock".
RLOCK_EXPORT const std::error_category& error_category() noexcept;

/// `e` as a `std::error_code` of error_category(); what makes an errc convert to an error code.
inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// Throws a `boost::system::system_error` carrying an rlock error and, where Redis sent one, its
/// error text: what every awaitable and blocking form throws.
[[noreturn]] RLOCK_EXPORT void throw_error(errc e, const std::string& what = {});

}  // namespace rlock

/// @cond
template <>
struct std::is_error_code_enum<rlock::errc> : std::true_type {};
/// @endcond
