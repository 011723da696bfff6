#pragma once

#include "session/backoff.hpp"
#include "session/cluster/channel_registry.hpp"
#include "session/cluster/key_slot.hpp"
#include "session/cluster/redirect.hpp"
#include "session/cluster/slot_map.hpp"
#include "session/node/connection.hpp"
#include "session/session.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace rlock::detail {

/// Redis Cluster: the session routes. Each request goes to the master that owns its key's hash
/// slot, over one kept-alive connection per master (opened on first use); the router follows
/// what a node answers instead of running a request (the redirect decision, redirect.hpp):
/// `-MOVED` updates the slot map and re-sends to the new owner, `-ASK` re-sends once with
/// `ASKING`, `-TRYAGAIN` and `-CLUSTERDOWN` retry with backoff, all within the request's bound
/// (its deadline, or config::command_timeout for a request without one), so the caller sees a
/// redirect only as the error it ends in.
///
/// What is re-sent: a request a node refused (MOVED, ASK, TRYAGAIN, CLUSTERDOWN) did not run;
/// one that was never written, or is idempotent, may go to another node after its connection
/// was lost. A written non-idempotent request whose connection died reaches its caller as
/// errc::connection_lost (outcome unknown), who reconciles it as on one server.
///
/// The slot map is read (`CLUSTER SHARDS`) from the seeds at connect, and again after a MOVED,
/// a lost connection to a master, and periodically; one refresh runs at a time, at most one per
/// 100 ms, with backoff while they fail. Sharded channels are placed on their slot's owner by a
/// channel registry and re-placed when the map changes or a node drops them.
class cluster_session final : public session {
 public:
  cluster_session(boost::asio::any_io_executor ex, const config& cfg);
  ~cluster_session() override;

  void set_listener(connection::listener* l) override { listener_ = l; }
  void add_handshake_step(handshake_step step) override { steps_.push_back(std::move(step)); }
  void async_connect(connection::connect_handler h) override;
  void close(std::error_code reason) override;

  multiplexer::id_type exec(command c, request_options opts, reply_handler handler) override;
  bool withdraw(std::string_view key, multiplexer::id_type id, std::error_code reason) override;
  void subscribe(std::string_view key, std::string_view channel) override;
  void unsubscribe(std::string_view key, std::string_view channel) override;
  bool subscribed(std::string_view key, std::string_view channel) const override;

  connection_state state() const noexcept override { return state_; }
  std::string last_error() const override { return last_error_; }
  session_stats stats() const noexcept override;
  std::size_t subscriptions() const noexcept override;
  std::size_t outstanding() const noexcept override;
  std::string node_address() const override { return map_.masters(); }
  std::string tracking_refusal() const override;
  std::vector<std::string> masters() const override;
  multiplexer::id_type exec_on(std::string_view node, std::string payload, request_options opts,
                               reply_handler handler) override;

  std::uint16_t group_of(std::string_view key) const noexcept override { return key_slot(key); }
  std::string_view publish_command() const noexcept override {
    return sharded_ ? "spublish" : "publish";
  }
  bool ordered_pushes() const noexcept override { return sharded_; }

 private:
  struct link;
  struct routed;
  using routed_ptr = std::unique_ptr<routed>;

  link& link_for(const std::string& host, std::uint16_t port);
  /// link_for an address "host:port" (the registry's and the map's); nullptr if it is not one.
  link* link_at(std::string_view address);
  /// Adds a connection about to be dropped to retired_.
  void retire_counters(const connection& c);
  void submit(routed_ptr op);
  void on_reply(routed_ptr op, std::error_code ec, resp3::value v);
  void deliver(routed_ptr op, std::error_code ec, resp3::value v);
  /// Sends `op` again after a backoff (its retries so far), or fails it with `ec` and
  /// `diagnostic` once its bound does not leave room for one more try.
  void retry_later(routed_ptr op, std::error_code ec, std::string diagnostic);
  void on_parked(multiplexer::id_type id);

  void request_refresh();
  void start_refresh();
  void on_shards(const std::string& from, std::error_code ec, const resp3::value& reply);
  /// A CLUSTER SHARDS map that leaves slots unserved: Redis 7.4 answers a failed-over shard with
  /// no slots (it reads them from its first node, the failed master). CLUSTER SLOTS, asked of the
  /// same node, says who serves them; the map then goes on as on_shards' would.
  void complete_from_slots(const std::string& from, slot_map map);
  void on_map(const std::string& from, std::optional<slot_map> map, std::string why,
              std::error_code ec);
  void apply_map(slot_map map);
  void apply_channel_moves(std::vector<channel_registry::move> moves);
  void prune_links();
  void arm_periodic_refresh();
  void update_state(std::error_code reason, const std::string& diagnostic);
  void finish_connect(std::error_code ec, const std::string& diagnostic);

  // From a node's connection (link).
  void on_link_state(link& l, connection_state s, std::error_code reason,
                     const std::string& diagnostic);
  void on_link_refused(link& l, std::string_view channel, std::error_code ec,
                       std::string_view text);
  void on_link_dropped(link& l, std::string_view channel);

  boost::asio::any_io_executor executor_;
  connection::listener* listener_ = nullptr;
  std::vector<handshake_step> steps_;
  std::vector<cluster_node> seeds_;
  config node_cfg_;  // every node's settings; host and port set per node
  std::unordered_map<std::string, std::unique_ptr<link>> links_;
  slot_map map_;
  bool have_map_ = false;
  channel_registry channels_;
  bool sharded_ = false;

  std::unordered_map<multiplexer::id_type, routed*> in_flight_;  // written to a connection
  std::unordered_map<multiplexer::id_type, routed_ptr> parked_;  // waiting for a retry
  multiplexer::id_type next_id_ = 1;

  connection_state state_ = connection_state::disconnected;
  bool closed_ = false;
  std::error_code closed_reason_;
  std::vector<connection::connect_handler> connect_waiters_;
  std::string last_error_;
  std::vector<std::string> seed_failures_;  // why each seed failed during connect
  bool seed_not_cluster_ = false;
  std::error_code seed_error_;

  bool refreshing_ = false;
  bool refresh_again_ = false;
  bool refresh_failing_ = false;
  bool refresh_idle_ = false;  // the last refresh changed nothing
  std::size_t next_candidate_ = 0;
  std::chrono::steady_clock::time_point last_refresh_{};
  boost::asio::steady_timer refresh_timer_;  // a refresh postponed by the rate limit
  bool refresh_timer_armed_ = false;
  boost::asio::steady_timer periodic_timer_;
  backoff refresh_backoff_;
  session_stats retired_;  // the counters of connections closed since (stats() stays monotonic)
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for completions that outlive us
};

}  // namespace rlock::detail
