#pragma once

#include "resp3/parser.hpp"
#include "resp3/value.hpp"
#include "rlock/config.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <chrono>
#include <deque>
#include <exception>
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
/// All member functions must be called on the connection's executor.
class connection : public std::enable_shared_from_this<connection> {
 public:
  using push_handler = std::function<void(resp3::value&)>;
  using lost_handler = std::function<void(std::error_code)>;

  connection(boost::asio::any_io_executor ex, config cfg);
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection();

  /// Resolves, connects, starts the reader, and sends `HELLO 3 [AUTH]` and `SELECT`.
  /// Bounded by config::connect_timeout.
  boost::asio::awaitable<void> connect();

  /// Queues one serialized command and awaits its reply. An error reply is returned as a value
  /// (the caller decides what it means). Throws errc::timeout after config::command_timeout,
  /// errc::connection_lost if the connection fails or is not open, and operation_aborted after
  /// close(). Deliberately not cancellable: once written, a command runs on the server whether
  /// or not anybody waits, so callers must see its reply to keep their state true.
  boost::asio::awaitable<resp3::value> exec(std::string_view command);

  /// exec for any completion token; completion signature void(std::error_code, resp3::value).
  template <typename CompletionToken>
  auto async_exec(std::string_view command, CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(std::error_code, resp3::value)>(
        [this](auto handler, std::string_view cmd) { start_exec(cmd, std::move(handler)); }, token,
        command);
  }

  /// The exception exec() throws for an async_exec error code (timeouts say how long).
  std::exception_ptr error_of(std::error_code ec) const;

  /// Queues a command that has no reply but pushes (SUBSCRIBE / UNSUBSCRIBE in RESP3).
  void send(std::string_view command);

  void set_push_handler(push_handler h) { on_push_ = std::move(h); }
  void set_lost_handler(lost_handler h) { on_lost_ = std::move(h); }

  /// Fails every pending command with `reason` and closes the socket. Idempotent.
  void close(std::error_code reason);

  bool is_open() const noexcept { return open_; }
  const boost::asio::any_io_executor& get_executor() const noexcept { return executor_; }

 private:
  using exec_handler = boost::asio::any_completion_handler<void(std::error_code, resp3::value)>;

  /// A command awaiting its reply, in send order. An empty handler marks one that timed out:
  /// its reply still arrives and is dropped.
  struct pending {
    exec_handler handler;
    std::chrono::steady_clock::time_point deadline;
  };

  void start_exec(std::string_view command, exec_handler handler);
  void complete(exec_handler handler, std::error_code ec, resp3::value reply);
  void arm_timeout();
  void on_timeout();

  boost::asio::awaitable<void> connect_and_handshake();
  boost::asio::awaitable<void> reader();
  void start_write();
  void on_value(resp3::value& v);

  boost::asio::any_io_executor executor_;
  config cfg_;
  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::ip::tcp::socket socket_;
  resp3::parser parser_;
  std::string write_buffer_;  // commands queued while a write is in flight
  std::string writing_;       // the bytes of the write in flight
  bool writing_in_flight_ = false;
  std::deque<pending> pending_;
  // One timer for all commands: it fires at the oldest command's deadline, not once per command.
  boost::asio::steady_timer timeout_;
  bool timeout_armed_ = false;
  std::array<char, 16 * 1024> read_buffer_{};
  push_handler on_push_;
  lost_handler on_lost_;
  bool open_ = false;
};

}  // namespace rlock::detail
