#include "conn/connection.hpp"

#include "resp3/request.hpp"
#include "rlock/error.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <fmt/format.h>

#include <utility>

namespace rlock::detail {

namespace asio = boost::asio;
using asio::use_awaitable;

/// One command awaiting its reply. Shared between the awaiting coroutine and the FIFO so that a
/// command that timed out still consumes its reply when it finally arrives.
struct connection::pending {
  explicit pending(const asio::any_io_executor& ex) : wake(ex) {}
  asio::steady_timer wake;  // cancelled when the reply (or a failure) is in
  resp3::value reply;
  std::error_code ec;
  bool done = false;
};

connection::connection(asio::any_io_executor ex, config cfg)
    : executor_(std::move(ex)),
      cfg_(std::move(cfg)),
      resolver_(executor_),
      socket_(executor_),
      writer_wake_(executor_, asio::steady_timer::time_point::max()) {}

connection::~connection() = default;

asio::awaitable<void> connection::connect() {
  if (open_) co_return;
  // The deadline closes the connection rather than cancelling the attempt: a handshake command
  // in flight does not take cancellation (see exec), but it does fail when the connection does.
  auto timed_out = std::make_shared<bool>(false);
  asio::steady_timer deadline(executor_, cfg_.connect_timeout);
  deadline.async_wait([this, timed_out, self = shared_from_this()](boost::system::error_code ec) {
    if (ec) return;
    *timed_out = true;
    resolver_.cancel();
    close(make_error_code(errc::timeout));
  });
  std::exception_ptr failure;
  try {
    co_await connect_and_handshake();
  } catch (...) {
    failure = std::current_exception();
  }
  deadline.cancel();
  if (failure) close(make_error_code(errc::connection_lost));
  if (failure && !*timed_out) std::rethrow_exception(failure);
  if (*timed_out) {
    throw_error(errc::timeout, fmt::format("connecting to {}:{} took longer than {} ms", cfg_.host,
                                           cfg_.port, cfg_.connect_timeout.count()));
  }
}

asio::awaitable<void> connection::connect_and_handshake() {
  auto [rec, endpoints] = co_await resolver_.async_resolve(cfg_.host, std::to_string(cfg_.port),
                                                           asio::as_tuple(use_awaitable));
  if (rec) {
    throw_error(errc::connection_lost,
                fmt::format("cannot resolve {}: {}", cfg_.host, rec.message()));
  }
  auto [cec, ep] = co_await asio::async_connect(socket_, endpoints, asio::as_tuple(use_awaitable));
  if (cec) {
    throw_error(errc::connection_lost,
                fmt::format("cannot connect to {}:{}: {}", cfg_.host, cfg_.port, cec.message()));
  }
  socket_.set_option(asio::ip::tcp::no_delay(true));
  parser_ = resp3::parser{};
  open_ = true;
  auto self = shared_from_this();
  asio::co_spawn(
      executor_, [self]() { return self->reader(); }, asio::detached);
  asio::co_spawn(
      executor_, [self]() { return self->writer(); }, asio::detached);

  std::string hello;
  if (!cfg_.password.empty()) {
    // Both arms must be string_views: a "default" : std::string ternary yields a temporary string.
    const std::string_view user =
        cfg_.username.empty() ? std::string_view("default") : std::string_view(cfg_.username);
    resp3::append_command(hello, {"HELLO", "3", "AUTH", user, cfg_.password});
  } else {
    resp3::append_command(hello, {"HELLO", "3"});
  }
  auto reply = co_await exec(hello);
  if (reply.is_error()) {
    close(make_error_code(errc::server_error));
    throw_error(errc::server_error, fmt::format("HELLO 3 failed: {}", reply.str));
  }
  if (cfg_.database != 0) {
    std::string select;
    resp3::append_command(select, {"SELECT", std::to_string(cfg_.database)});
    reply = co_await exec(select);
    if (reply.is_error()) {
      close(make_error_code(errc::server_error));
      throw_error(errc::server_error,
                  fmt::format("SELECT {} failed: {}", cfg_.database, reply.str));
    }
  }
}

asio::awaitable<resp3::value> connection::exec(std::string_view command) {
  if (!open_) throw_error(errc::connection_lost, "not connected");
  auto p = std::make_shared<pending>(executor_);
  p->wake.expires_after(cfg_.command_timeout);
  write_buffer_.append(command);
  pending_.push_back(p);
  writer_wake_.cancel();
  // An empty slot shields the wait from the caller's cancellation (see the header).
  co_await p->wake.async_wait(
      asio::bind_cancellation_slot(asio::cancellation_slot(), asio::as_tuple(use_awaitable)));
  if (!p->done) {
    throw_error(errc::timeout, fmt::format("no reply within {} ms", cfg_.command_timeout.count()));
  }
  if (p->ec) throw std::system_error(p->ec);
  co_return std::move(p->reply);
}

void connection::send(std::string_view command) {
  if (!open_) return;
  write_buffer_.append(command);
  writer_wake_.cancel();
}

asio::awaitable<void> connection::writer() {
  auto self = shared_from_this();
  while (open_) {
    if (write_buffer_.empty()) {
      writer_wake_.expires_at(asio::steady_timer::time_point::max());
      co_await writer_wake_.async_wait(asio::as_tuple(use_awaitable));
      continue;
    }
    // Everything queued since the last write goes out in one write: natural pipelining.
    std::swap(write_buffer_, writing_);
    auto [ec, n] =
        co_await asio::async_write(socket_, asio::buffer(writing_), asio::as_tuple(use_awaitable));
    writing_.clear();
    if (ec) {
      close(ec == asio::error::operation_aborted
                ? std::make_error_code(std::errc::operation_canceled)
                : make_error_code(errc::connection_lost));
      co_return;
    }
  }
}

asio::awaitable<void> connection::reader() {
  auto self = shared_from_this();
  while (open_) {
    auto [ec, n] =
        co_await socket_.async_read_some(asio::buffer(read_buffer_), asio::as_tuple(use_awaitable));
    if (ec) {
      close(ec == asio::error::operation_aborted
                ? std::make_error_code(std::errc::operation_canceled)
                : make_error_code(errc::connection_lost));
      co_return;
    }
    parser_.feed(std::string_view(read_buffer_.data(), n));
    std::error_code perr;
    while (open_) {
      auto v = parser_.next(perr);
      if (!v) break;
      on_value(*v);
    }
    if (perr) {
      close(perr);
      co_return;
    }
  }
}

void connection::on_value(resp3::value& v) {
  if (v.is_push()) {
    if (on_push_) on_push_(v);
    return;
  }
  if (pending_.empty()) {
    // A reply nobody asked for: the stream is out of step and cannot be trusted.
    close(make_error_code(errc::protocol_error));
    return;
  }
  auto p = std::move(pending_.front());
  pending_.pop_front();
  p->reply = std::move(v);
  p->done = true;
  p->wake.cancel();
}

void connection::close(std::error_code reason) {
  if (!open_ && pending_.empty()) {
    if (socket_.is_open()) {
      boost::system::error_code ignored;
      socket_.close(ignored);
    }
    return;
  }
  open_ = false;
  boost::system::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  writer_wake_.cancel();
  write_buffer_.clear();
  auto failed = std::exchange(pending_, {});
  for (auto& p : failed) {
    p->ec = reason;
    p->done = true;
    p->wake.cancel();
  }
  if (on_lost_) on_lost_(reason);
}

}  // namespace rlock::detail
