#pragma once

#include "resp3/parser.hpp"
#include "resp3/value.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace rlock::test {

/// A small synchronous RESP3 client for tests: plays a foreign client (e.g. a Redisson peer) and
/// inspects the server. Every read is bounded (10 s unless a shorter timeout is given) and
/// throws std::runtime_error when the bound passes, so a test never hangs on it.
class raw_client {
 public:
  /// Connects to 127.0.0.1:`port` and switches to RESP3 with `HELLO 3`.
  explicit raw_client(std::uint16_t port);

  raw_client(const raw_client&) = delete;
  raw_client& operator=(const raw_client&) = delete;

  /// Sends one command and returns its reply. An error reply is returned, not thrown. Pushes
  /// that arrive meanwhile are queued for `read_push`.
  detail::resp3::value command(std::initializer_list<std::string_view> args);
  /// The same for a command built at run time.
  detail::resp3::value command(std::span<const std::string_view> args);

  /// `command` for a reply that must be a number: returns it, throws std::runtime_error if the
  /// reply is anything else (an error reply included).
  std::int64_t command_int(std::initializer_list<std::string_view> args);

  /// How many times the server ran `command` since its start (INFO commandstats; the name as
  /// Redis writes it there, e.g. "evalsha" or "cluster|shards"); 0 if never.
  std::int64_t calls_of(std::string_view command);

  /// Sends without reading. Only for commands whose replies are pushes (SUBSCRIBE, UNSUBSCRIBE,
  /// PSUBSCRIBE… in RESP3): a normal reply left unread would be taken for the next command's.
  void send(std::initializer_list<std::string_view> args);

  /// The next push, queued or read within `timeout`; throws std::runtime_error on timeout.
  detail::resp3::value read_push(std::chrono::milliseconds timeout);

  /// Closes the connection (e.g. to let the server drop this client's subscriptions).
  void close();

 private:
  detail::resp3::value read_value(std::chrono::steady_clock::time_point deadline);

  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::socket socket_;
  detail::resp3::parser parser_;
  std::deque<detail::resp3::value> pushes_;
};

/// A one-line rendering of a reply for failure messages, e.g. `[1, "a", (error) ERR x]`.
std::string describe(const detail::resp3::value& v);

}  // namespace rlock::test
