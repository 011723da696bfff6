#pragma once

#include "rlock/config.hpp"
#include "rlock/connection_state.hpp"
#include "session/command.hpp"
#include "session/node/connection.hpp"
#include "session/node/multiplexer.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace rlock::detail {

/// Counters of every connection a session has had (client::stats()).
struct session_stats {
  std::uint64_t reconnects = 0;
  /// When the latest reconnect completed (the epoch: none; the first connection is not one):
  /// a server that restarted was seen back then (quorum_options::restart_delay).
  std::chrono::steady_clock::time_point reconnected_at{};
  std::uint64_t health_check_failures = 0;
  std::uint64_t retried_commands = 0;
  std::uint64_t writes = 0;
};

/// What the services (scripts, wait hub, watchdog, queries) talk to: they run a request or
/// (un)subscribe a channel, addressed by the key the request is about, and hear pushes and state
/// changes through one listener. The variants:
/// - node_session: one connection to one server (config's host and port);
/// - sentinel_session: one connection to the master the sentinels name, moved on
///   `+switch-master`;
/// - cluster_session: one connection per master it uses, each key routed by its hash slot,
///   redirects (`-MOVED`, `-ASK`, `-TRYAGAIN`, `-CLUSTERDOWN`) followed inside the session, and
///   sharded channels placed on their slot's owner.
/// TLS is the connection's business in all three. Everything is called on the executor.
class session {
 public:
  virtual ~session() = default;

  virtual void set_listener(connection::listener* l) = 0;
  /// Adds a step to the handshake of every connection (script loads); before connecting.
  virtual void add_handshake_step(handshake_step step) = 0;
  virtual void async_connect(connection::connect_handler h) = 0;
  /// Fails everything pending with `reason` and closes for good.
  virtual void close(std::error_code reason) = 0;

  /// Runs `c` where its route key lives; see multiplexer and request_options for what the
  /// handler gets. The command's kind decides whether it may be written again after its answer
  /// was lost (`opts.unknown`) and its answers count (`opts.answers`); `opts` brings the deadline
  /// and the caller's hooks. Returns an id for withdraw() (0: failed at once).
  virtual multiplexer::id_type exec(command c, request_options opts, reply_handler handler) = 0;
  virtual bool withdraw(std::string_view key, multiplexer::id_type id, std::error_code reason) = 0;
  /// Wants / no longer wants `channel` (reference counting is the caller's); `key` is the lock
  /// key the channel belongs to.
  virtual void subscribe(std::string_view key, std::string_view channel) = 0;
  virtual void unsubscribe(std::string_view key, std::string_view channel) = 0;
  /// Whether `channel` is subscribed and confirmed.
  virtual bool subscribed(std::string_view key, std::string_view channel) const = 0;

  virtual connection_state state() const noexcept = 0;
  bool connected() const noexcept { return state() == connection_state::connected; }
  /// Why a connection was last lost or failed to connect (for error messages).
  virtual std::string last_error() const = 0;
  virtual session_stats stats() const noexcept = 0;
  /// Channels tracked, and requests queued or written and not answered, over all connections.
  virtual std::size_t subscriptions() const noexcept = 0;
  virtual std::size_t outstanding() const noexcept = 0;
  const config& cfg() const noexcept { return cfg_; }
  /// Where the session is connected: "host:port" of its node, or a cluster's masters
  /// ("a:1,b:2,c:3"). A change tells the client that the data may be a replica's (a failover).
  virtual std::string node_address() const = 0;
  /// Why a node's connection does not track keys although config::track_holds asked for it
  /// (refused, or a server older than 7.0.5), naming the node; empty: every one tracks.
  virtual std::string tracking_refusal() const = 0;

  /// The nodes that serve keys ("host:port"): the node, or a cluster's masters. For tools that
  /// must ask every node (rlockctl list: SCAN is per node).
  virtual std::vector<std::string> masters() const { return {node_address()}; }
  /// Runs `payload` on the node `node` (one of masters()) as it is, with no routing or
  /// redirects: for commands that are about a node, not a key (SCAN).
  virtual multiplexer::id_type exec_on(std::string_view node, std::string payload,
                                       request_options opts, reply_handler handler) {
    return exec(command::encoded(command_kind::query, node, std::move(payload)), opts,
                std::move(handler));
  }

  /// Keys of one group may share a script call (renewals, latch deletes): one server needs no
  /// grouping (always 0); a cluster groups by hash slot, since a script over keys of several
  /// slots is refused (`CROSSSLOT`).
  virtual std::uint16_t group_of(std::string_view key) const noexcept {
    static_cast<void>(key);
    return 0;
  }
  /// The command the unlock scripts publish with: `publish`, or `spublish` where the session
  /// subscribes sharded channels.
  virtual std::string_view publish_command() const noexcept { return "publish"; }
  /// Whether a message on a lock's channel arrives on the connection that runs the lock's
  /// commands, in the order the server ran them (connection::listener::on_message's `since`
  /// then bounds when it was published). Not so for a cluster's classic pub/sub, whose messages
  /// cross the cluster bus to whichever node the client subscribed on.
  virtual bool ordered_pushes() const noexcept { return true; }

 protected:
  explicit session(config cfg) : cfg_(std::move(cfg)) {}
  session(const session&) = delete;
  session& operator=(const session&) = delete;

 private:
  config cfg_;
};

/// The variant `cfg` asks for: Cluster (cluster.nodes), Sentinel (sentinel.nodes), or one node.
std::unique_ptr<session> make_session(boost::asio::any_io_executor ex, const config& cfg);

}  // namespace rlock::detail
