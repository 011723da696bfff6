#include "session/sentinel/sentinel_locator.hpp"

#include "resp3/request.hpp"
#include "rlock/error.hpp"
#include "session/node/connection.hpp"
#include "session/sentinel/sentinel_replies.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <tuple>
#include <utility>

namespace rlock::detail {

namespace asio = boost::asio;

config sentinel_connection_config(const config& cfg) {
  config c = cfg;
  c.username = cfg.sentinel.username;
  c.password = cfg.sentinel.password;
  c.database = 0;
  c.sentinel = {};
  c.sync_replicas = {};
  c.track_holds = false;  // a sentinel holds no keys
  return c;
}

sentinel_locator::sentinel_locator(asio::any_io_executor ex, const config& cfg)
    : executor_(std::move(ex)),
      sentinel_cfg_(sentinel_connection_config(cfg)),
      nodes_(cfg.sentinel.nodes),
      master_name_(cfg.sentinel.master_name) {
  sentinel_cfg_.reconnect.enabled = false;  // one question per connection
  sentinel_cfg_.health_check_interval = std::chrono::milliseconds::zero();
}

asio::awaitable<located> sentinel_locator::locate() {
  if (hint_) {
    // Once: if the node turns out not to be the master (ROLE), the next attempt asks.
    auto where = std::exchange(hint_, std::nullopt);
    co_return located{{}, std::move(where->host), where->port, {}};
  }
  std::string failures;
  std::string question;
  resp3::append_command(question, {"SENTINEL", "get-master-addr-by-name", master_name_});
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    const config::endpoint node = nodes_[k];
    config c = sentinel_cfg_;
    c.host = node.host;
    c.port = node.port;
    auto probe = std::make_shared<connection>(executor_, c);
    auto* p = probe.get();  // plain pointers in the initiations: see connect_op in client.cpp
    auto [cec, why] = co_await asio::async_initiate<const asio::use_awaitable_t<>&,
                                                    void(std::error_code, std::string)>(
        [p](auto handler) { p->async_connect(std::move(handler)); }, asio::use_awaitable);
    std::string reason;
    if (!cec) {
      request_options opts;
      opts.deadline = clock_type::now() + c.command_timeout;
      auto [qec, reply] = co_await asio::async_initiate<const asio::use_awaitable_t<>&,
                                                        void(std::error_code, resp3::value)>(
          [p, &question, opts](auto handler) { p->exec(question, opts, std::move(handler)); },
          asio::use_awaitable);
      if (qec) {
        reason = qec.message();
      } else if (auto where = master_address(reply, reason)) {
        probe->close(make_error_code(std::errc::operation_canceled));
        // The sentinel that answered is asked first from now on.
        std::rotate(nodes_.begin(), nodes_.begin() + static_cast<std::ptrdiff_t>(k), nodes_.end());
        co_return located{{}, std::move(where->host), where->port, {}};
      }
    } else {
      reason = why.empty() ? cec.message() : why;
    }
    probe->close(make_error_code(std::errc::operation_canceled));
    failures +=
        fmt::format("{}{}:{}: {}", failures.empty() ? "" : "; ", node.host, node.port, reason);
  }
  co_return located{make_error_code(errc::master_not_found),
                    {},
                    0,
                    fmt::format("no sentinel named master '{}' ({})", master_name_, failures)};
}

asio::awaitable<located> sentinel_rotation::locate() {
  const auto& node = nodes_[next_++ % nodes_.size()];
  co_return located{{}, node.host, node.port, {}};
}

}  // namespace rlock::detail
