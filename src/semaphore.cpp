// The semaphores: acquisitions are holds run by the lock engine (semaphore_kind: an owner per
// acquisition, its permits, a lease the watchdog renews); the operations nobody owns are single
// round trips of the semaphore_admin script.
#include "rlock/semaphore.hpp"

#include "engine/engine_context.hpp"
#include "lock/lock_forms.hpp"
#include "lock/lock_kind.hpp"
#include "lock/lock_state.hpp"
#include "lock/names.hpp"
#include "lock/permit_id.hpp"
#include "rlock/error.hpp"

#include <fmt/format.h>

#include <limits>

namespace rlock {

namespace asio = boost::asio;

namespace {

void check_count(std::uint64_t n, std::string_view what) {
  if (n == 0 || n > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())) {
    throw_error(errc::invalid_argument,
                fmt::format("semaphore: {} of {} permits (1 to 2^31 - 1)", what, n));
  }
}

}  // namespace

std::uint32_t permit::count() const noexcept { return state_of(*this)->permits; }

std::string permit::id() const { return state_of(*this)->shown_field(); }

std::string_view semaphore::name() const noexcept { return state_->name(); }
std::string_view semaphore::key() const noexcept { return state_->key(); }
semaphore::executor_type semaphore::get_executor() const noexcept { return state_->ctx->executor; }

asio::awaitable<permit> semaphore::acquire(std::uint32_t permits,
                                           std::optional<milliseconds> lease) {
  return [](std::shared_ptr<detail::lock_state> s, std::uint32_t n,
            std::optional<milliseconds> l) -> asio::awaitable<permit> {
    co_return *co_await take(std::move(s), n, std::nullopt, l);
  }(state_, permits, lease);
}

asio::awaitable<std::optional<permit>> semaphore::try_acquire(std::uint32_t permits,
                                                              milliseconds wait,
                                                              std::optional<milliseconds> lease) {
  return take(state_, permits, wait, lease);
}

asio::awaitable<std::optional<permit>> semaphore::take(std::shared_ptr<detail::lock_state> s,
                                                       std::uint32_t permits,
                                                       std::optional<milliseconds> wait,
                                                       std::optional<milliseconds> lease) {
  check_count(permits, "an acquisition");
  // A hold is an owner of its own: the engine reconciles, gives back and renews it as a lock.
  auto held = detail::owner_table::new_owner(s->ctx, s->name(), detail::semaphore_kind);
  held->permits = permits;
  permit p(std::move(held));
  if (!wait) {
    co_await detail::awaitable_of<>(p, [lease](const lock_handle& l, detail::handler<> h) {
      lock_handle::start_acquire(l, lease, std::move(h));
    });
    co_return p;
  }
  const bool got = co_await detail::awaitable_of<bool>(
      p, [w = *wait, lease](const lock_handle& l, detail::handler<bool> h) {
        lock_handle::start_try_acquire(l, w, lease, std::move(h));
      });
  if (!got) co_return std::nullopt;
  co_return p;
}

asio::awaitable<std::int64_t> semaphore::admin(std::shared_ptr<detail::lock_state> s,
                                               std::string what, std::int64_t n) {
  auto& c = *s->ctx;
  // A request id names a release (the latch keeps its answer for a retry); the others ignore it.
  std::string latch;
  detail::append_unlock_latch(s->key(), latch);
  c.append_request_id(latch);
  const std::string count = std::to_string(n);
  detail::release_script_call call;
  detail::semaphore_admin_call(s->identity(), what, count, c.session.publish_command(), latch,
                               c.latch_ttl_arg.view(), call);
  // Named, not a temporary inside co_await (g++ 12: see with_lock.hpp).
  auto answer = detail::run_script(s, call, fmt::format("semaphore '{}': {}", s->name(), what));
  co_return detail::as_integer(co_await std::move(answer));
}

asio::awaitable<void> semaphore::release(std::uint32_t permits) {
  return [](std::shared_ptr<detail::lock_state> s, std::uint32_t n) -> asio::awaitable<void> {
    check_count(n, "a release");
    (void)co_await admin(std::move(s), "release", n);
  }(state_, permits);
}

asio::awaitable<std::int64_t> semaphore::available() { return admin(state_, "available", 0); }

asio::awaitable<bool> semaphore::try_set_permits(std::uint32_t permits) {
  return [](std::shared_ptr<detail::lock_state> s, std::uint32_t n) -> asio::awaitable<bool> {
    co_return co_await admin(std::move(s), "set", n) == 1;
  }(state_, permits);
}

asio::awaitable<std::int64_t> semaphore::add_permits(std::int64_t delta) {
  return admin(state_, "add", delta);
}

asio::awaitable<std::int64_t> semaphore::drain() { return admin(state_, "drain", 0); }

asio::awaitable<bool> semaphore::release_id(std::shared_ptr<detail::lock_state> s, std::string id) {
  auto raw = detail::permit_id_from_hex(id);
  if (!raw) {
    throw_error(errc::invalid_argument,
                fmt::format("semaphore '{}': permit id '{}' is not 32 hex digits (the form "
                            "permit::id() and Redisson's RPermitExpirableSemaphore give)",
                            s->name(), id.substr(0, 64)));
  }
  std::string channel;
  detail::append_semaphore_channel(s->key(), channel);
  detail::release_script_call call;
  s->kind.force_call({s->key(), *raw, 1}, channel, s->ctx->session.publish_command(), call);
  auto answer = detail::run_script(s, call, fmt::format("semaphore '{}': release", s->name()));
  co_return detail::as_integer(co_await std::move(answer)) == 1;
}

asio::awaitable<bool> permit_expirable_semaphore::release(std::string_view permit_id) {
  return semaphore::release_id(semaphore_.state_, std::string(permit_id));
}

}  // namespace rlock
