// The two hot operations, acquire and release, as plain asynchronous operations: one heap object
// each, driven by the completions of its script round trips and of its waiter's timer. No
// coroutine frame, co_spawn or awaitable thread per operation: S1 (instructions per lock+unlock)
// and S6 (bytes per sleeping waiter) are dominated by exactly those.

#include "client_impl.hpp"
#include "lock/lock_state.hpp"
#include "notify/notify_hub.hpp"
#include "rlock/error.hpp"
#include "rlock/reentrant_lock.hpp"

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <iterator>
#include <system_error>

namespace rlock::detail {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

namespace {

std::exception_ptr cancelled_error() {
  return std::make_exception_ptr(
      std::system_error(std::make_error_code(std::errc::operation_canceled)));
}

std::exception_ptr protocol_error(const char* what) {
  return std::make_exception_ptr(std::system_error(make_error_code(errc::protocol_error), what));
}

void validate(std::optional<milliseconds> wait, std::optional<milliseconds> lease) {
  if (lease && lease->count() <= 0) {
    throw_error(errc::invalid_argument,
                fmt::format("lease must be positive, got {} ms", lease->count()));
  }
  if (wait && wait->count() < 0) {
    throw_error(errc::invalid_argument,
                fmt::format("wait must not be negative, got {} ms", wait->count()));
  }
}

/// A millisecond count as a script argument, stored in the operation: no allocation per command.
class decimal {
 public:
  void assign(std::int64_t v) noexcept {
    const auto [end, ec] = std::to_chars(std::begin(digits_), std::end(digits_), v);
    static_cast<void>(ec);  // cannot fail: the buffer fits every int64
    size_ = static_cast<std::size_t>(end - digits_);
  }
  std::string_view view() const noexcept { return {digits_, size_}; }

 private:
  char digits_[24];
  std::size_t size_ = 0;
};

/// Ends `op`: destroys it (unlinking its waiter, which may pass a wake-up on or unsubscribe)
/// and then runs `h`, taken out of it, on the handler's executor. `inside_initiation` posts
/// instead of dispatching, so a handler never runs inside the call that started the operation.
template <typename Op, typename Handler, typename... Result>
void complete(std::unique_ptr<Op> op, Handler h, bool inside_initiation, std::exception_ptr e,
              Result... result) {
  const asio::any_io_executor client_ex = op->s->client->executor;
  op.reset();
  auto ex = asio::get_associated_executor(h, client_ex);
  auto run = [h = std::move(h), e = std::move(e), result...]() mutable {
    std::move(h)(std::move(e), result...);
  };
  if (inside_initiation) {
    // Through the client's executor first: the handler's may be this very thread's.
    asio::post(client_ex,
               [ex, run = std::move(run)]() mutable { asio::dispatch(ex, std::move(run)); });
  } else {
    asio::dispatch(ex, std::move(run));
  }
}

// --- release ----------------------------------------------------------------------------------

struct release_operation {
  release_operation(std::shared_ptr<lock_state> st, void_handler h)
      : s(std::move(st)), handler(std::move(h)) {}

  static void start(std::unique_ptr<release_operation> op) {
    lock_state& s = *op->s;
    s.before_release();
    const auto lease = s.lease.count() > 0 ? s.lease : s.client->cfg.watchdog_timeout;
    op->lease_arg.assign(lease.count());
    op->channel = s.channel();
    op->keys = {s.key, op->channel};
    op->args = {"0", op->lease_arg.view(), s.field};
    auto* p = op.get();
    s.client->scripts.async_run(
        script::release, p->keys, p->args,
        [op = std::move(op)](std::exception_ptr e, resp3::value reply) mutable {
          if (!e) {
            try {
              op->s->on_released(reply);
            } catch (...) {
              e = std::current_exception();
            }
          }
          auto h = std::move(op->handler);
          complete(std::move(op), std::move(h), false, std::move(e));
        });
  }

  std::shared_ptr<lock_state> s;
  void_handler handler;
  std::string channel;
  decimal lease_arg;
  std::array<std::string_view, 2> keys;
  std::array<std::string_view, 3> args;
};

// --- acquire ----------------------------------------------------------------------------------

/// One acquisition: attempt; if busy, join the lock's channel in the notify hub and sleep on the
/// waiter's timer until woken (unlock message, subscription confirmed) or until the holder's
/// lease runs out (key expiry publishes nothing, so the TTL is the fallback, never a poll); then
/// attempt again. The operation is owned by whichever completion it waits for.
struct acquire_operation {
  using owner = std::unique_ptr<acquire_operation>;

  // The handlers are constructed in place, never move-assigned: Boost 1.81's
  // any_completion_handler move assignment recurses into its converting constructor.
  acquire_operation(std::shared_ptr<lock_state> st, std::optional<milliseconds> w,
                    std::optional<milliseconds> l, bool_handler r, void_handler d)
      : s(std::move(st)), wait(w), lease(l), report(std::move(r)), done(std::move(d)) {}

  ~acquire_operation() {
    if (slot.is_connected()) slot.clear();
    if (waiter) s->client->hub.remove(*waiter);
  }

  static void start(owner op) {
    client_impl& c = *op->s->client;
    op->slot = op->report ? asio::get_associated_cancellation_slot(op->report)
                          : asio::get_associated_cancellation_slot(op->done);
    if (op->slot.is_connected()) {
      // Every cancellation type is honoured: each leaves no lock, waiter or subscription.
      op->slot.assign([p = op.get()](asio::cancellation_type type) {
        if (type == asio::cancellation_type::none) return;
        p->cancelled = true;
        if (p->sleeping) p->waiter->timer.cancel();
      });
    }
    op->lease_ms = op->lease.value_or(c.cfg.watchdog_timeout);
    op->lease_arg.assign(op->lease_ms.count());
    op->keys = {op->s->key};
    op->args = {op->lease_arg.view(), op->s->field};
    op->deadline = op->wait ? clock_type::now() + *op->wait : clock_type::time_point::max();
    attempt(std::move(op));
  }

  static void attempt(owner op) {
    client_impl& c = *op->s->client;
    ++c.counters.acquire_attempts;
    auto* p = op.get();
    c.scripts.async_run(script::acquire, p->keys, p->args,
                        [op = std::move(op)](std::exception_ptr e, resp3::value reply) mutable {
                          on_attempt(std::move(op), std::move(e), reply);
                        });
  }

  static void on_attempt(owner op, std::exception_ptr e, const resp3::value& reply) {
    if (e) return finish(std::move(op), false, std::move(e), false);
    if (reply.type == resp3::type::number) {
      op->ttl = milliseconds(reply.integer);
      return on_busy(std::move(op));
    }
    if (!reply.is_null()) {
      return finish(std::move(op), false, protocol_error("acquire script: unexpected reply"),
                    false);
    }
    op->s->on_acquired(op->lease_ms, !op->lease);
    if (op->cancelled) return give_back(std::move(op));
    op->s->last_wake = op->reason;
    finish(std::move(op), false, nullptr, true);
  }

  static void on_busy(owner op) {
    if (op->wait && *op->wait == milliseconds::zero()) {
      return finish(std::move(op), false, nullptr, false);
    }
    if (!op->waiter) {
      if (op->cancelled) return finish(std::move(op), false, cancelled_error(), false);
      client_impl& c = *op->s->client;
      op->waiter.emplace(c.executor);
      c.hub.add(op->s->channel(), *op->waiter);
    } else if (clock_type::now() >= op->deadline) {
      return finish(std::move(op), false, nullptr, false);
    }
    sleep(std::move(op));
  }

  static void sleep(owner op) {
    // A cancellation that arrived while a retry was in flight ends the wait now: the slot
    // handler found no timer to interrupt.
    if (op->cancelled) return finish(std::move(op), false, cancelled_error(), false);
    notify_hub::waiter& w = *op->waiter;
    if (w.woken || w.failed) return wake(std::move(op));
    const auto nap = op->ttl.count() >= 0 ? op->ttl : op->s->client->cfg.watchdog_timeout;
    const auto now = clock_type::now();
    if (now >= op->deadline) return finish(std::move(op), false, nullptr, false);
    w.timer.expires_at(op->deadline - now > nap ? now + nap : op->deadline);
    op->sleeping = true;
    w.timer.async_wait([op = std::move(op)](boost::system::error_code) mutable {
      op->sleeping = false;
      wake(std::move(op));
    });
  }

  static void wake(owner op) {
    notify_hub::waiter& w = *op->waiter;
    if (w.failed) {
      auto e = std::make_exception_ptr(std::system_error(w.failed));
      return finish(std::move(op), false, std::move(e), false);
    }
    if (op->cancelled) return finish(std::move(op), false, cancelled_error(), false);
    client_impl& c = *op->s->client;
    op->reason = !w.woken       ? wake_reason::expiry
                 : w.by_message ? wake_reason::notification
                                : wake_reason::immediate;
    if (op->reason == wake_reason::expiry) ++c.counters.expiry_wakeups;
    if (op->reason == wake_reason::notification) ++c.counters.notified_wakeups;
    w.woken = false;
    attempt(std::move(op));
  }

  static void finish(owner op, bool inside_initiation, std::exception_ptr e, bool acquired) {
    if (op->slot.is_connected()) op->slot.clear();
    if (op->report) {
      auto h = std::move(op->report);
      complete(std::move(op), std::move(h), inside_initiation, std::move(e), acquired);
    } else {
      auto h = std::move(op->done);
      complete(std::move(op), std::move(h), inside_initiation, std::move(e));
    }
  }

  /// Undoes an acquisition that completed after the caller cancelled.
  static void give_back(owner op) {
    auto s = op->s;
    async_release(std::move(s), [op = std::move(op)](std::exception_ptr e) mutable {
      finish(std::move(op), false, e ? std::move(e) : cancelled_error(), false);
    });
  }

  std::shared_ptr<lock_state> s;
  std::optional<milliseconds> wait;
  std::optional<milliseconds> lease;
  // One of the two is set: lock() has no result to report.
  bool_handler report;
  void_handler done;
  asio::cancellation_slot slot;
  clock_type::time_point deadline;
  milliseconds lease_ms{0};
  milliseconds ttl{0};  // the holder's PTTL from the latest failed attempt
  decimal lease_arg;
  std::array<std::string_view, 1> keys;
  std::array<std::string_view, 2> args;
  std::optional<notify_hub::waiter> waiter;  // from the first failed attempt on
  wake_reason reason = wake_reason::immediate;
  bool cancelled = false;
  bool sleeping = false;  // owned by the waiter's timer: a cancellation must cancel it
};

}  // namespace

namespace {

void start_acquire(std::unique_ptr<acquire_operation> op) {
  try {
    validate(op->wait, op->lease);
  } catch (...) {
    return acquire_operation::finish(std::move(op), true, std::current_exception(), false);
  }
  const auto ex = op->s->client->executor;
  asio::dispatch(ex, [op = std::move(op)]() mutable { acquire_operation::start(std::move(op)); });
}

}  // namespace

void async_acquire(std::shared_ptr<lock_state> s, std::optional<milliseconds> wait,
                   std::optional<milliseconds> lease, bool_handler handler) {
  auto op = std::make_unique<acquire_operation>(std::move(s), wait, lease, std::move(handler),
                                                void_handler{});
  start_acquire(std::move(op));
}

void async_lock(std::shared_ptr<lock_state> s, std::optional<milliseconds> lease,
                void_handler handler) {
  auto op = std::make_unique<acquire_operation>(std::move(s), std::nullopt, lease, bool_handler{},
                                                std::move(handler));
  start_acquire(std::move(op));
}

void async_release(std::shared_ptr<lock_state> s, void_handler handler) {
  auto op = std::make_unique<release_operation>(std::move(s), std::move(handler));
  const auto ex = op->s->client->executor;
  asio::dispatch(ex, [op = std::move(op)]() mutable { release_operation::start(std::move(op)); });
}

}  // namespace rlock::detail
