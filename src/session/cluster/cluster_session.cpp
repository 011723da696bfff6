#include "session/cluster/cluster_session.hpp"

#include "resp3/request.hpp"
#include "rlock/error.hpp"

#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <random>
#include <utility>

namespace rlock::detail {

namespace asio = boost::asio;
using std::chrono::milliseconds;

namespace {

/// The reason a queued request is taken back from a connection to be routed again (its slot's
/// owner changed): never seen outside the router.
std::error_code reroute_reason() { return std::make_error_code(std::errc::operation_in_progress); }

constexpr milliseconds min_refresh_gap{100};
constexpr std::string_view asking_command = "*1\r\n$6\r\nASKING\r\n";

/// The seeds of config::cluster::nodes, and the settings every node connection uses.
std::vector<cluster_node> parse_seeds(const config& cfg, config& node_cfg) {
  std::vector<cluster_node> seeds;
  int tls = -1;
  for (const auto& url : cfg.cluster.nodes) {
    config c = config::from_url(url);  // throws invalid_argument, naming the URL
    const int this_tls = c.tls.enabled ? 1 : 0;
    if (tls != -1 && tls != this_tls) {
      throw_error(errc::invalid_argument,
                  "cluster.nodes mixes redis:// and rediss:// seeds: one cluster speaks one");
    }
    tls = this_tls;
    if (node_cfg.username.empty() && node_cfg.password.empty()) {
      node_cfg.username = c.username;
      node_cfg.password = c.password;
    }
    seeds.push_back(cluster_node{c.host, c.port, {}});
  }
  if (tls == 1) node_cfg.tls.enabled = true;
  // The router bounds every request itself; a node connection queues while it reconnects.
  node_cfg.fail_fast = false;
  node_cfg.cluster.nodes.clear();
  node_cfg.sentinel.nodes.clear();
  return seeds;
}

int major_version(std::string_view v) {
  int major = 0;
  std::from_chars(v.data(), v.data() + v.size(), major);
  return major;
}

}  // namespace

/// A request the router owns until its caller is answered.
struct cluster_session::routed {
  // Constructed in place: Boost 1.81's any_completion_handler move assignment recurses into its
  // converting constructor.
  explicit routed(reply_handler h) noexcept : handler(std::move(h)) {}

  multiplexer::id_type id = 0;
  std::string payload;
  request_options opts;  // the caller's
  reply_handler handler;
  std::uint16_t slot = 0;
  clock_type::time_point bound;  // detours (redirects, retries) end here
  int redirects = 0;
  int retries = 0;
  // ASK: the next send goes there, preceded by ASKING; cleared once sent.
  bool ask = false;
  std::string ask_host;
  std::uint16_t ask_port = 0;
  bool sent_ask = false;  // the send in flight carries ASKING (one more answer)
  // In flight: the connection and its id for the request.
  link* at = nullptr;
  multiplexer::id_type conn_id = 0;
  clock_type::time_point own_written{};  // written_at when the caller gave none
  clock_type::time_point written_before{};
  // Parked: the retry timer, and why a withdraw ended the wait.
  std::unique_ptr<asio::steady_timer> timer;
  std::error_code withdrawn;
  std::error_code last_ec;
  std::string last_diagnostic;

  clock_type::time_point* written_at() noexcept {
    return opts.written_at != nullptr ? opts.written_at : &own_written;
  }
};

/// One master's (or a seed's) connection, and the listener that tells the router about it.
struct cluster_session::link final : connection::listener {
  cluster_session* owner = nullptr;
  std::string address;
  std::shared_ptr<connection> conn;

  void on_message(std::string_view channel, std::string_view payload,
                  std::chrono::steady_clock::time_point since) override {
    if (owner->listener_ != nullptr) owner->listener_->on_message(channel, payload, since);
  }
  void on_subscribed(std::string_view channel) override {
    // A confirmation from a node the channel has moved away from wakes nobody.
    if (owner->channels_.placement(channel) != address) return;
    if (owner->listener_ != nullptr) owner->listener_->on_subscribed(channel);
  }
  void on_refused(std::string_view channel, std::error_code ec, std::string_view text) override {
    owner->on_link_refused(*this, channel, ec, text);
  }
  void on_state(connection_state s, std::error_code reason,
                const std::string& diagnostic) override {
    owner->on_link_state(*this, s, reason, diagnostic);
  }
  void on_dropped(std::string_view channel) override { owner->on_link_dropped(*this, channel); }
  void on_invalidate(std::span<const std::string_view> keys, bool all) override {
    if (owner->listener_ != nullptr) owner->listener_->on_invalidate(keys, all);
  }
};

cluster_session::cluster_session(asio::any_io_executor ex, const config& cfg)
    : session(cfg),
      executor_(std::move(ex)),
      node_cfg_(cfg),
      refresh_timer_(executor_),
      periodic_timer_(executor_),
      refresh_backoff_(cfg.reconnect.backoff_initial, cfg.reconnect.backoff_cap, random_seed()) {
  seeds_ = parse_seeds(cfg, node_cfg_);
  sharded_ = cfg.pubsub == config::pubsub_mode::sharded;
}

cluster_session::~cluster_session() {
  close(std::make_error_code(std::errc::operation_canceled));
  for (auto& [address, l] : links_) l->conn->set_listener(nullptr);
}

// --- links ------------------------------------------------------------------------------------

cluster_session::link& cluster_session::link_for(const std::string& host, std::uint16_t port) {
  const std::string address = fmt::format("{}:{}", host, port);
  auto it = links_.find(address);
  std::vector<std::string> resubscribe;
  if (it != links_.end()) {
    const auto s = it->second->conn->state();
    if (s != connection_state::disconnected && s != connection_state::closed) return *it->second;
    // Its first connection failed (or it was lost with reconnection off): a new attempt gets a
    // new connection, and the channels placed on the node go with it.
    resubscribe = channels_.channels_on(address);
    retire_counters(*it->second->conn);
    it->second->conn->set_listener(nullptr);
    links_.erase(it);
  }
  config c = node_cfg_;
  c.host = host;
  c.port = port;
  auto l = std::make_unique<link>();
  l->owner = this;
  l->address = address;
  l->conn = std::make_shared<connection>(executor_, std::move(c));
  for (const auto& step : steps_) l->conn->add_handshake_step(step);
  l->conn->set_sharded(sharded_);
  l->conn->resubscribe_dropped(false);  // its slot's owner may be another node now
  l->conn->set_listener(l.get());
  // Requests queue until the handshake is done; a failed first attempt fails them (the router
  // then retries elsewhere), a later loss reconnects by itself.
  l->conn->async_connect([](std::error_code, std::string) {});
  for (const auto& channel : resubscribe) l->conn->subscribe(channel);
  auto& ref = *l;
  links_.emplace(address, std::move(l));
  return ref;
}

cluster_session::link* cluster_session::link_at(std::string_view address) {
  const auto colon = address.rfind(':');
  std::uint16_t port = 0;
  if (colon == std::string_view::npos) return nullptr;
  const auto [end, ec] = std::from_chars(address.data() + colon + 1, address.end(), port);
  if (ec != std::errc{} || end != address.end() || port == 0) return nullptr;
  return &link_for(std::string(address.substr(0, colon)), port);
}

void cluster_session::prune_links() {
  // Connections to nodes that serve nothing (a seed replica, a master that lost its slots)
  // close once nothing of ours is on them.
  for (auto it = links_.begin(); it != links_.end();) {
    link& l = *it->second;
    if (!map_.serves(l.address) && l.conn->outstanding() == 0 &&
        channels_.placed_on(l.address) == 0) {
      retire_counters(*l.conn);
      l.conn->set_listener(nullptr);
      l.conn->close(make_error_code(errc::connection_lost));
      it = links_.erase(it);
    } else {
      ++it;
    }
  }
}

// --- connecting -------------------------------------------------------------------------------

void cluster_session::async_connect(connection::connect_handler h) {
  if (closed_) {
    asio::post(executor_, [h = std::move(h)]() mutable {
      std::move(h)(make_error_code(errc::connection_lost), "the client is closed");
    });
    return;
  }
  if (have_map_) {
    asio::post(executor_,
               [h = std::move(h)]() mutable { std::move(h)(std::error_code{}, std::string{}); });
    return;
  }
  connect_waiters_.push_back(std::move(h));
  if (state_ == connection_state::connecting) return;
  state_ = connection_state::connecting;
  seed_failures_.clear();
  seed_not_cluster_ = false;
  next_candidate_ = 0;
  start_refresh();
}

void cluster_session::finish_connect(std::error_code ec, const std::string& diagnostic) {
  auto waiters = std::exchange(connect_waiters_, {});
  for (auto& h : waiters) {
    asio::post(executor_,
               [h = std::move(h), ec, diagnostic]() mutable { std::move(h)(ec, diagnostic); });
  }
}

void cluster_session::close(std::error_code reason) {
  if (closed_) return;
  closed_ = true;
  closed_reason_ = reason;
  const bool tell = state_ != connection_state::disconnected;
  state_ = connection_state::closed;
  refresh_timer_.cancel();
  periodic_timer_.cancel();
  // Parked requests first (their timers would fire later), then every connection, whose
  // requests come back through on_reply and are delivered since the session is closed.
  auto parked = std::exchange(parked_, {});
  for (auto& [id, op] : parked) deliver(std::move(op), reason, {});
  for (auto& [address, l] : links_) l->conn->close(reason);
  finish_connect(reason, "the client was closed");
  if (tell && listener_ != nullptr) listener_->on_state(state_, reason, {});
}

// --- requests ---------------------------------------------------------------------------------

multiplexer::id_type cluster_session::exec(command c, request_options opts, reply_handler handler) {
  auto op = std::make_unique<routed>(std::move(handler));
  op->id = next_id_++;
  op->slot = key_slot(c.route());  // before the payload (holding the route) is taken
  opts.unknown = unknown_policy(c.kind());
  opts.answers = c.answers();
  op->payload = c.take_payload();
  op->opts = opts;
  op->bound = opts.deadline != clock_type::time_point::max()
                  ? opts.deadline
                  : clock_type::now() + cfg().command_timeout;
  const auto id = op->id;
  if (closed_ || state_ == connection_state::disconnected) {
    // Posted: never complete inside the initiating call.
    const auto ec = closed_ ? closed_reason_ : make_error_code(errc::connection_lost);
    asio::post(executor_,
               [h = std::move(op->handler), ec]() mutable { std::move(h)(ec, resp3::value{}); });
    return 0;
  }
  if (!have_map_) {
    // connect() is under way: wait for the map like a request queued on a connecting node.
    retry_later(std::move(op), make_error_code(errc::connection_lost),
                "the cluster's slot map is not known yet");
    return id;
  }
  submit(std::move(op));
  return id;
}

void cluster_session::submit(routed_ptr op) {
  if (closed_) return deliver(std::move(op), closed_reason_, {});
  std::string host;
  std::uint16_t port = 0;
  if (op->ask) {
    host = op->ask_host;
    port = op->ask_port;
  } else if (const cluster_node* owner = have_map_ ? map_.owner(op->slot) : nullptr) {
    host = owner->host;
    port = owner->port;
  } else {
    request_refresh();
    const auto text = fmt::format("CLUSTERDOWN no node serves hash slot {}", op->slot);
    return retry_later(std::move(op), make_error_code(errc::cluster_down), text);
  }
  link& l = link_for(host, port);
  if (cfg().fail_fast && l.conn->state() == connection_state::reconnecting) {
    // As on one server: nothing waits for a reconnection (a first connection to a node it has
    // not used yet is not one). Posted (this may be the initiation).
    auto why = fmt::format("not connected to {} (fail_fast){}{}", l.address,
                           l.conn->last_error().empty() ? "" : ": ", l.conn->last_error());
    asio::post(executor_, [this, alive = std::weak_ptr<bool>(alive_), op = std::move(op),
                           why = std::move(why)]() mutable {
      if (alive.expired()) return;
      deliver(std::move(op), make_error_code(errc::connection_lost),
              resp3::error_reply(std::move(why)));
    });
    return;
  }
  request_options o = op->opts;
  std::string payload;
  op->sent_ask = op->ask;
  if (op->ask) {
    payload.reserve(asking_command.size() + op->payload.size());
    payload.append(asking_command);
    payload.append(op->payload);
    o.answers = static_cast<std::uint8_t>(o.answers + 1);
    op->ask = false;
  } else {
    payload = op->payload;
  }
  o.written_at = op->written_at();
  op->written_before = *o.written_at;
  op->at = &l;
  routed* p = op.get();
  in_flight_.emplace(p->id, p);
  p->conn_id = l.conn->exec(std::move(payload), o,
                            [this, alive = std::weak_ptr<bool>(alive_), op = std::move(op)](
                                std::error_code ec, resp3::value v) mutable {
                              if (alive.expired()) return;
                              on_reply(std::move(op), ec, std::move(v));
                            });
}

void cluster_session::deliver(routed_ptr op, std::error_code ec, resp3::value v) {
  in_flight_.erase(op->id);
  reply_handler h(std::move(op->handler));
  op.reset();
  std::move(h)(ec, std::move(v));
}

void cluster_session::on_reply(routed_ptr op, std::error_code ec, resp3::value v) {
  in_flight_.erase(op->id);
  link* at = std::exchange(op->at, nullptr);
  if (ec) {
    if (ec == reroute_reason() && !closed_) return submit(std::move(op));
    if (closed_ || ec == errc::timeout || ec == std::errc::operation_canceled) {
      return deliver(std::move(op), ec, std::move(v));
    }
    const bool written = *op->written_at() != op->written_before;
    if (written && op->opts.unknown == if_unknown::fail) {
      // It may have run: only its caller can reconcile that.
      return deliver(std::move(op), ec, std::move(v));
    }
    // It did not reach a node, or may run twice: the node is unreachable and the map may be
    // stale; send it again (elsewhere, once the map says so) within its bound.
    request_refresh();
    std::string why = at != nullptr ? at->conn->last_error() : std::string();
    if (at != nullptr && why.empty()) why = fmt::format("{}: {}", at->address, ec.message());
    return retry_later(std::move(op), ec, std::move(why));
  }
  if (op->sent_ask) {
    // ASKING's +OK first, then the request's own answers.
    if (v.type != resp3::type::array || v.elements.size() < 2) {
      return deliver(std::move(op), make_error_code(errc::protocol_error), {});
    }
    if (v.elements.front().is_error()) {
      return deliver(std::move(op), {}, std::move(v.elements.front()));
    }
    v.elements.erase(v.elements.begin());
    if (op->opts.answers <= 1) {
      resp3::value only = std::move(v.elements.front());
      v = std::move(only);
    }
  }
  // With several answers (a script and its WAIT) the first is the one a node refuses.
  const resp3::value& head =
      op->opts.answers > 1 && v.type == resp3::type::array && !v.elements.empty() ? v.elements[0]
                                                                                  : v;
  if (!head.is_error()) return deliver(std::move(op), {}, std::move(v));
  const redirect r = parse_redirect(head.str);
  if (r.what == redirect::kind::none) return deliver(std::move(op), {}, std::move(v));
  const auto d =
      decide_redirect(r, head.str, op->redirects, op->retries, clock_type::now(), op->bound);
  // An empty host ("MOVED 3999 :6381") names the node that answered.
  const std::string& to_host = r.host.empty() && at != nullptr ? at->conn->host() : r.host;
  switch (d.what) {
    case redirect_decision::action::deliver:
      return deliver(std::move(op), {}, std::move(v));
    case redirect_decision::action::resend:
      ++op->redirects;
      refresh_idle_ = false;  // the map is stale for sure: the next refresh may go at once
      if (map_.move(r.slot, to_host, r.port)) {
        apply_channel_moves(channels_.reconcile(map_));
      }
      request_refresh();
      return submit(std::move(op));
    case redirect_decision::action::ask:
      ++op->redirects;
      op->ask = true;
      op->ask_host = to_host;
      op->ask_port = r.port;
      return submit(std::move(op));
    case redirect_decision::action::retry:
      if (r.what == redirect::kind::cluster_down) request_refresh();
      return retry_later(std::move(op),
                         make_error_code(r.what == redirect::kind::cluster_down ? errc::cluster_down
                                                                                : errc::timeout),
                         head.str);
    case redirect_decision::action::fail:
      return deliver(std::move(op), make_error_code(d.error), resp3::error_reply(d.diagnostic));
  }
}

void cluster_session::retry_later(routed_ptr op, std::error_code ec, std::string diagnostic) {
  // The same backoff as TRYAGAIN's, and the same rule: no try that would start past the bound.
  const auto delay = retry_delay(op->retries);
  if (clock_type::now() + delay >= op->bound) {
    auto text = diagnostic.empty() ? ec.message() : std::move(diagnostic);
    return deliver(std::move(op), ec, resp3::error_reply(std::move(text)));
  }
  ++op->retries;
  op->last_ec = ec;
  op->last_diagnostic = std::move(diagnostic);
  if (!op->timer) op->timer = std::make_unique<asio::steady_timer>(executor_);
  op->timer->expires_after(delay);
  op->timer->async_wait(
      [this, alive = std::weak_ptr<bool>(alive_), id = op->id](boost::system::error_code) {
        if (!alive.expired()) on_parked(id);
      });
  parked_.emplace(op->id, std::move(op));
}

void cluster_session::on_parked(multiplexer::id_type id) {
  auto it = parked_.find(id);
  if (it == parked_.end()) return;
  routed_ptr op = std::move(it->second);
  parked_.erase(it);
  if (op->withdrawn) {
    const auto reason = op->withdrawn;  // before the move: argument order is unspecified
    return deliver(std::move(op), reason, {});
  }
  if (!have_map_ && !closed_) {
    if (state_ == connection_state::connecting) {
      // Copied first: the order in which a call's arguments are evaluated is unspecified, and
      // the operation is moved into the first one.
      auto ec = op->last_ec;
      auto diagnostic = std::move(op->last_diagnostic);
      return retry_later(std::move(op), ec, std::move(diagnostic));
    }
    return deliver(std::move(op), make_error_code(errc::connection_lost),
                   resp3::error_reply(last_error_.empty() ? "not connected" : last_error_));
  }
  submit(std::move(op));
}

bool cluster_session::withdraw(std::string_view, multiplexer::id_type id, std::error_code reason) {
  if (auto it = parked_.find(id); it != parked_.end()) {
    it->second->withdrawn = reason;
    it->second->timer->cancel();
    return true;
  }
  auto it = in_flight_.find(id);
  if (it == in_flight_.end() || it->second->at == nullptr) return false;
  return it->second->at->conn->withdraw(it->second->conn_id, reason);
}

// --- the slot map -----------------------------------------------------------------------------

void cluster_session::request_refresh() {
  if (closed_ || state_ == connection_state::disconnected) return;
  if (refreshing_) {
    refresh_again_ = true;
    return;
  }
  if (refresh_timer_armed_) return;
  const auto now = clock_type::now();
  // A refresh that failed, or changed nothing, makes the next one wait longer (a dead node's
  // connection asks for one at every reconnect attempt): never a storm, at most one per
  // max(100 ms, backoff) per client.
  const auto gap = refresh_failing_ || refresh_idle_ ? refresh_backoff_.next() : min_refresh_gap;
  if (now < last_refresh_ + gap) {
    refresh_timer_armed_ = true;
    refresh_timer_.expires_at(last_refresh_ + gap);
    refresh_timer_.async_wait(
        [this, alive = std::weak_ptr<bool>(alive_)](boost::system::error_code ec) {
          if (alive.expired()) return;
          refresh_timer_armed_ = false;
          if (!ec && !refreshing_ && !closed_) start_refresh();
        });
    return;
  }
  start_refresh();
}

void cluster_session::start_refresh() {
  // Whom to ask: while connecting, the seeds in order; later, the masters (connected first),
  // then the seeds, in turn.
  std::vector<cluster_node> candidates;
  if (have_map_) {
    for (const auto& n : map_.nodes()) {
      auto it = links_.find(n.address());
      if (it != links_.end() && it->second->conn->connected()) candidates.push_back(n);
    }
    for (const auto& n : map_.nodes()) candidates.push_back(n);
  }
  for (const auto& s : seeds_) candidates.push_back(s);
  if (!have_map_ && next_candidate_ >= seeds_.size()) {
    // Every seed failed during connect().
    refreshing_ = false;
    state_ = connection_state::disconnected;
    std::string why;
    for (const auto& f : seed_failures_) why += (why.empty() ? "" : "; ") + f;
    last_error_ = why;
    const auto ec = seed_not_cluster_ ? make_error_code(errc::not_a_cluster) : seed_error_;
    auto parked = std::exchange(parked_, {});
    for (auto& [id, op] : parked) {
      deliver(std::move(op), make_error_code(errc::connection_lost), resp3::error_reply(why));
    }
    for (auto& [address, l] : links_) {
      l->conn->set_listener(nullptr);
      l->conn->close(make_error_code(errc::connection_lost));
    }
    links_.clear();
    return finish_connect(ec, why);
  }
  const cluster_node& pick =
      have_map_ ? candidates[next_candidate_ % candidates.size()] : candidates[next_candidate_];
  ++next_candidate_;
  refreshing_ = true;
  last_refresh_ = clock_type::now();
  link& l = link_for(pick.host, pick.port);
  std::string command;
  resp3::append_command(command, {"CLUSTER", "SHARDS"});
  request_options opts;
  opts.unknown = if_unknown::retry;
  opts.deadline = clock_type::now() + cfg().command_timeout;
  l.conn->exec(std::move(command), opts,
               [this, alive = std::weak_ptr<bool>(alive_), from = l.address](std::error_code ec,
                                                                             resp3::value reply) {
                 if (!alive.expired()) on_shards(from, ec, reply);
               });
}

void cluster_session::on_shards(const std::string& from, std::error_code ec,
                                const resp3::value& reply) {
  refreshing_ = false;
  if (closed_) return;
  std::string why;
  std::optional<slot_map> map;
  if (ec) {
    auto it = links_.find(from);
    why = it != links_.end() && !it->second->conn->last_error().empty()
              ? it->second->conn->last_error()
              : fmt::format("{}: {}", from, ec.message());
  } else {
    map = slot_map::from_shards(reply, node_cfg_.tls.enabled, why);
    if (map && map->covered() < slot_count && links_.count(from) != 0) {
      return complete_from_slots(from, std::move(*map));
    }
  }
  on_map(from, std::move(map), std::move(why), ec);
}

void cluster_session::complete_from_slots(const std::string& from, slot_map map) {
  refreshing_ = true;
  std::string command;
  resp3::append_command(command, {"CLUSTER", "SLOTS"});
  request_options opts;
  opts.unknown = if_unknown::retry;
  opts.deadline = clock_type::now() + cfg().command_timeout;
  links_.at(from)->conn->exec(
      std::move(command), opts,
      [this, alive = std::weak_ptr<bool>(alive_), from, partial = std::move(map)](
          std::error_code ec, resp3::value reply) mutable {
        if (alive.expired()) return;
        refreshing_ = false;
        if (closed_) return;
        // Whatever CLUSTER SLOTS says (or fails to say), the slots SHARDS named stand.
        std::string ignored;
        if (!ec) {
          if (auto by_slots = slot_map::from_slots(reply, ignored)) {
            partial.fill_unserved(*by_slots);
          }
        }
        on_map(from, std::move(partial), {}, {});
      });
}

void cluster_session::on_map(const std::string& from, std::optional<slot_map> map, std::string why,
                             std::error_code ec) {
  if (map && map->covered() == 0) {
    map.reset();
    why = "CLUSTER SHARDS: no slot is assigned to any node";
  }
  if (!map && !ec) why = fmt::format("{}: {}", from, why);
  if (!map) {
    if (!have_map_) {
      // connect(): the next seed, at once.
      seed_failures_.push_back(why);
      if (!ec) seed_not_cluster_ = true;
      if (ec) seed_error_ = ec;
      return start_refresh();
    }
    refresh_failing_ = true;
    last_error_ = why;
    // Retried with backoff (request_refresh), whoever asked for it.
    refresh_again_ = false;
    return request_refresh();
  }
  refresh_failing_ = false;
  const bool first = !have_map_;
  refresh_idle_ = !first && map_.same_owners(*map);
  if (!refresh_idle_) refresh_backoff_.reset();
  if (first && node_cfg_.pubsub == config::pubsub_mode::automatic) {
    auto it = links_.find(from);
    sharded_ = it != links_.end() && major_version(it->second->conn->server_version()) >= 7;
    for (auto& [address, l] : links_) l->conn->set_sharded(sharded_);
  }
  apply_map(std::move(*map));
  if (first) {
    state_ = connection_state::connected;
    arm_periodic_refresh();
    finish_connect({}, {});
    if (listener_ != nullptr) listener_->on_state(state_, {}, {});
  }
  if (std::exchange(refresh_again_, false)) request_refresh();
}

std::string cluster_session::tracking_refusal() const {
  std::string out;
  for (const auto& [address, l] : links_) {
    if (l->conn->tracking_refusal().empty()) continue;
    out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", address, l->conn->tracking_refusal());
  }
  return out;
}

void cluster_session::apply_map(slot_map map) {
  const std::string before = have_map_ ? map_.masters() : std::string();
  map_ = std::move(map);
  have_map_ = true;
  apply_channel_moves(channels_.reconcile(map_));
  // Requests still queued for a node that no longer owns their slot go to the new owner.
  std::vector<std::pair<link*, multiplexer::id_type>> moved;
  for (const auto& [id, op] : in_flight_) {
    if (op->at == nullptr || op->sent_ask) continue;
    const cluster_node* owner = map_.owner(op->slot);
    if (owner == nullptr || owner->address() != op->at->address) {
      moved.emplace_back(op->at, op->conn_id);
    }
  }
  for (auto [l, conn_id] : moved) l->conn->withdraw(conn_id, reroute_reason());
  asio::post(executor_, [this, alive = std::weak_ptr<bool>(alive_)] {
    if (!alive.expired() && !closed_) prune_links();
  });
  update_state({}, {});  // nothing before the first map: connect() tells that one
  if (!before.empty() && before != map_.masters() && state_ == connection_state::connected &&
      listener_ != nullptr) {
    // The masters changed (a failover): the client treats it like moving to a new node.
    listener_->on_state(state_, {},
                        fmt::format("the cluster's masters are now {}", map_.masters()));
    // Keys that moved are tracked by nobody on their new master: every hold is checked (and
    // read there) at once.
    listener_->on_invalidate({}, true);
  }
}

void cluster_session::apply_channel_moves(std::vector<channel_registry::move> moves) {
  for (auto& m : moves) {
    if (!m.from.empty()) {
      if (auto it = links_.find(m.from); it != links_.end())
        it->second->conn->unsubscribe(m.channel);
    }
    if (link* to = m.to.empty() ? nullptr : link_at(m.to)) to->conn->subscribe(m.channel);
  }
}

void cluster_session::arm_periodic_refresh() {
  const auto interval = cfg().cluster.refresh_interval;
  if (interval.count() <= 0 || closed_) return;
  // ±10 % jitter: clients started together do not refresh together.
  static thread_local std::mt19937_64 rng(random_seed());
  const auto spread = std::max<std::int64_t>(1, interval.count() / 10);
  std::uniform_int_distribution<std::int64_t> jitter(-spread, spread);
  periodic_timer_.expires_after(interval + milliseconds(jitter(rng)));
  periodic_timer_.async_wait(
      [this, alive = std::weak_ptr<bool>(alive_)](boost::system::error_code ec) {
        if (ec || alive.expired() || closed_) return;
        request_refresh();
        arm_periodic_refresh();
      });
}

// --- state and channels -----------------------------------------------------------------------

void cluster_session::update_state(std::error_code reason, const std::string& diagnostic) {
  if (closed_ || !have_map_ || state_ == connection_state::connecting) return;
  bool down = false;
  for (const auto& [address, l] : links_) {
    const auto s = l->conn->state();
    if (map_.serves(address) &&
        (s == connection_state::reconnecting || s == connection_state::disconnected)) {
      down = true;
    }
  }
  const auto next = down ? connection_state::reconnecting : connection_state::connected;
  if (next == state_) return;
  state_ = next;
  if (listener_ != nullptr) listener_->on_state(state_, reason, diagnostic);
}

void cluster_session::on_link_state(link& l, connection_state s, std::error_code reason,
                                    const std::string& diagnostic) {
  if (closed_) return;
  if (s != connection_state::connected) {
    last_error_ =
        diagnostic.empty() ? fmt::format("{}: {}", l.address, reason.message()) : diagnostic;
    request_refresh();
  }
  update_state(reason, diagnostic);
}

void cluster_session::on_link_refused(link& l, std::string_view channel, std::error_code ec,
                                      std::string_view text) {
  if (channels_.placement(channel) != l.address) return;
  const redirect r = parse_redirect(text);
  if (r.what == redirect::kind::moved || r.what == redirect::kind::ask) {
    // Subscribed on a node that does not own the channel's slot (the map was stale).
    l.conn->unsubscribe(channel);
    channels_.unplace(channel);
    if (r.what == redirect::kind::moved) {
      map_.move(r.slot, r.host.empty() ? l.conn->host() : r.host, r.port);
    }
    apply_channel_moves(channels_.reconcile(map_));
    request_refresh();
    return;
  }
  if (listener_ != nullptr) listener_->on_refused(channel, ec, text);
}

void cluster_session::on_link_dropped(link& l, std::string_view channel) {
  if (channels_.placement(channel) != l.address) return;
  // Its slot moved: subscribe where the map says now (a node that does not own it answers
  // -MOVED, which places it right), and read the map again.
  l.conn->unsubscribe(channel);
  channels_.unplace(channel);
  apply_channel_moves(channels_.reconcile(map_));
  request_refresh();
}

void cluster_session::subscribe(std::string_view, std::string_view channel) {
  channels_.want(channel);
  if (have_map_) apply_channel_moves(channels_.reconcile(map_));
}

void cluster_session::unsubscribe(std::string_view, std::string_view channel) {
  const std::string node = channels_.unwant(channel);
  if (node.empty()) return;
  if (auto it = links_.find(node); it != links_.end()) it->second->conn->unsubscribe(channel);
}

bool cluster_session::subscribed(std::string_view, std::string_view channel) const {
  const auto node = channels_.placement(channel);
  if (node.empty()) return false;
  auto it = links_.find(std::string(node));
  return it != links_.end() && it->second->conn->subscribed(channel);
}

std::vector<std::string> cluster_session::masters() const { return map_.master_addresses(); }

multiplexer::id_type cluster_session::exec_on(std::string_view node, std::string payload,
                                              request_options opts, reply_handler handler) {
  opts.unknown = unknown_policy(command_kind::query);  // node commands are queries (SCAN)
  link* l = closed_ ? nullptr : link_at(node);
  if (l == nullptr) {
    asio::post(executor_, [h = std::move(handler)]() mutable {
      std::move(h)(make_error_code(errc::invalid_argument), resp3::value{});
    });
    return 0;
  }
  return l->conn->exec(std::move(payload), opts, std::move(handler));
}

void cluster_session::retire_counters(const connection& c) {
  const auto& n = c.stats();
  retired_.reconnects += n.reconnects.load(std::memory_order_relaxed);
  retired_.health_check_failures += n.health_check_failures.load(std::memory_order_relaxed);
  retired_.retried_commands += n.retried_commands.load(std::memory_order_relaxed);
  retired_.writes += n.writes.load(std::memory_order_relaxed);
}

session_stats cluster_session::stats() const noexcept {
  session_stats s = retired_;
  for (const auto& [address, l] : links_) {
    const auto& c = l->conn->stats();
    s.reconnects += c.reconnects.load(std::memory_order_relaxed);
    s.reconnected_at = std::max(s.reconnected_at, c.last_reconnect());
    s.health_check_failures += c.health_check_failures.load(std::memory_order_relaxed);
    s.retried_commands += c.retried_commands.load(std::memory_order_relaxed);
    s.writes += c.writes.load(std::memory_order_relaxed);
  }
  return s;
}

std::size_t cluster_session::subscriptions() const noexcept {
  std::size_t n = 0;
  for (const auto& [address, l] : links_) n += l->conn->subscriptions();
  return n;
}

std::size_t cluster_session::outstanding() const noexcept {
  std::size_t n = parked_.size();
  for (const auto& [address, l] : links_) n += l->conn->outstanding();
  return n;
}

}  // namespace rlock::detail
