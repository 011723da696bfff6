#include "support/raw_client.hpp"

#include "resp3/request.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/address_v4.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/system_error.hpp>

#include <cerrno>
#include <poll.h>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace rlock::test {
namespace {

namespace resp3 = detail::resp3;
using clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds reply_timeout{10'000};

std::string command_name(std::initializer_list<std::string_view> args) {
  return args.size() == 0 ? std::string("(empty command)") : std::string(*args.begin());
}

void describe_to(std::string& out, const resp3::value& v) {
  auto list = [&](char open, char close, std::string_view sep_pair) {
    out += open;
    for (std::size_t i = 0; i < v.elements.size(); ++i) {
      if (i != 0) out += (!sep_pair.empty() && i % 2 == 1) ? sep_pair : ", ";
      describe_to(out, v.elements[i]);
    }
    out += close;
  };
  switch (v.type) {
    case resp3::type::simple_string:
    case resp3::type::blob_string:
    case resp3::type::verbatim_string:
      out += '"';
      out += v.str;
      out += '"';
      break;
    case resp3::type::simple_error:
    case resp3::type::blob_error:
      out += "(error) ";
      out += v.str;
      break;
    case resp3::type::number:
      out += std::to_string(v.integer);
      break;
    case resp3::type::null:
      out += "(null)";
      break;
    case resp3::type::double_type:
      out += std::to_string(v.real);
      break;
    case resp3::type::boolean:
      out += v.integer != 0 ? "true" : "false";
      break;
    case resp3::type::big_number:
      out += v.str;
      break;
    case resp3::type::array:
      list('[', ']', {});
      break;
    case resp3::type::set:
      list('{', '}', {});
      break;
    case resp3::type::push:
      out += "push";
      list('[', ']', {});
      break;
    case resp3::type::map:
    case resp3::type::attribute:
      list('{', '}', ": ");
      break;
  }
}

}  // namespace

raw_client::raw_client(std::uint16_t port) : socket_(ioc_) {
  socket_.connect({boost::asio::ip::address_v4::loopback(), port});
  const resp3::value hello = command({"HELLO", "3"});
  if (hello.type != resp3::type::map) {
    throw std::runtime_error("raw_client: HELLO 3 answered " + describe(hello));
  }
}

resp3::value raw_client::command(std::initializer_list<std::string_view> args) {
  return command(std::span<const std::string_view>(args.begin(), args.size()));
}

resp3::value raw_client::command(std::span<const std::string_view> args) {
  std::string out;
  resp3::append_command(out, args);
  boost::asio::write(socket_, boost::asio::buffer(out));
  const auto deadline = clock::now() + reply_timeout;
  for (;;) {
    resp3::value v = read_value(deadline);
    if (!v.is_push()) return v;
    pushes_.push_back(std::move(v));
  }
}

std::int64_t raw_client::calls_of(std::string_view command) {
  const std::string info = this->command({"INFO", "commandstats"}).str;
  const std::string field = "cmdstat_" + std::string(command) + ":calls=";
  const auto at = info.find(field);
  if (at == std::string::npos) return 0;
  return std::stoll(info.substr(at + field.size()));
}

std::int64_t raw_client::command_int(std::initializer_list<std::string_view> args) {
  const resp3::value v = command(args);
  if (v.type != resp3::type::number) {
    throw std::runtime_error("raw_client: expected a number in reply to " + command_name(args) +
                             ", got " + describe(v));
  }
  return v.integer;
}

void raw_client::send(std::initializer_list<std::string_view> args) {
  std::string out;
  resp3::append_command(out, args);
  boost::asio::write(socket_, boost::asio::buffer(out));
}

resp3::value raw_client::read_push(std::chrono::milliseconds timeout) {
  if (!pushes_.empty()) {
    resp3::value v = std::move(pushes_.front());
    pushes_.pop_front();
    return v;
  }
  resp3::value v = read_value(clock::now() + timeout);
  if (!v.is_push()) {
    throw std::runtime_error("raw_client: expected a push, got a reply " + describe(v) +
                             " (was a command with a normal reply passed to send()?)");
  }
  return v;
}

void raw_client::close() {
  boost::system::error_code ignored;
  socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

resp3::value raw_client::read_value(clock::time_point deadline) {
  char buf[4096];
  for (;;) {
    std::error_code ec;
    if (auto v = parser_.next(ec)) return std::move(*v);
    if (ec) throw std::runtime_error("raw_client: the server sent invalid RESP3");

    // Asio's blocking read would wait without bound (it polls with no timeout after EAGAIN,
    // so SO_RCVTIMEO does not help): wait with poll() first, then read what is there.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() <= 0) throw std::runtime_error("raw_client: timed out waiting for the server");
    pollfd pfd{socket_.native_handle(), POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw std::system_error(errno, std::generic_category(), "raw_client: poll");
    if (ready == 0) continue;  // the deadline check above throws

    boost::system::error_code read_ec;
    const std::size_t n = socket_.read_some(boost::asio::buffer(buf), read_ec);
    if (read_ec) throw boost::system::system_error(read_ec, "raw_client: read");
    parser_.feed({buf, n});
  }
}

std::string describe(const detail::resp3::value& v) {
  std::string out;
  describe_to(out, v);
  return out;
}

}  // namespace rlock::test
