#include "script/script_registry.hpp"

#include "resp3/request.hpp"
#include "rlock/error.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <charconv>
#include <iterator>
#include <system_error>

namespace rlock::detail {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

namespace {

bool is_noscript(const resp3::value& v) { return v.is_error() && v.str.starts_with("NOSCRIPT"); }

std::string load_command(script s) {
  std::string cmd;
  resp3::append_command(cmd, {"SCRIPT", "LOAD", script_sources[static_cast<std::size_t>(s)]});
  return cmd;
}

}  // namespace

std::exception_ptr script_registry::store_sha(script s, std::error_code ec, resp3::value& reply) {
  if (ec) return conn_.error_of(ec);
  if (reply.is_error()) {
    return std::make_exception_ptr(
        std::system_error(make_error_code(errc::server_error), "SCRIPT LOAD: " + reply.str));
  }
  if (reply.type != resp3::type::blob_string && reply.type != resp3::type::simple_string) {
    return std::make_exception_ptr(std::system_error(make_error_code(errc::protocol_error),
                                                     "SCRIPT LOAD did not return a SHA1"));
  }
  sha_[static_cast<std::size_t>(s)] = std::move(reply.str);
  return nullptr;
}

asio::awaitable<void> script_registry::load_all() {
  // Run concurrently, so the four loads are pipelined and share one round trip.
  static_assert(script_count == 4);
  auto load = [this](script s) -> asio::awaitable<void> {
    auto [ec, reply] =
        co_await conn_.async_exec(load_command(s), asio::as_tuple(asio::use_awaitable));
    if (auto e = store_sha(s, ec, reply)) std::rethrow_exception(e);
  };
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

void script_registry::async_run(script s, std::span<const std::string_view> keys,
                                std::span<const std::string_view> args, reply_handler handler) {
  if (sha_[static_cast<std::size_t>(s)].empty()) {
    reload_and_send(s, keys, args, std::move(handler));
  } else {
    send(s, keys, args, std::move(handler), true);
  }
}

void script_registry::send(script s, std::span<const std::string_view> keys,
                           std::span<const std::string_view> args, reply_handler handler,
                           bool may_reload) {
  conn_.async_exec(evalsha(s, keys, args),
                   [this, s, keys, args, may_reload, h = std::move(handler)](
                       std::error_code ec, resp3::value reply) mutable {
                     if (ec) return std::move(h)(conn_.error_of(ec), resp3::value{});
                     if (may_reload && is_noscript(reply))
                       return reload_and_send(s, keys, args, std::move(h));
                     if (reply.is_error()) {
                       auto e = std::make_exception_ptr(
                           std::system_error(make_error_code(errc::server_error), reply.str));
                       return std::move(h)(std::move(e), resp3::value{});
                     }
                     std::move(h)(nullptr, std::move(reply));
                   });
}

void script_registry::reload_and_send(script s, std::span<const std::string_view> keys,
                                      std::span<const std::string_view> args,
                                      reply_handler handler) {
  conn_.async_exec(load_command(s), [this, s, keys, args, h = std::move(handler)](
                                        std::error_code ec, resp3::value reply) mutable {
    if (auto e = store_sha(s, ec, reply)) return std::move(h)(std::move(e), resp3::value{});
    send(s, keys, args, std::move(h), false);
  });
}

asio::awaitable<resp3::value> script_registry::run(script s, std::span<const std::string_view> keys,
                                                   std::span<const std::string_view> args) {
  return asio::async_initiate<const asio::use_awaitable_t<>&,
                              void(std::exception_ptr, resp3::value)>(
      [this, s, keys, args](auto handler) { async_run(s, keys, args, std::move(handler)); },
      asio::use_awaitable);
}

}  // namespace rlock::detail
