#pragma once

#include "conn/connection.hpp"
#include "resp3/value.hpp"
#include "script/scripts.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/awaitable.hpp>

#include <array>
#include <exception>
#include <span>
#include <string>
#include <string_view>

namespace rlock::detail {

/// Runs the scripts of scripts.hpp with EVALSHA. Their SHA1s come from `SCRIPT LOAD` (the server
/// is the authority on the hash, so no SHA1 code is needed here); a NOSCRIPT reply, after a
/// `SCRIPT FLUSH` or a server restart, is recovered by loading the script and retrying once.
class script_registry {
 public:
  /// A script's reply, or why there is none: an error reply becomes errc::server_error with
  /// Redis's text, a failed round trip the connection's error.
  using reply_handler = boost::asio::any_completion_handler<void(std::exception_ptr, resp3::value)>;

  explicit script_registry(connection& conn) : conn_(conn) {}

  /// Loads every script, pipelined; called once after connecting.
  boost::asio::awaitable<void> load_all();

  /// Runs `s` and completes `handler` with its reply, on the connection's executor (possibly
  /// from the reader, never inside this call). `keys` and `args`, and the bytes they view, must
  /// stay valid until then: a NOSCRIPT retry serializes them again. This is the hot path of
  /// every lock operation, so it is a plain callback: no coroutine frame per command.
  void async_run(script s, std::span<const std::string_view> keys,
                 std::span<const std::string_view> args, reply_handler handler);

  /// async_run for coroutines; throws what async_run would report.
  boost::asio::awaitable<resp3::value> run(script s, std::span<const std::string_view> keys,
                                           std::span<const std::string_view> args);

 private:
  void send(script s, std::span<const std::string_view> keys,
            std::span<const std::string_view> args, reply_handler handler, bool may_reload);
  void reload_and_send(script s, std::span<const std::string_view> keys,
                       std::span<const std::string_view> args, reply_handler handler);
  std::string_view evalsha(script s, std::span<const std::string_view> keys,
                           std::span<const std::string_view> args);
  std::exception_ptr store_sha(script s, std::error_code ec, resp3::value& reply);

  connection& conn_;
  std::array<std::string, script_count> sha_;
  std::string scratch_;
};

}  // namespace rlock::detail
