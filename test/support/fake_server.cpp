#include "support/fake_server.hpp"

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <poll.h>
#include <string>

namespace rlock::test {

namespace asio = boost::asio;
using asio::ip::tcp;

fake_server::fake_server(behaviour_type behaviour)
    : behaviour_(std::move(behaviour)),
      acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
  port_ = acceptor_.local_endpoint().port();
  thread_ = std::thread([this] { serve(); });
}

fake_server::~fake_server() {
  stopping_ = true;
  boost::system::error_code ignored;
  // Wake a blocking accept by connecting to ourselves.
  tcp::socket poke(io_);
  poke.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_), ignored);
  thread_.join();
}

void fake_server::serve() {
  while (!stopping_) {
    tcp::socket s(io_);
    boost::system::error_code ec;
    acceptor_.accept(s, ec);
    if (ec || stopping_) return;
    ++connections_;
    try {
      behaviour_(s, *this);
    } catch (const std::exception&) {
      // The client went away mid-script: that is the client's business, not a test failure.
    }
  }
}

void fake_server::until_stopped() {
  for (int i = 0; i < 3000 && !stopping_; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string fake_server::read_some(socket& s) {
  pollfd p{s.native_handle(), POLLIN, 0};
  if (::poll(&p, 1, 5000) <= 0) return {};
  char buf[4096];
  boost::system::error_code ec;
  const auto n = s.read_some(asio::buffer(buf), ec);
  return ec ? std::string{} : std::string(buf, n);
}

void fake_server::write(socket& s, std::string_view bytes) {
  asio::write(s, asio::buffer(bytes.data(), bytes.size()));
}

}  // namespace rlock::test
