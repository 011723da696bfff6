#include "rlock/reentrant_lock.hpp"

#include "client_impl.hpp"
#include "lock/lock_state.hpp"
#include "resp3/request.hpp"
#include "rlock/error.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <charconv>

namespace rlock {

namespace asio = boost::asio;
using std::chrono::milliseconds;

namespace {

/// The options of a single round trip: idempotent (written again after a reconnect), bounded by
/// config::command_timeout.
detail::request_options round_trip(const detail::lock_state& s) {
  detail::request_options opts;
  opts.unknown = detail::if_unknown::retry;
  opts.deadline = std::chrono::steady_clock::now() + s.client->cfg.command_timeout;
  return opts;
}

/// One query command on the lock key's connection; error replies become server_error.
asio::awaitable<detail::resp3::value> query(std::shared_ptr<detail::lock_state> s,
                                            std::string_view command, bool with_field) {
  std::string cmd;
  if (with_field) {
    detail::resp3::append_command(cmd, {command, s->key, s->field});
  } else {
    detail::resp3::append_command(cmd, {command, s->key});
  }
  auto [ec, reply] = co_await asio::async_initiate<const asio::use_awaitable_t<>&,
                                                   void(std::error_code, detail::resp3::value)>(
      [&](auto handler) {
        s->client->session.exec(s->key, std::move(cmd), round_trip(*s), std::move(handler));
      },
      asio::use_awaitable);
  if (ec || reply.is_error())
    std::rethrow_exception(detail::failure_of(*s->client, ec, reply, command));
  co_return reply;
}

std::int64_t as_integer(const detail::resp3::value& v) {
  if (v.type == detail::resp3::type::number) return v.integer;
  if (v.is_null()) return 0;
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(v.str.data(), v.str.data() + v.str.size(), n);
  if (ec != std::errc{} || end != v.str.data() + v.str.size()) {
    throw_error(errc::protocol_error, "expected an integer reply");
  }
  return n;
}

}  // namespace

const std::shared_ptr<detail::lock_state>& detail::state_of(const reentrant_lock& l) noexcept {
  return l.state_;
}

reentrant_lock::reentrant_lock(std::shared_ptr<detail::lock_state> state)
    : state_(std::move(state)) {}

std::string_view reentrant_lock::name() const noexcept { return state_->name(); }
const std::string& reentrant_lock::key() const noexcept { return state_->key; }
std::uint64_t reentrant_lock::owner_id() const noexcept { return state_->owner; }
wake_reason reentrant_lock::last_wake() const noexcept {
  return state_->last_wake.load(std::memory_order_relaxed);
}
const std::string& reentrant_lock::owner_field() const noexcept { return state_->field; }
std::string reentrant_lock::last_error() const { return state_->last_error(); }

template <typename T>
asio::awaitable<T> reentrant_lock::spawn(asio::awaitable<T> op) {
  // co_spawn onto the client's executor; use_awaitable rethrows the operation's own exception,
  // so Redis's error text survives, and forwards the caller's cancellation slot.
  return asio::co_spawn(get_executor(), std::move(op), asio::use_awaitable);
}

namespace {

/// The awaitable forms of acquire and release: the caller's coroutine awaits the callback
/// operation directly, with no co_spawned coroutine in between.
asio::awaitable<bool> acquire(std::shared_ptr<detail::lock_state> s,
                              std::optional<milliseconds> wait, std::optional<milliseconds> lease) {
  return asio::async_initiate<const asio::use_awaitable_t<>&, void(std::exception_ptr, bool)>(
      [](auto handler, std::shared_ptr<detail::lock_state> st, std::optional<milliseconds> w,
         std::optional<milliseconds> l) {
        detail::async_acquire(std::move(st), w, l, std::move(handler));
      },
      asio::use_awaitable, std::move(s), wait, lease);
}

asio::awaitable<void> lock_until_acquired(std::shared_ptr<detail::lock_state> s,
                                          std::optional<milliseconds> lease) {
  return asio::async_initiate<const asio::use_awaitable_t<>&, void(std::exception_ptr)>(
      [](auto handler, std::shared_ptr<detail::lock_state> st, std::optional<milliseconds> l) {
        detail::async_lock(std::move(st), l, std::move(handler));
      },
      asio::use_awaitable, std::move(s), lease);
}

}  // namespace

asio::awaitable<void> reentrant_lock::lock() { return lock_until_acquired(state_, std::nullopt); }

asio::awaitable<void> reentrant_lock::lock(milliseconds lease) {
  return lock_until_acquired(state_, lease);
}

asio::awaitable<bool> reentrant_lock::try_lock() {
  return acquire(state_, milliseconds::zero(), std::nullopt);
}

asio::awaitable<bool> reentrant_lock::try_lock(milliseconds wait) {
  return acquire(state_, wait, std::nullopt);
}

asio::awaitable<bool> reentrant_lock::try_lock(milliseconds wait, milliseconds lease) {
  return acquire(state_, wait, lease);
}

asio::awaitable<void> reentrant_lock::unlock() {
  return asio::async_initiate<const asio::use_awaitable_t<>&, void(std::exception_ptr)>(
      [](auto handler, std::shared_ptr<detail::lock_state> s) {
        detail::async_release(std::move(s), std::move(handler));
      },
      asio::use_awaitable, state_);
}

asio::awaitable<void> reentrant_lock::lost() { return spawn(detail::lost_op(state_)); }

asio::awaitable<bool> reentrant_lock::force_unlock() {
  return spawn([](std::shared_ptr<detail::lock_state> s) -> asio::awaitable<bool> {
    co_await asio::this_coro::throw_if_cancelled(false);
    const std::string unlock_to = s->channel();
    const std::array<std::string_view, 2> keys{s->key, unlock_to};
    const std::array<std::string_view, 1> args{"0"};
    if (s->local_holds > 0) s->reset(false);
    auto [ec, reply] = co_await asio::async_initiate<const asio::use_awaitable_t<>&,
                                                     void(std::error_code, detail::resp3::value)>(
        [&](auto handler) {
          s->client->scripts.async_run(detail::script::force_unlock, keys, args, round_trip(*s),
                                       std::move(handler));
        },
        asio::use_awaitable);
    if (ec) std::rethrow_exception(detail::failure_of(*s->client, ec, reply, "force_unlock"));
    s->server_holds = 0;  // deleted, or was not there
    co_return as_integer(reply) == 1;
  }(state_));
}

asio::awaitable<bool> reentrant_lock::is_locked() {
  return spawn([](std::shared_ptr<detail::lock_state> s) -> asio::awaitable<bool> {
    co_return as_integer(co_await query(s, "EXISTS", false)) == 1;
  }(state_));
}

asio::awaitable<bool> reentrant_lock::is_held() {
  return spawn([](std::shared_ptr<detail::lock_state> s) -> asio::awaitable<bool> {
    co_return as_integer(co_await query(s, "HEXISTS", true)) == 1;
  }(state_));
}

asio::awaitable<std::int64_t> reentrant_lock::hold_count() {
  return spawn([](std::shared_ptr<detail::lock_state> s) -> asio::awaitable<std::int64_t> {
    co_return as_integer(co_await query(s, "HGET", true));
  }(state_));
}

asio::awaitable<milliseconds> reentrant_lock::remaining_ttl() {
  return spawn([](std::shared_ptr<detail::lock_state> s) -> asio::awaitable<milliseconds> {
    co_return milliseconds(as_integer(co_await query(s, "PTTL", false)));
  }(state_));
}

}  // namespace rlock
