#include "conn/connection.hpp"

#include "resp3/request.hpp"
#include "rlock/error.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <fmt/format.h>

#include <utility>

namespace rlock::detail {

namespace asio = boost::asio;
using asio::use_awaitable;

connection::connection(asio::any_io_executor ex, config cfg)
    : executor_(std::move(ex)),
      cfg_(std::move(cfg)),
      resolver_(executor_),
      socket_(executor_),
      timeout_(executor_) {}

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
  // The handler is never connected to the caller's cancellation slot: see the header.
  // std::error_code is not thrown by use_awaitable: it comes back beside the reply.
  auto [ec, reply] = co_await async_exec(command, use_awaitable);
  if (ec) std::rethrow_exception(error_of(ec));
  co_return std::move(reply);
}

std::exception_ptr connection::error_of(std::error_code ec) const {
  if (ec == make_error_code(errc::timeout)) {
    return std::make_exception_ptr(
        std::system_error(ec, fmt::format("no reply within {} ms", cfg_.command_timeout.count())));
  }
  return std::make_exception_ptr(std::system_error(ec));
}

void connection::start_exec(std::string_view command, exec_handler handler) {
  if (!open_) {
    complete(std::move(handler), make_error_code(errc::connection_lost), {});
    return;
  }
  write_buffer_.append(command);
  pending_.push_back({std::move(handler), std::chrono::steady_clock::now() + cfg_.command_timeout});
  start_write();
  arm_timeout();
}

void connection::complete(exec_handler handler, std::error_code ec, resp3::value reply) {
  // Posted, never run inline: close() and exec's initiation may be inside a caller's frame.
  // Every caller is a coroutine on this executor, so running the handler from a posted function
  // is running it on its own executor.
  asio::post(executor_, [h = std::move(handler), ec, r = std::move(reply)]() mutable {
    std::move(h)(ec, std::move(r));
  });
}

void connection::arm_timeout() {
  if (timeout_armed_) return;
  for (const auto& p : pending_) {
    if (!p.handler) continue;  // timed out already, waiting for its late reply
    timeout_armed_ = true;
    timeout_.expires_at(p.deadline);
    timeout_.async_wait([this, self = shared_from_this()](boost::system::error_code ec) {
      timeout_armed_ = false;
      if (!ec) on_timeout();
    });
    return;
  }
}

void connection::on_timeout() {
  // Every command has the same timeout and they complete in order: the expired ones lead.
  const auto now = std::chrono::steady_clock::now();
  for (auto& p : pending_) {
    if (p.deadline > now) break;
    if (p.handler) complete(std::exchange(p.handler, nullptr), make_error_code(errc::timeout), {});
  }
  arm_timeout();
}

void connection::send(std::string_view command) {
  if (!open_) return;
  write_buffer_.append(command);
  start_write();
}

void connection::start_write() {
  if (writing_in_flight_ || write_buffer_.empty() || !open_) return;
  // Everything queued since the last write goes out in one write: natural pipelining. Started
  // from the request itself, so an idle connection sends at once (Asio tries the send inline).
  writing_in_flight_ = true;
  std::swap(write_buffer_, writing_);
  asio::async_write(socket_, asio::buffer(writing_),
                    [this, self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                      writing_in_flight_ = false;
                      writing_.clear();
                      if (ec) {
                        close(ec == asio::error::operation_aborted
                                  ? std::make_error_code(std::errc::operation_canceled)
                                  : make_error_code(errc::connection_lost));
                        return;
                      }
                      start_write();
                    });
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
  auto handler = std::move(pending_.front().handler);
  pending_.pop_front();
  // Run at once rather than posted: this is the reader's own completion, not an initiating
  // function, and every exec caller is a coroutine on this executor. The parse loop re-checks
  // open_ after each value, so a handler that closes the connection ends it cleanly.
  if (handler) std::move(handler)(std::error_code{}, std::move(v));
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
  write_buffer_.clear();
  timeout_.cancel();
  auto failed = std::exchange(pending_, {});
  for (auto& p : failed) {
    if (p.handler) complete(std::move(p.handler), reason, {});
  }
  if (on_lost_) on_lost_(reason);
}

}  // namespace rlock::detail
