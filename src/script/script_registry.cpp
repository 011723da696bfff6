#include "script/script_registry.hpp"

#include "resp3/request.hpp"
#include "rlock/error.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <vector>

namespace rlock::detail {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

namespace {

bool is_noscript(const resp3::value& v) { return v.is_error() && v.str.starts_with("NOSCRIPT"); }

}  // namespace

asio::awaitable<void> script_registry::load(script s) {
  std::string cmd;
  resp3::append_command(cmd, {"SCRIPT", "LOAD", script_sources[static_cast<std::size_t>(s)]});
  auto reply = co_await conn_.exec(cmd);
  if (reply.is_error()) throw_error(errc::server_error, "SCRIPT LOAD: " + reply.str);
  if (reply.type != resp3::type::blob_string && reply.type != resp3::type::simple_string) {
    throw_error(errc::protocol_error, "SCRIPT LOAD did not return a SHA1");
  }
  sha_[static_cast<std::size_t>(s)] = std::move(reply.str);
}

asio::awaitable<void> script_registry::load_all() {
  // Run concurrently, so the four loads are pipelined and share one round trip.
  static_assert(script_count == 4);
  co_await (load(script::acquire) && load(script::release) && load(script::renew) &&
            load(script::force_unlock));
}

std::string script_registry::evalsha(script s, std::span<const std::string_view> keys,
                                     std::span<const std::string_view> args) const {
  std::vector<std::string_view> argv;
  argv.reserve(3 + keys.size() + args.size());
  const std::string numkeys = std::to_string(keys.size());
  argv.push_back("EVALSHA");
  argv.push_back(sha_[static_cast<std::size_t>(s)]);
  argv.push_back(numkeys);
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  std::string cmd;
  resp3::append_command(cmd, std::span<const std::string_view>(argv));
  return cmd;
}

asio::awaitable<resp3::value> script_registry::run(script s, std::span<const std::string_view> keys,
                                                   std::span<const std::string_view> args) {
  if (sha_[static_cast<std::size_t>(s)].empty()) co_await load(s);
  auto reply = co_await conn_.exec(evalsha(s, keys, args));
  if (is_noscript(reply)) {
    co_await load(s);
    reply = co_await conn_.exec(evalsha(s, keys, args));
  }
  if (reply.is_error()) throw_error(errc::server_error, reply.str);
  co_return reply;
}

}  // namespace rlock::detail
