#pragma once

// What a lock's keys on the server say: its kind, holders, queue and permits, read in one
// pipelined round trip. For tools, health checks and dashboards; rlockctl's status, list and watch
// are built on it.
#include "rlock/client.hpp"
#include "rlock/detail/completion.hpp"
#include "rlock/export.hpp"
#include "rlock/lock_info.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <string>
#include <string_view>
#include <utility>

namespace rlock {

namespace detail {

/// What async_inspect's initiation holds: the client and the name.
struct inspect_target {
  client* c;
  std::string name;
  boost::asio::any_io_executor get_executor() const noexcept { return c->get_executor(); }
};

RLOCK_EXPORT void start_inspect(const inspect_target& t, handler<lock_info> h);

}  // namespace detail

/// Reads the lock `name` (config::key_prefix is added) in one pipelined round trip, bounded by
/// config::command_timeout: read-only queries, sent again after a reconnect. Completes with
/// `void(boost::system::error_code, lock_info)`. Errors: the connection's (connection_lost,
/// timeout), a refusal (permission_denied, key_not_permitted, command_not_permitted: the user
/// needs TYPE, HGETALL, GET, PTTL, LRANGE, ZRANGE, TIME and PUBSUB on the lock's keys),
/// protocol_error for an answer of the wrong shape.
template <detail::completion_token CompletionToken = default_completion_token>
auto async_inspect(client& c, std::string_view name, CompletionToken&& token = {}) {
  return detail::initiate<lock_info>(
      std::forward<CompletionToken>(token), detail::inspect_target{&c, std::string(name)},
      [](const detail::inspect_target& t, detail::handler<lock_info> h) {
        detail::start_inspect(t, std::move(h));
      });
}

/// async_inspect as an awaitable: a failure is thrown as boost::system::system_error with the
/// code and Redis's words.
RLOCK_EXPORT boost::asio::awaitable<lock_info> inspect(client& c, std::string_view name);

}  // namespace rlock
