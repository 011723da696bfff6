#include "session/node/connection.hpp"

#include "resp3/request.hpp"
#include "rlock/error.hpp"
#include "session/node/key_tracking.hpp"
#include "session/redis_error.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <utility>

namespace rlock::detail {

namespace asio = boost::asio;
using asio::use_awaitable;

namespace {

/// How often connect() asks Sentinel again when the node it named is not the master.
constexpr int max_not_master_retries = 5;

/// The command bytes of one request.
std::string command_bytes(std::initializer_list<std::string_view> args) {
  std::string out;
  resp3::append_command(out, args);
  return out;
}

/// Bounds on what the server may send. rlock's replies and pushes are small (a lock name, a
/// SHA1, an error text); a header announcing more than this is hostile or corrupt and is
/// rejected before a byte of it is buffered.
resp3::parser_limits reply_limits() {
  resp3::parser_limits limits;
  limits.max_blob = 16u * 1024 * 1024;
  limits.max_elements = 1u << 20;
  return limits;
}

/// The error a failed `HELLO 3` stands for.
errc errc_of_hello(std::string_view text) {
  if (text.starts_with("NOPROTO") || text.find("unknown command") != std::string_view::npos) {
    return errc::unsupported_server;
  }
  return errc_of_reply(text);
}

}  // namespace

connection::connection(asio::any_io_executor ex, config cfg)
    : executor_(std::move(ex)),
      cfg_(std::move(cfg)),
      host_(cfg_.host),
      port_(cfg_.port),
      resolver_(executor_),
      transport_(executor_, cfg_),
      backoff_(cfg_.reconnect.backoff_initial, cfg_.reconnect.backoff_cap, random_seed()),
      deadline_timer_(executor_),
      connect_timer_(executor_),
      reconnect_timer_(executor_),
      health_timer_(executor_) {
  mux_.set_push_handler([this](resp3::value& v) { on_push(v); });
}

connection::~connection() = default;

// --- connecting -----------------------------------------------------------------------------

void connection::async_connect(connect_handler handler) {
  switch (state_) {
    case connection_state::connected:
    case connection_state::reconnecting:
      // Connected once: from here on the connection keeps itself up.
      asio::post(executor_, [h = std::move(handler)]() mutable {
        std::move(h)(std::error_code{}, std::string{});
      });
      return;
    case connection_state::closed:
      asio::post(executor_, [h = std::move(handler)]() mutable {
        std::move(h)(make_error_code(errc::connection_lost), "the client is closed");
      });
      return;
    case connection_state::connecting:
      connect_waiters_.push_back(std::move(handler));
      return;
    case connection_state::disconnected:
      connect_waiters_.push_back(std::move(handler));
      state_ = connection_state::connecting;
      start_attempt();
      return;
  }
}

void connection::start_attempt() {
  asio::co_spawn(
      executor_, [self = shared_from_this(), gen = gen_]() { return self->attempt(gen); },
      asio::detached);
}

asio::awaitable<void> connection::attempt(std::uint64_t gen) {
  auto self = shared_from_this();
  if (locator_) {
    // Where to go this time (Sentinel: asked again on every attempt), within the locator's own
    // bounds; the attempt's deadline starts after it.
    located where = co_await locator_->locate();
    if (gen != gen_) co_return;
    if (where.ec) {
      lose(gen, where.ec, std::move(where.diagnostic));
      co_return;
    }
    host_ = std::move(where.host);
    port_ = where.port;
  }
  // The attempt's deadline drops the connection rather than cancelling operations one by one:
  // whatever is in flight (resolve, connect, a handshake command) fails with it.
  connect_timer_.expires_after(cfg_.connect_timeout);
  connect_timer_.async_wait([this, self, gen](boost::system::error_code ec) {
    if (ec || gen != gen_ || state_ == connection_state::connected) return;
    if (tls_handshaking_) {
      // A plaintext Redis takes a ClientHello for the start of an inline command and waits for
      // its end: silence, not an error, is how a TLS client on a plaintext port fails.
      lose(gen, make_error_code(errc::tls_handshake_failed),
           fmt::format("{}:{} did not answer the TLS handshake within {} ms (connect_timeout): "
                       "a plaintext port? turn tls off or use the server's tls-port",
                       host_, port_, cfg_.connect_timeout.count()));
      return;
    }
    lose(gen, make_error_code(errc::timeout),
         fmt::format("connecting to {}:{} took longer than {} ms (connect_timeout)", host_, port_,
                     cfg_.connect_timeout.count()));
  });

  auto [rec, endpoints] =
      co_await resolver_.async_resolve(host_, std::to_string(port_), asio::as_tuple(use_awaitable));
  if (gen != gen_) co_return;
  if (rec) {
    lose(gen, make_error_code(errc::resolve_failed),
         fmt::format("cannot resolve '{}': {}", host_, rec.message()));
    co_return;
  }
  std::string settings_error;
  if (auto tec = transport_.renew(host_, settings_error)) {
    lose(gen, tec, std::move(settings_error));
    co_return;
  }
  auto keep = transport_.keep_alive();
  auto [cec, ep] =
      co_await asio::async_connect(transport_.socket(), endpoints, asio::as_tuple(use_awaitable));
  if (gen != gen_) co_return;
  if (cec) {
    lose(gen, make_error_code(errc::connect_failed),
         fmt::format("cannot connect to {}:{}: {}", host_, port_, cec.message()));
    co_return;
  }
  boost::system::error_code ignored;
  transport_.socket().set_option(asio::ip::tcp::no_delay(true), ignored);
  if (transport_.tls()) {
    // Within the same connect_timeout as the rest of the attempt.
    tls_handshaking_ = true;
    auto [hec] = co_await transport_.secure().async_handshake(asio::ssl::stream_base::client,
                                                              asio::as_tuple(use_awaitable));
    if (gen != gen_) co_return;
    tls_handshaking_ = false;
    if (hec) {
      auto why = transport_.explain(hec);
      lose(gen, make_error_code(why ? why->first : errc::tls_handshake_failed),
           fmt::format("{}:{}: {}", host_, port_, why ? why->second : hec.message()));
      co_return;
    }
  }
  parser_ = resp3::parser{reply_limits()};
  last_read_ = clock_type::now();
  start_read(gen);

  start_handshake(gen);
}

void connection::start_handshake(std::uint64_t gen) {
  // Pipelined: every command is queued at once (one write). The replies arrive in order and are
  // checked as they come; the first bad one fails the attempt, the last good one completes it.
  std::vector<std::string> commands;
  std::vector<std::string_view> hello{"HELLO", "3"};
  if (!cfg_.password.empty()) {
    // Both arms must be string_views: a "default" : std::string ternary yields a temporary.
    const std::string_view user =
        cfg_.username.empty() ? std::string_view("default") : std::string_view(cfg_.username);
    hello.insert(hello.end(), {"AUTH", user, cfg_.password});
  }
  if (!cfg_.client_name.empty()) hello.insert(hello.end(), {"SETNAME", cfg_.client_name});
  commands.emplace_back();
  resp3::append_command(commands.back(), std::span<const std::string_view>(hello));
  // Fence: the previous connection may still hold written requests in some buffer on the way
  // (a stalled path that heals later). Killing it before anything else runs here means each of
  // them either ran already or never will. After a server restart the old id may name another
  // client; killing it costs that client a reconnect, nothing more.
  // Only the node that had the previous connection can be asked to kill it: after a failover
  // (a new node) the id means nothing here, and the old node is out of reach of this connection.
  fencing_ = server_id_ != 0 && host_ == ready_host_ && port_ == ready_port_;
  if (fencing_)
    commands.push_back(command_bytes({"CLIENT", "KILL", "ID", std::to_string(server_id_)}));
  handshake_id_ = 0;
  hello_answered_ = false;
  select_step_ = tracking_step_ = 0;
  if (cfg_.database != 0) {
    select_step_ = commands.size();
    commands.push_back(command_bytes({"SELECT", std::to_string(cfg_.database)}));
  }
  tracking_ = tracking_off_ = false;
  if (cfg_.track_holds) {
    // Sent to every server: whether this one keeps NOLOOP inside scripts is HELLO's answer,
    // which comes back after the whole handshake was written.
    tracking_step_ = commands.size();
    commands.emplace_back();
    resp3::append_command(commands.back(), std::span<const std::string_view>(tracking_command));
  }
  steps_begin_ = commands.size();
  for (const auto& step : steps_) commands.push_back(step.command);
  request_options opts;
  opts.handshake = true;
  const std::size_t last = commands.size() - 1;
  for (std::size_t i = 0; i <= last; ++i) {
    // A server that refuses HELLO and then says nothing fails the attempt at once, not at the
    // connect deadline. Posted: the handshake goes on outside the multiplexer's bookkeeping.
    mux_.add(std::move(commands[i]), answer_kind::reply, {}, opts,
             [this, self = shared_from_this(), gen, i, last](std::error_code ec, resp3::value v) {
               if (gen != gen_) return;
               std::string diagnostic;
               if (!ec) ec = check_step(i, v, diagnostic);
               if (ec) {
                 if (diagnostic.empty()) diagnostic = last_error_;
                 asio::post(executor_, [this, self, gen, ec, d = std::move(diagnostic)]() mutable {
                   lose(gen, ec, std::move(d));
                 });
               } else if (i == last) {
                 asio::post(executor_, [this, self, gen] { on_ready(gen); });
               }
             });
  }
  start_write();
}

std::string connection::without_password(std::string_view text) const {
  // A server that does not know HELLO echoes its arguments ("with args beginning with: ...
  // 'AUTH' 'user' 'secret'"): the password must not reach an error message or a log.
  std::string out(text);
  if (cfg_.password.empty()) return out;
  for (auto at = out.find(cfg_.password); at != std::string::npos;
       at = out.find(cfg_.password, at + 3)) {
    out.replace(at, cfg_.password.size(), "***");
  }
  return out;
}

std::error_code connection::check_step(std::size_t i, resp3::value& reply,
                                       std::string& diagnostic) {
  if (i == 1 && fencing_) {
    // Any answer will do: killed (1), already gone (0), or refused (no `client|kill` right,
    // then this connection is not fenced; see docs/guide/faults.md).
    return {};
  }
  if (i == 0) {
    if (reply.is_error()) {
      const errc e = errc_of_hello(reply.str);
      diagnostic = fmt::format("HELLO 3 failed: {}{}", without_password(reply.str),
                               e == errc::unsupported_server
                                   ? " (rlock needs Redis 6 or later, which speaks RESP3)"
                                   : "");
      return make_error_code(e);
    }
    hello_answered_ = true;
    if (reply.type != resp3::type::map) {
      diagnostic =
          "HELLO 3 did not answer with a map: the server does not speak RESP3 "
          "(rlock needs Redis 6 or later)";
      return make_error_code(errc::unsupported_server);
    }
    for (std::size_t k = 0; k + 1 < reply.elements.size(); k += 2) {
      if (reply.elements[k].str == "id" && reply.elements[k + 1].type == resp3::type::number) {
        handshake_id_ = reply.elements[k + 1].integer;
      }
      if (reply.elements[k].str == "version") server_version_ = reply.elements[k + 1].str;
    }
    return {};
  }
  if (select_step_ != 0 && i == select_step_) {
    if (!reply.is_error()) return {};
    diagnostic = fmt::format("SELECT {} failed: {}", cfg_.database, reply.str);
    return make_error_code(errc_of_reply(reply.str));
  }
  if (tracking_step_ != 0 && i == tracking_step_) {
    // Never a failure: without tracking, a holder learns of a change at the next renewal.
    if (reply.is_error()) {
      tracking_refusal_ = fmt::format("CLIENT TRACKING was refused: {}", reply.str);
    } else if (!tracking_supported(server_version_)) {
      tracking_refusal_ = fmt::format(
          "the server is {}; tracking needs 7.0.5 or later (NOLOOP inside scripts)",
          server_version_.empty() ? std::string("of an unknown version") : server_version_);
      tracking_off_ = true;
    } else {
      tracking_refusal_.clear();
      tracking_ = true;
    }
    return {};
  }
  return steps_[i - steps_begin_].check(reply, diagnostic);
}

void connection::on_ready(std::uint64_t gen) {
  if (gen != gen_) return;
  connect_timer_.cancel();
  const bool again = ever_connected_;
  ever_connected_ = true;
  server_id_ = handshake_id_;
  ready_host_ = host_;
  ready_port_ = port_;
  not_master_retries_ = 0;
  state_ = connection_state::connected;
  backoff_.reset();
  if (again) {
    ++counters_.reconnects;
    counters_.reconnected_at.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                                   std::memory_order_relaxed);
  }
  if (tracking_off_) {
    // On, on a server whose scripts would invalidate this client's own keys at every write.
    mux_.add(command_bytes({"CLIENT", "TRACKING", "OFF"}), answer_kind::reply, {}, {},
             [](std::error_code, resp3::value) {});
  }
  // Every wanted channel again; its waiters retry once it is confirmed.
  for (const auto& channel : subs_.replay()) send_subscription(channel, true);
  last_read_ = clock_type::now();
  ping_outstanding_ = false;
  arm_health();
  start_write();
  arm_deadline(mux_.next_deadline());
  finish_connect({}, {});
  tell_state({}, {});
  // The server tracks nothing this connection has not read, and after a failover or a restart
  // the keys themselves may be gone: every hold is checked (and read, so tracked) again. A
  // client's first connection holds nothing yet; a cluster's new node may hold moved keys.
  if (tracking_ && listener_ != nullptr) listener_->on_invalidate({}, true);
}

void connection::finish_connect(std::error_code ec, const std::string& diagnostic) {
  auto waiters = std::exchange(connect_waiters_, {});
  for (auto& h : waiters) {
    asio::post(executor_,
               [h = std::move(h), ec, diagnostic]() mutable { std::move(h)(ec, diagnostic); });
  }
}

void connection::tell_state(std::error_code reason, const std::string& diagnostic) {
  if (listener_ != nullptr) listener_->on_state(state_, reason, diagnostic);
}

void connection::drop_socket() {
  ++gen_;  // every callback of the dropped connection is stale from here on
  resolver_.cancel();
  transport_.close();
  tls_handshaking_ = false;
  connect_timer_.cancel();
  health_timer_.cancel();
  ping_outstanding_ = false;
  subs_.on_disconnect();
}

void connection::lose(std::uint64_t gen, std::error_code ec, std::string diagnostic) {
  if (gen != gen_ || state_ == connection_state::closed || state_ == connection_state::disconnected)
    return;
  drop_socket();
  last_error_ = diagnostic.empty() ? ec.message() : diagnostic;

  // The state first, the requests' handlers last: a handler may resume a caller inline, which
  // must find the connection in its new state (and may even close it).
  // A first connection fails connect() at its first failed attempt, but for two reasons to try
  // again: Sentinel's answer was stale (the node it named is not the master: ask again, a few
  // times), or nobody waits on this connection.
  const bool stale_master =
      ec == errc::not_master && ++not_master_retries_ <= max_not_master_retries;
  const bool first =
      !ever_connected_ && !((stale_master || keep_trying_) && cfg_.reconnect.enabled);
  const bool give_up = first || !cfg_.reconnect.enabled;
  state_ = give_up           ? connection_state::disconnected
           : ever_connected_ ? connection_state::reconnecting
                             : connection_state::connecting;
  const std::uint64_t now_gen = gen_;
  if (ever_connected_) tell_state(ec, last_error_);

  // Written requests: idempotent ones are written again on the next connection; the others
  // learn that their outcome is unknown.
  mux_.on_connection_lost(make_error_code(errc::connection_lost));
  counters_.retried_commands.store(mux_.retried(), std::memory_order_relaxed);
  if (first) {
    // The first attempt failed: connect() reports it; nothing retries behind the caller's back.
    mux_.fail_all(ec);
    finish_connect(ec, last_error_);
    return;
  }
  if (give_up) {
    mux_.fail_all(make_error_code(errc::connection_lost));
    return;
  }
  if (cfg_.fail_fast) mux_.fail_queued(make_error_code(errc::connection_lost));
  if (gen_ == now_gen && state_ != connection_state::closed &&
      state_ != connection_state::disconnected) {
    schedule_reconnect();
  }
}

void connection::move_to(const config::endpoint& to, std::string why) {
  if (state_ == connection_state::closed) return;
  const bool up = state_ == connection_state::connected;
  if (up && to.host == host_ && to.port == port_) return;
  // The next attempt goes there first, whether this connection is up, under way or waiting.
  if (locator_) locator_->prefer(to.host, to.port);
  if (up) lose(gen_, make_error_code(errc::connection_lost), std::move(why));
}

void connection::schedule_reconnect() {
  reconnect_timer_.expires_after(backoff_.next());
  reconnect_timer_.async_wait(
      [this, self = shared_from_this(), gen = gen_](boost::system::error_code ec) {
        if (ec || gen != gen_) return;
        if (state_ != connection_state::reconnecting && state_ != connection_state::connecting)
          return;
        start_attempt();
      });
}

void connection::close(std::error_code reason) {
  if (state_ == connection_state::closed) return;
  const bool tell = ever_connected_ || state_ != connection_state::disconnected;
  // What was queued before the close (a latch DEL, a write scheduled for the end of this turn)
  // still goes out: the first send of a write happens inside the call, before the drop.
  if (state_ == connection_state::connected) start_write();
  state_ = connection_state::closed;
  drop_socket();
  reconnect_timer_.cancel();
  deadline_timer_.cancel();
  if (tell) tell_state(reason, {});
  mux_.fail_all(reason);
  finish_connect(reason, "the client was closed");
}

// --- requests ---------------------------------------------------------------------------------

multiplexer::id_type connection::exec(std::string payload, request_options opts,
                                      reply_handler handler) {
  const bool down = state_ == connection_state::disconnected ||
                    state_ == connection_state::closed ||
                    (cfg_.fail_fast && state_ != connection_state::connected);
  if (down) {
    // Posted: never complete inside the initiating call.
    asio::post(executor_, [h = std::move(handler)]() mutable {
      std::move(h)(make_error_code(errc::connection_lost), resp3::value{});
    });
    return 0;
  }
  const auto deadline = opts.deadline;
  const auto id = mux_.add(std::move(payload), answer_kind::reply, {}, opts, std::move(handler));
  if (state_ == connection_state::connected) schedule_write();
  arm_deadline(deadline);
  return id;
}

bool connection::withdraw(multiplexer::id_type id, std::error_code reason) {
  return id != 0 && mux_.withdraw(id, reason);
}

// Requests made together go out in one write. Those made while the reader handles a batch of
// answers are written when the batch is handled: written at once, the first request of a batch
// went out alone and the rest after it, and over TLS each write is a record the server reads and
// answers in an event-loop turn of its own, so every round split the batches again (S2 over
// TLS: ~2 requests a record, a quarter of the plaintext rate). Those made elsewhere (a watchdog
// round, callers starting operations) are written by a posted handler, after the rest of the
// turn, so a renewal round reaches each node in one write. Bounded: once max_unwritten requests
// wait, they are written at once (bench S6 starts 100 000 waiters in one turn: their first
// attempts, and a write buffer of all of them, used to wait for the posted write together).
void connection::schedule_write() {
  if (write_in_flight_) return;  // its completion writes what is queued
  if (reading_batch_ || write_after_batch_) {
    // In a batch of answers, or after one whose write waits for the records already read.
    write_after_batch_ = true;
    return;
  }
  if (mux_.queued() >= max_unwritten) return start_write();
  if (write_scheduled_) return;
  write_scheduled_ = true;
  asio::post(executor_, [this, self = shared_from_this()] {
    write_scheduled_ = false;
    start_write();
  });
}

void connection::start_write() {
  if (write_in_flight_) return;
  // This write takes everything queued: a write deferred for records already read is done.
  write_after_batch_ = false;
  if (state_ != connection_state::connected && state_ != connection_state::connecting &&
      state_ != connection_state::reconnecting) {
    return;
  }
  // A burst's buffer is not kept for the rest of the connection's life.
  if (writing_.capacity() > kept_write_buffer) {
    std::string().swap(writing_);
  } else {
    writing_.clear();
  }
  // Everything queued since the last write goes out in one write: natural pipelining.
  if (mux_.prepare_write(writing_, state_ == connection_state::connected, clock_type::now()) == 0)
    return;
  counters_.writes.fetch_add(1, std::memory_order_relaxed);
  // Most writes fit the socket's buffer at once: written here, they cost no asynchronous
  // operation and no completion handler (S1: one per command).
  const std::size_t sent = transport_.write_now(asio::buffer(writing_));
  if (sent == writing_.size()) return;
  write_in_flight_ = true;
  transport_.async_write(
      asio::buffer(writing_) + sent,
      [this, self = shared_from_this(), gen = gen_, keep = transport_.keep_alive()](
          boost::system::error_code ec, std::size_t) {
        write_in_flight_ = false;
        if (gen != gen_) {
          // The connection this write was for is gone; the next one may be
          // waiting for this buffer (start_write checks what may go out).
          start_write();
          return;
        }
        if (ec && state_ != connection_state::connected) {
          // Still in the handshake: the read in flight says why the server would not talk (a
          // TLS 1.3 server's alert refusing the client's certificate arrives before the reset
          // this write met). It completes now the socket is broken; connect_timeout bounds it.
          return;
        }
        if (ec) {
          return lose(gen, make_error_code(errc::connection_lost),
                      fmt::format("writing to {}:{} failed: {}", host_, port_, ec.message()));
        }
        start_write();
      });
}

void connection::arm_deadline(clock_type::time_point d) {
  if (d == clock_type::time_point::max() || d >= deadline_armed_at_) return;
  deadline_armed_at_ = d;
  deadline_timer_.expires_at(d);
  deadline_timer_.async_wait([this, self = shared_from_this()](boost::system::error_code ec) {
    if (ec == asio::error::operation_aborted) return;  // re-armed earlier, or closing
    deadline_armed_at_ = clock_type::time_point::max();
    if (state_ == connection_state::closed) return;
    mux_.expire(clock_type::now());
    arm_deadline(mux_.next_deadline());
  });
}

// --- reading ----------------------------------------------------------------------------------

// A callback per read, not a coroutine: a read is every reply's path, and the awaitable's frame
// and resumption cost more than the read's own work (S1: two reads per lock+unlock pair).
void connection::start_read(std::uint64_t gen) {
  transport_.async_read_some(
      asio::buffer(read_buffer_),
      // The stream is held while the read is pending (this connection's, not a later one's).
      [this, self = shared_from_this(), gen, keep = transport_.keep_alive()](
          boost::system::error_code ec, std::size_t n) {
        if (on_read(gen, ec, n)) start_read(gen);
      });
}

bool connection::on_read(std::uint64_t gen, boost::system::error_code ec, std::size_t n) {
  if (gen != gen_) return false;
  if (ec && state_ != connection_state::connected) {
    // Still in the handshake: say why the server would not talk. A TLS 1.3 server refuses a
    // client certificate only after the TLS handshake, on the first read.
    if (auto why = transport_.explain(ec)) {
      lose(gen, make_error_code(why->first), fmt::format("{}:{}: {}", host_, port_, why->second));
      return false;
    }
    if (ec == asio::error::eof || ec == asio::error::connection_reset) {
      if (hello_answered_) {
        // HELLO was answered; what followed was not (SELECT, SCRIPT LOAD): a proxy that
        // passes HELLO but not the rest, or a server that dropped this client.
        lose(gen, make_error_code(errc::handshake_closed),
             fmt::format("{}:{} answered HELLO, then closed the connection before the rest of "
                         "the handshake (SCRIPT LOAD, SELECT) was answered: a proxy that does "
                         "not pass those commands on, or a server that dropped this client",
                         host_, port_));
        return false;
      }
      lose(gen, make_error_code(errc::handshake_closed),
           fmt::format(
               "{}:{} closed the connection before answering HELLO{}", host_, port_,
               transport_.tls() ? "" : " (a TLS port? use rediss:// or config.tls.enabled)"));
      return false;
    }
  }
  if (ec) {
    lose(gen, make_error_code(errc::connection_lost),
         ec == asio::error::eof
             ? fmt::format("{}:{} closed the connection", host_, port_)
             : fmt::format("reading from {}:{} failed: {}", host_, port_, ec.message()));
    return false;
  }
  last_read_ = clock_type::now();
  parser_.feed(std::string_view(read_buffer_.data(), n));
  std::error_code perr;
  batch_guard batch(*this);
  for (;;) {
    auto v = parser_.next(perr);
    if (!v) break;
    // A master demoted to replica answers writes with -READONLY: with a locator, leave it for
    // the new master (the request gets its answer; it changed nothing).
    const bool demoted = locator_ && v->is_error() && v->str.starts_with("READONLY");
    if (mux_.on_value(*v) == multiplexer::verdict::out_of_step) {
      lose(gen, make_error_code(errc::protocol_error),
           "the server sent an answer no request was waiting for");
      return false;
    }
    // A handler may have closed the connection.
    if (gen != gen_) return false;
    if (demoted && state_ == connection_state::connected) {
      lose(gen, make_error_code(errc::connection_lost),
           fmt::format("{}:{} is a replica now (READONLY); asking the sentinels again", host_,
                       port_));
      return false;
    }
  }
  if (perr) {
    lose(gen, perr, "the server sent bytes that are not valid RESP3");
    return false;
  }
  batch.write_now();
  return true;
}

connection::batch_guard::~batch_guard() {
  if (handled_) return;  // write_now decided
  c_.reading_batch_ = false;
  // Left early (the connection was lost or replaced): what the handlers asked for goes out on
  // a later turn, after the loss is handled.
  if (std::exchange(c_.write_after_batch_, false)) {
    asio::post(c_.executor_, [self = c_.shared_from_this()] { self->start_write(); });
  }
}

void connection::batch_guard::write_now() {
  handled_ = true;
  c_.reading_batch_ = false;
  if (!c_.write_after_batch_) return;
  // Over TLS a read hands out one record, and Redis sends one record per event-loop turn: the
  // answers of several server turns may already be here. Written now, this batch's requests go
  // in a record of their own and the server answers them in a turn of its own, so batches never
  // merge again (plaintext merges them in the socket). Taken with the records already read,
  // they share a write: the next read completes without waiting and its batch writes for both.
  if (c_.transport_.input_pending()) {
    // That read is an immediate completion, queued after this handler; two posts from now it
    // has run. Should it wait for the network after all (the record was no answer: a session
    // ticket, a key update), the write goes out then, not when the server next speaks.
    asio::post(c_.executor_, [self = c_.shared_from_this(), gen = c_.gen_] {
      asio::post(self->executor_, [self, gen] {
        if (gen == self->gen_ && self->write_after_batch_ && !self->reading_batch_) {
          self->start_write();
        }
      });
    });
    return;
  }
  c_.start_write();
}

void connection::on_push(resp3::value& v) {
  // ["message", channel, payload] (RESP3 pub/sub); "smessage" for sharded pub/sub.
  if (v.elements.size() < 2) return;
  const auto& kind = v.elements[0].str;
  if (kind == "invalidate") {
    if (!tracking_ || listener_ == nullptr) return;  // left over from a tracking turned off
    const auto inv = read_invalidation(v);
    listener_->on_invalidate(inv.keys, inv.all);
    return;
  }
  if (kind == "sunsubscribe") {
    // The server dropped a sharded channel by itself (its slot moved): the multiplexer found no
    // SUNSUBSCRIBE of ours it answers.
    const std::string channel = v.elements[1].str;
    if (!subs_.on_dropped(channel)) return;
    if (resubscribe_dropped_) {
      subscribe(channel);
    } else if (listener_ != nullptr) {
      listener_->on_dropped(channel);
    }
    return;
  }
  if (v.elements.size() < 3 || listener_ == nullptr) return;
  if (kind == "message" || kind == "smessage") {
    listener_->on_message(v.elements[1].str, v.elements[2].str, mux_.last_answered_write());
  }
}

// --- subscriptions ----------------------------------------------------------------------------

void connection::subscribe(std::string_view channel) {
  if (subs_.want(channel, connected()) == subscription_set::action::subscribe) {
    send_subscription(channel, true);
  }
}

void connection::unsubscribe(std::string_view channel) {
  if (subs_.unwant(channel, connected()) == subscription_set::action::unsubscribe) {
    send_subscription(channel, false);
  }
}

void connection::send_subscription(std::string_view channel, bool on) {
  // Answered by the confirmation push or by an error reply; never retried on its own: after a
  // reconnect the subscription set replays every wanted channel.
  const std::string_view verb =
      sharded_ ? (on ? "SSUBSCRIBE" : "SUNSUBSCRIBE") : (on ? "SUBSCRIBE" : "UNSUBSCRIBE");
  mux_.add(command_bytes({verb, channel}), on ? answer_kind::subscribe : answer_kind::unsubscribe,
           std::string(channel), {},
           [this, on, ch = std::string(channel)](std::error_code ec, resp3::value v) {
             if (ec) return;  // the connection is gone; on_disconnect has reset the channel
             if (!on) return subs_.on_unsubscribed(ch);
             if (v.is_error()) {
               if (subs_.on_refused(ch) && listener_ != nullptr) {
                 listener_->on_refused(ch, make_error_code(errc_of_reply(v.str)), v.str);
               }
             } else if (subs_.on_subscribed(ch) && listener_ != nullptr) {
               listener_->on_subscribed(ch);
             }
           });
  start_write();
}

// --- health check -----------------------------------------------------------------------------

void connection::arm_health() {
  if (cfg_.health_check_interval.count() <= 0 || state_ != connection_state::connected) return;
  // With a PING outstanding, anything read since (a push) also proves the connection alive.
  const auto since = ping_outstanding_ ? std::max(ping_sent_, last_read_) : last_read_;
  const auto at = since + (ping_outstanding_ ? ping_allowance() : cfg_.health_check_interval);
  health_timer_.expires_at(at);
  health_timer_.async_wait(
      [this, self = shared_from_this(), gen = gen_](boost::system::error_code ec) {
        if (ec || gen != gen_) return;
        on_health_tick();
      });
}

std::chrono::milliseconds connection::ping_allowance() const noexcept {
  // A WAIT (config::sync_replicas) ahead of the PING holds its answer back by up to its timeout.
  return cfg_.health_check_interval + (cfg_.sync_replicas.replicas > 0
                                           ? cfg_.sync_replicas.timeout
                                           : std::chrono::milliseconds::zero());
}

void connection::on_health_tick() {
  const auto now = clock_type::now();
  const auto interval = cfg_.health_check_interval;
  const auto allowance = ping_allowance();
  if (ping_outstanding_) {
    if (now - last_read_ >= allowance && now - ping_sent_ >= allowance) {
      ++counters_.health_check_failures;
      return lose(gen_, make_error_code(errc::timeout),
                  fmt::format("no answer to PING from {}:{} within {} ms (health check)", host_,
                              port_, interval.count()));
    }
  } else if (now - last_read_ >= interval) {
    ping_outstanding_ = true;
    ping_sent_ = now;
    mux_.add(command_bytes({"PING"}), answer_kind::reply, {}, {},
             [this, gen = gen_](std::error_code ec, resp3::value) {
               if (!ec && gen == gen_) ping_outstanding_ = false;
             });
    start_write();
  }
  arm_health();
}

}  // namespace rlock::detail
