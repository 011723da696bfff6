#include "lock/lock_state.hpp"

#include "client_impl.hpp"
#include "rlock/error.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <array>
#include <string_view>

namespace rlock::detail {

namespace asio = boost::asio;

std::string unlock_channel(std::string_view key) {
  if (key.find('{') != std::string_view::npos) {
    return fmt::format("redisson_lock__channel:{}", key);
  }
  return fmt::format("redisson_lock__channel:{{{}}}", key);
}

lock_state::lock_state(std::shared_ptr<client_impl> c, std::string_view n, std::uint64_t o,
                       bool in_table)
    : client(std::move(c)),
      key(client->cfg.key_prefix + std::string(n)),
      field(fmt::format("{}:{}", client->uuid, o)),
      owner(o),
      prefix_size(static_cast<std::uint32_t>(client->cfg.key_prefix.size())),
      registered(in_table) {}

lock_state::~lock_state() {
  if (registered) client->forget(*this);
}

void lock_state::on_lease_lost() {
  ++client->counters.lost_locks;
  reset(true);
}

asio::awaitable<std::optional<std::chrono::milliseconds>> lock_state::try_acquire(
    std::chrono::milliseconds lease_ms, bool renew) {
  const std::string lease_arg = std::to_string(lease_ms.count());
  const std::array<std::string_view, 1> keys{key};
  const std::array<std::string_view, 2> args{lease_arg, field};
  ++client->counters.acquire_attempts;
  auto reply = co_await client->scripts.run(script::acquire, keys, args);
  if (reply.type == resp3::type::number) co_return std::chrono::milliseconds(reply.integer);
  if (!reply.is_null()) throw_error(errc::protocol_error, "acquire script: unexpected reply");

  if (local_holds++ == 0) lost = false;
  lease = lease_ms;
  // The watchdog holds the state: a held lock stays renewed even if every handle is gone.
  if (renew) client->dog.add(*this, shared_from_this());
  co_return std::nullopt;
}

asio::awaitable<void> lock_state::release() {
  // Stop renewing before the final release is sent, so a released lock is never renewed.
  if (local_holds <= 1) reset(false);
  const std::string lease_arg =
      std::to_string(lease.count() > 0 ? lease.count() : client->cfg.watchdog_timeout.count());
  const std::string unlock_to = channel();
  const std::array<std::string_view, 2> keys{key, unlock_to};
  const std::array<std::string_view, 3> args{"0", lease_arg, field};
  auto reply = co_await client->scripts.run(script::release, keys, args);
  if (reply.is_null()) {
    reset(false);
    throw_error(errc::not_owner, fmt::format("lock '{}' is not held by {}", name(), field));
  }
  if (reply.type != resp3::type::number) {
    throw_error(errc::protocol_error, "release script: unexpected reply");
  }
  if (reply.integer == 1) {
    reset(false);
  } else if (local_holds > 0) {
    --local_holds;
  }
}

void lock_state::reset(bool was_lost) {
  local_holds = 0;
  lost = was_lost;
  if (lost_signal) lost_signal->cancel();
  client->dog.remove(*this);  // last: it may drop the watchdog's reference to us
}

namespace {

bool cancelled(const asio::cancellation_state& cs) {
  return cs.cancelled() != asio::cancellation_type::none;
}

void validate(std::optional<std::chrono::milliseconds> wait,
              std::optional<std::chrono::milliseconds> lease) {
  if (lease && lease->count() <= 0) {
    throw_error(errc::invalid_argument,
                fmt::format("lease must be positive, got {} ms", lease->count()));
  }
  if (wait && wait->count() < 0) {
    throw_error(errc::invalid_argument,
                fmt::format("wait must not be negative, got {} ms", wait->count()));
  }
}

}  // namespace

asio::awaitable<bool> acquire_op(std::shared_ptr<lock_state> s,
                                 std::optional<std::chrono::milliseconds> wait,
                                 std::optional<std::chrono::milliseconds> lease) {
  // This coroutine runs on its own thread (co_spawn), so these settings stay local to it: we
  // check for cancellation ourselves at the points where we can stop cleanly.
  co_await asio::this_coro::throw_if_cancelled(false);
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  validate(wait, lease);
  using clock = std::chrono::steady_clock;
  client_impl& c = *s->client;
  const auto lease_ms = lease.value_or(c.cfg.watchdog_timeout);
  const auto deadline = wait ? clock::now() + *wait : clock::time_point::max();

  // Undoes an acquisition that completed after the caller cancelled.
  auto give_back = [&]() -> asio::awaitable<void> {
    co_await s->release();
    throw std::system_error(std::make_error_code(std::errc::operation_canceled));
  };

  auto ttl = co_await s->try_acquire(lease_ms, !lease);
  auto cs = co_await asio::this_coro::cancellation_state;
  if (!ttl) {
    if (cancelled(cs)) co_await give_back();
    s->last_wake = wake_reason::immediate;
    co_return true;
  }
  if (wait && *wait == std::chrono::milliseconds::zero()) co_return false;
  if (cancelled(cs)) throw std::system_error(std::make_error_code(std::errc::operation_canceled));

  notify_hub::waiter w(c.executor);
  c.hub.add(s->channel(), w);
  struct unlink {
    notify_hub& hub;
    notify_hub::waiter& w;
    ~unlink() { hub.remove(w); }
  } guard{c.hub, w};

  for (;;) {
    // A cancellation that arrived while a (shielded) retry was in flight must end the wait now,
    // not after the sleep below: the emit found no cancellable operation to interrupt.
    if (cancelled(cs)) throw std::system_error(std::make_error_code(std::errc::operation_canceled));
    if (!w.woken && !w.failed) {
      // Sleep until woken (unlock message, subscription confirmed) or until the holder's lease
      // runs out: key expiry publishes nothing, so the TTL is the fallback, never a poll.
      const auto sleep = ttl->count() >= 0 ? *ttl : c.cfg.watchdog_timeout;
      const auto now = clock::now();
      if (now >= deadline) co_return false;
      w.timer.expires_at(deadline - now > sleep ? now + sleep : deadline);
      co_await w.timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    if (w.failed) throw std::system_error(w.failed);
    if (cancelled(cs)) throw std::system_error(std::make_error_code(std::errc::operation_canceled));
    const auto reason = !w.woken       ? wake_reason::expiry
                        : w.by_message ? wake_reason::notification
                                       : wake_reason::immediate;
    if (reason == wake_reason::expiry) ++c.counters.expiry_wakeups;
    if (reason == wake_reason::notification) ++c.counters.notified_wakeups;
    w.woken = false;
    ttl = co_await s->try_acquire(lease_ms, !lease);
    if (!ttl) {
      if (cancelled(cs)) co_await give_back();
      s->last_wake = reason;
      co_return true;
    }
    if (clock::now() >= deadline) co_return false;
  }
}

asio::awaitable<void> acquire_void_op(std::shared_ptr<lock_state> s,
                                      std::optional<std::chrono::milliseconds> lease) {
  (void)co_await acquire_op(std::move(s), std::nullopt, lease);
}

asio::awaitable<void> release_op(std::shared_ptr<lock_state> s) {
  co_await asio::this_coro::throw_if_cancelled(false);
  co_await s->release();
}

asio::awaitable<void> lost_op(std::shared_ptr<lock_state> s) {
  co_await asio::this_coro::throw_if_cancelled(false);
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  if (s->lost) co_return;
  if (!s->renewing()) {
    throw_error(errc::not_owner, fmt::format("lock '{}' is not held through the watchdog by {}",
                                             s->name(), s->field));
  }
  if (!s->lost_signal) {
    s->lost_signal = std::make_unique<asio::steady_timer>(s->client->executor,
                                                          asio::steady_timer::time_point::max());
  }
  co_await s->lost_signal->async_wait(asio::as_tuple(asio::use_awaitable));
  if (!s->lost) throw std::system_error(std::make_error_code(std::errc::operation_canceled));
}

const asio::any_io_executor& executor_of(const lock_state& s) noexcept {
  return s.client->executor;
}

}  // namespace rlock::detail
