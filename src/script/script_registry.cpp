#include "script/script_registry.hpp"

#include "resp3/request.hpp"
#include "rlock/error.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <charconv>
#include <iterator>

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

std::string_view script_registry::evalsha(script s, std::span<const std::string_view> keys,
                                          std::span<const std::string_view> args) {
  // Serialized straight into a reused buffer: this is the hot path of every lock operation.
  // The connection copies the bytes when the command is queued, before anybody can reuse it.
  scratch_.clear();
  resp3::append_array_header(scratch_, 3 + keys.size() + args.size());
  resp3::append_bulk(scratch_, "EVALSHA");
  resp3::append_bulk(scratch_, sha_[static_cast<std::size_t>(s)]);
  char digits[24];
  const auto [end, ec] = std::to_chars(std::begin(digits), std::end(digits), keys.size());
  static_cast<void>(ec);  // cannot fail: the buffer fits every size_t
  resp3::append_bulk(scratch_, std::string_view(digits, static_cast<std::size_t>(end - digits)));
  for (auto k : keys) resp3::append_bulk(scratch_, k);
  for (auto a : args) resp3::append_bulk(scratch_, a);
  return scratch_;
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
