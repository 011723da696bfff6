#pragma once

#include "resp3/parser.hpp"
#include "resp3/value.hpp"
#include "rlock/config.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

namespace rlock::detail {

/// The one multiplexed connection of a client: every command of every coroutine is pipelined on
/// it, and RESP3 pushes (pub/sub confirmations and messages) arrive on it too. Replies are matched
/// to requests in FIFO order; pushes go to the push handler.
///
/// All member functions must be called on the connection's executor (the client's strand).
class connection : public std::enable_shared_from_this<connection> {
 public:
  using push_handler = std::function<void(resp3::value&)>;
  using lost_handler = std::function<void(std::error_code)>;

  connection(boost::asio::any_io_executor ex, config cfg);
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection();

  /// Resolves, connects, starts the reader and writer, and sends `HELLO 3 [AUTH]` and `SELECT`.
  /// Bounded by config::connect_timeout.
  boost::asio::awaitable<void> connect();

  /// Queues one serialized command and awaits its reply. An error reply is returned as a value
  /// (the caller decides what it means). Throws errc::timeout after config::command_timeout,
  /// errc::connection_lost if the connection fails or is not open, and operation_aborted after
  /// close(). Deliberately not cancellable: once written, a command runs on the server whether
  /// or not anybody waits, so callers must see its reply to keep their state true.
  boost::asio::awaitable<resp3::value> exec(std::string_view command);

  /// Queues a command that has no reply but pushes (SUBSCRIBE / UNSUBSCRIBE in RESP3).
  void send(std::string_view command);

  void set_push_handler(push_handler h) { on_push_ = std::move(h); }
  void set_lost_handler(lost_handler h) { on_lost_ = std::move(h); }

  /// Fails every pending command with `reason` and closes the socket. Idempotent.
  void close(std::error_code reason);

  bool is_open() const noexcept { return open_; }
  const boost::asio::any_io_executor& get_executor() const noexcept { return executor_; }

 private:
  struct pending;

  boost::asio::awaitable<void> connect_and_handshake();
  boost::asio::awaitable<void> reader();
  boost::asio::awaitable<void> writer();
  void on_value(resp3::value& v);

  boost::asio::any_io_executor executor_;
  config cfg_;
  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer writer_wake_;
  resp3::parser parser_;
  std::string write_buffer_;  // commands queued while a write is in flight
  std::string writing_;       // the bytes of the write in flight
  std::deque<std::shared_ptr<pending>> pending_;
  std::array<char, 16 * 1024> read_buffer_{};
  push_handler on_push_;
  lost_handler on_lost_;
  bool open_ = false;
};

}  // namespace rlock::detail
