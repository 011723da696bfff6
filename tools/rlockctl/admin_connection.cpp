#include "admin_connection.hpp"

#include "resp3/request.hpp"
#include "session/redis_error.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <fmt/format.h>

#include <chrono>
#include <utility>

namespace rlockctl {

namespace asio = boost::asio;
namespace detail = rlock::detail;

namespace {

std::string encode(const command& cmd) {
  std::string payload;
  detail::resp3::append_command(payload, std::span<const std::string>(cmd));
  return payload;
}

}  // namespace

boost::system::system_error reply_error(const reply& r, std::string_view what) {
  return {make_error_code(detail::errc_of_reply(r.str)), fmt::format("{}: {}", what, r.str)};
}

admin_connection::admin_connection(asio::any_io_executor ex, rlock::config cfg)
    : conn_(detail::make_session(std::move(ex), cfg)) {
  conn_->set_listener(this);
}

admin_connection::~admin_connection() {
  conn_->set_listener(nullptr);
  conn_->close(make_error_code(rlock::errc::connection_lost));
}

void admin_connection::close() { conn_->close(make_error_code(rlock::errc::connection_lost)); }

void admin_connection::fail(std::error_code ec, std::string_view what) const {
  const auto& last = conn_->last_error();
  if (last.empty()) throw boost::system::system_error(ec, std::string(what));
  throw boost::system::system_error(ec, fmt::format("{} ({})", what, last));
}

asio::awaitable<void> admin_connection::connect() {
  auto [ec, diagnostic] = co_await asio::async_initiate<const asio::use_awaitable_t<>&,
                                                        void(std::error_code, std::string)>(
      [this](auto handler) { conn_->async_connect(std::move(handler)); }, asio::use_awaitable);
  if (ec) {
    // The connection's diagnostic already names the address.
    throw boost::system::system_error(
        ec, diagnostic.empty() ? fmt::format("cannot connect to {}", conn_->node_address())
                               : diagnostic);
  }
}

asio::awaitable<reply> admin_connection::run(command cmd) { return run_on({}, std::move(cmd)); }

asio::awaitable<reply> admin_connection::run_on(std::string node, command cmd) {
  // Named, not a braced temporary: g++ 12 miscompiles those in a co_await expression.
  std::vector<command> one;
  one.push_back(std::move(cmd));
  auto replies = co_await pipeline_on(std::move(node), std::move(one));
  if (replies.front().is_error()) throw reply_error(replies.front(), "Redis refused");
  co_return std::move(replies.front());
}

asio::awaitable<std::vector<reply>> admin_connection::pipeline(std::vector<command> cmds,
                                                               std::string route) {
  return send(std::move(cmds), {}, std::move(route));
}

asio::awaitable<std::vector<reply>> admin_connection::pipeline_on(std::string node,
                                                                  std::vector<command> cmds) {
  return send(std::move(cmds), std::move(node), {});
}

asio::awaitable<std::vector<reply>> admin_connection::send(std::vector<command> cmds,
                                                           std::string node, std::string route) {
  if (cmds.empty()) co_return std::vector<reply>{};
  // Every command is queued at once, so the multiplexer writes them together; the batch
  // completes when the last answer (or the first failure's last answer) is in.
  const auto deadline = std::chrono::steady_clock::now() + conn_->cfg().command_timeout;
  auto [ec, replies] = co_await asio::async_initiate<const asio::use_awaitable_t<>&,
                                                     void(std::error_code, std::vector<reply>)>(
      [&](auto handler) {
        using handler_type = decltype(handler);
        struct batch {
          explicit batch(handler_type h) : handler(std::move(h)) {}
          std::vector<reply> replies;
          std::size_t left = 0;
          std::error_code ec;
          handler_type handler;
        };
        auto b = std::make_shared<batch>(std::move(handler));
        b->replies.resize(cmds.size());
        b->left = cmds.size();
        for (std::size_t i = 0; i < cmds.size(); ++i) {
          // Read-only queries (command_kind::query): written again after a reconnect.
          detail::request_options opts;
          opts.deadline = deadline;
          auto done = [b, i](std::error_code e, reply r) {
            if (e && !b->ec) b->ec = e;
            b->replies[i] = std::move(r);
            if (--b->left == 0) std::move(b->handler)(b->ec, std::move(b->replies));
          };
          if (!node.empty()) {
            conn_->exec_on(node, encode(cmds[i]), opts, std::move(done));
          } else {
            const std::string_view key = !route.empty()       ? std::string_view(route)
                                         : cmds[i].size() > 1 ? std::string_view(cmds[i][1])
                                                              : std::string_view{};
            conn_->exec(detail::command::encoded(detail::command_kind::query, key, encode(cmds[i])),
                        opts, std::move(done));
          }
        }
      },
      asio::use_awaitable);
  if (ec) fail(ec, fmt::format("{} failed", cmds.front().front()));
  co_return std::move(replies);
}

void admin_connection::subscribe(std::string_view channel) { conn_->subscribe({}, channel); }

void admin_connection::on_message(std::string_view channel, std::string_view payload,
                                  std::chrono::steady_clock::time_point) {
  if (events.message) events.message(channel, payload);
}

void admin_connection::on_subscribed(std::string_view channel) {
  if (events.subscribed) events.subscribed(channel);
}

void admin_connection::on_refused(std::string_view channel, std::error_code /*ec*/,
                                  std::string_view text) {
  if (events.refused) events.refused(channel, text);
}

void admin_connection::on_state(rlock::connection_state state, std::error_code /*reason*/,
                                const std::string& diagnostic) {
  if (events.state) events.state(state, diagnostic);
}

}  // namespace rlockctl
