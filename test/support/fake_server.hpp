#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>

namespace rlock::test {

/// A stand-in server on a free loopback port that plays a hostile or broken Redis: every
/// accepted connection is handed to `behaviour` on the server's own thread (blocking I/O; the
/// socket closes when it returns). The destructor stops accepting and joins the thread; a
/// behaviour that waits should wait with `until_stopped`, which returns when the server stops.
class fake_server {
 public:
  using socket = boost::asio::ip::tcp::socket;
  using behaviour_type = std::function<void(socket&, fake_server&)>;

  explicit fake_server(behaviour_type behaviour);
  ~fake_server();
  fake_server(const fake_server&) = delete;
  fake_server& operator=(const fake_server&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  int connections() const noexcept { return connections_.load(); }

  /// Blocks until the server is being destroyed (bounded by 30 s).
  void until_stopped();
  /// Reads what the client sent, at least one byte (bounded by 5 s); empty if it closed.
  static std::string read_some(socket& s);
  static void write(socket& s, std::string_view bytes);

 private:
  void serve();

  behaviour_type behaviour_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

}  // namespace rlock::test
