#pragma once

#include "conn/connection.hpp"
#include "resp3/value.hpp"
#include "script/scripts.hpp"

#include <boost/asio/awaitable.hpp>

#include <array>
#include <span>
#include <string>
#include <string_view>

namespace rlock::detail {

/// Runs the scripts of scripts.hpp with EVALSHA. Their SHA1s come from `SCRIPT LOAD` (the server
/// is the authority on the hash, so no SHA1 code is needed here); a NOSCRIPT reply, after a
/// `SCRIPT FLUSH` or a server restart, is recovered by loading the script and retrying once.
class script_registry {
 public:
  explicit script_registry(connection& conn) : conn_(conn) {}

  /// Loads every script, pipelined; called once after connecting.
  boost::asio::awaitable<void> load_all();

  /// Runs `s` and returns its reply. An error reply throws errc::server_error with Redis's text.
  boost::asio::awaitable<resp3::value> run(script s, std::span<const std::string_view> keys,
                                           std::span<const std::string_view> args);

 private:
  boost::asio::awaitable<void> load(script s);
  std::string_view evalsha(script s, std::span<const std::string_view> keys,
                           std::span<const std::string_view> args);

  connection& conn_;
  std::array<std::string, script_count> sha_;
  std::string scratch_;
};

}  // namespace rlock::detail
