#include "session/node/node_session.hpp"

#include "session/cluster/cluster_session.hpp"
#include "session/sentinel/sentinel_session.hpp"

namespace rlock::detail {

node_session::node_session(boost::asio::any_io_executor ex, config cfg)
    : session(cfg), node_(std::make_shared<connection>(std::move(ex), std::move(cfg))) {}

node_session::~node_session() { node_->set_listener(nullptr); }

session_stats node_session::stats() const noexcept {
  const auto& c = node_->stats();
  return {c.reconnects.load(std::memory_order_relaxed), c.last_reconnect(),
          c.health_check_failures.load(std::memory_order_relaxed),
          c.retried_commands.load(std::memory_order_relaxed),
          c.writes.load(std::memory_order_relaxed)};
}

std::unique_ptr<session> make_session(boost::asio::any_io_executor ex, const config& cfg) {
  if (!cfg.cluster.nodes.empty()) return std::make_unique<cluster_session>(std::move(ex), cfg);
  if (!cfg.sentinel.nodes.empty()) return std::make_unique<sentinel_session>(std::move(ex), cfg);
  return std::make_unique<node_session>(std::move(ex), cfg);
}

}  // namespace rlock::detail
