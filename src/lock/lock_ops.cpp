// The two hot operations, acquire and release, as plain asynchronous operations: one heap object
// each, driven by the completions of its script round trips and of its waiter's timer. No
// coroutine frame, co_spawn or awaitable thread per operation: S1 (instructions per lock+unlock)
// and S6 (bytes per sleeping waiter) are dominated by exactly those.
//
// What each request means when its answer never comes (../README "Faults"):
// - acquire: not idempotent (HINCRBY). Written and unanswered when the connection dies, it is
//   reconciled: `HGET key field` against the count the server had at that point (as the answers
//   before it tell) says whether it ran. An answer that comes after the caller was told
//   (timeout, cancellation) is still processed, and an acquisition it made is given back.
// - release: made idempotent by Redisson's unlock latch (one request id per unlock, reused by
//   every retry): written again on the next connection.
// The caller and the protocol state are separate: an operation can complete its caller (its
// bound passed, or it was cancelled) and stay alive, owned by its request, until Redis's answer
// settles what happened on the server.

#include "lock/lock_ops.hpp"

#include "client_impl.hpp"
#include "lock/lock_state.hpp"
#include "lock/names.hpp"
#include "notify/notify_hub.hpp"
#include "resp3/request.hpp"
#include "rlock/error.hpp"
#include "rlock/reentrant_lock.hpp"

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <charconv>
#include <iterator>
#include <optional>
#include <span>
#include <system_error>

namespace rlock::detail {

namespace asio = boost::asio;
using std::chrono::milliseconds;

namespace {

std::exception_ptr cancelled_error() {
  return std::make_exception_ptr(
      std::system_error(std::make_error_code(std::errc::operation_canceled)));
}

std::exception_ptr error_with(errc e, const std::string& what) {
  return std::make_exception_ptr(std::system_error(make_error_code(e), what));
}

/// Why the arguments are invalid, or nothing.
std::exception_ptr validate(std::optional<milliseconds> wait, std::optional<milliseconds> lease) {
  if (lease && lease->count() <= 0) {
    return error_with(errc::invalid_argument,
                      fmt::format("lease must be positive, got {} ms", lease->count()));
  }
  if (wait && wait->count() < 0) {
    return error_with(errc::invalid_argument,
                      fmt::format("wait must not be negative, got {} ms", wait->count()));
  }
  return nullptr;
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

/// Runs `h` with the completion on the handler's executor, after clearing the handler's
/// cancellation slot there: the slot belongs to the caller's executor, which is also where a
/// cancellation is emitted, so the two never race. `inside_initiation` posts instead of
/// dispatching, so a handler never runs inside the call that started the operation.
template <typename Handler, typename... Result>
void deliver(const asio::any_io_executor& client_ex, Handler h, asio::cancellation_slot slot,
             bool inside_initiation, std::exception_ptr e, Result... result) {
  auto ex = asio::get_associated_executor(h, client_ex);
  auto run = [h = std::move(h), slot, e = std::move(e), result...]() mutable {
    if (slot.is_connected()) slot.clear();
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

/// Shared by an operation and the cancellation handler installed in its caller's slot. The slot
/// handler runs on whatever thread emits the cancellation: it only records the request and posts
/// it to the client's executor, where the operation (if it still exists) acts on it.
template <typename Op>
struct cancel_link {
  std::atomic<bool> requested{false};
  Op* op = nullptr;  // touched on the client's executor only
};

template <typename Op>
void install_cancellation(asio::cancellation_slot& slot,
                          const std::shared_ptr<cancel_link<Op>>& link,
                          const asio::any_io_executor& client_ex) {
  if (!slot.is_connected()) return;
  // Installed in the initiating call, on the caller's side: a cancellation emitted before the
  // operation has started on the client's executor is recorded, not lost.
  slot.assign([link, client_ex](asio::cancellation_type type) {
    if (type == asio::cancellation_type::none) return;
    if (link->requested.exchange(true)) return;
    asio::post(client_ex, [link] {
      if (link->op != nullptr) link->op->on_cancel();
    });
  });
}

// --- release ----------------------------------------------------------------------------------

struct release_operation {
  using owner = std::unique_ptr<release_operation>;

  release_operation(std::shared_ptr<lock_state> st, void_handler h)
      : s(std::move(st)), handler(std::move(h)) {}

  static void start(owner op) {
    lock_state& s = *op->s;
    client_impl& c = *s.client;
    op->undo = s.before_release();
    const auto lease = s.lease.count() > 0 ? s.lease : c.cfg.watchdog_timeout;
    op->lease_arg.assign(lease.count());
    // A retry may come until the operation's bound and one reconnect later.
    op->latch_ttl_arg.assign(std::max<std::int64_t>(1, 2 * c.cfg.command_timeout.count()));
    op->channel = s.channel();
    op->latch = unlock_latch(s.key, c.next_request_id());
    op->keys = {s.key, op->channel, op->latch};
    op->args = {"0", op->lease_arg.view(), s.field, c.session.publish_command(),
                op->latch_ttl_arg.view()};
    request_options opts;  // a release: retried (the latch makes a retry return the first answer)
    opts.deadline = clock_type::now() + c.cfg.command_timeout;
    opts.on_deadline = &release_operation::on_deadline;
    opts.context = op.get();
    opts.written_at = &op->written;
    auto* p = op.get();
    c.scripts.async_run(script::release, p->keys, p->args, opts,
                        [op = std::move(op)](std::error_code ec, resp3::value reply) mutable {
                          on_reply(std::move(op), ec, reply);
                        });
  }

  /// The bound passed with the release written and unanswered: the caller learns that its
  /// outcome is unknown; the answer, when it comes, still updates the owner's state.
  static void on_deadline(void* context) {
    auto* op = static_cast<release_operation*>(context);
    op->tell(error_with(errc::timeout,
                        fmt::format("unlock of '{}': no answer within {} ms; the release may "
                                    "still happen",
                                    op->s->name(), op->s->client->cfg.command_timeout.count())),
             true);
  }

  static void on_reply(owner op, std::error_code ec, const resp3::value& reply) {
    client_impl& c = *op->s->client;
    if (ec == errc::replicas_not_synced) {
      // Released on the master: that is what unlock means. A failover before a replica has it
      // would bring the hold back until its lease ends, which delays the next owner and
      // endangers nobody: logged, not failed.
      c.log(log_level::warning,
            "unlock of '{}' (owner {}): released, but fewer than {} replica(s) acknowledged it "
            "within {} ms (sync_replicas)",
            op->s->name(), c.short_owner(op->s->owner), c.cfg.sync_replicas.replicas,
            c.cfg.sync_replicas.timeout.count());
      ec = {};
    }
    if (!ec) {
      auto outcome = op->s->on_released(reply, op->written);
      // Bookkeeping before the caller runs (it may resume inline): the answer is in, so the
      // latch has done its work; holds nobody has go back before anything the caller does next.
      c.latches.add(std::move(op->latch));
      if (outcome.orphaned) give_back_orphans(op->s);
      op->tell(std::move(outcome.error));
      return;
    }
    if (op->written == clock_type::time_point{}) op->s->release_not_sent(op->undo);
    op->tell(failure_of(c, ec, reply, fmt::format("unlock of '{}'", op->s->name())));
  }

  /// Releases holds the server counts for this owner that no caller has, one per round trip
  /// (each release takes one); bounded, in case something else keeps adding them.
  static void give_back_orphans(const std::shared_ptr<lock_state>& s) {
    if (++s->orphan_releases > max_orphan_releases) return;
    ++s->client->counters.given_back;
    async_release(s, [](std::exception_ptr) {});
  }
  static constexpr std::uint32_t max_orphan_releases = 16;

  /// Tells the caller (once). Posted when called from the deadline hook, which runs inside the
  /// session's bookkeeping.
  void tell(std::exception_ptr e, bool from_hook = false) {
    if (!handler) return;
    s->set_last_error(e);
    void_handler h(std::move(handler));
    // unlock() ignores cancellation: no slot handler was installed, none is cleared.
    deliver(s->client->executor, std::move(h), asio::cancellation_slot(), from_hook, std::move(e));
  }

  std::shared_ptr<lock_state> s;
  void_handler handler;
  std::string channel;
  std::string latch;
  decimal lease_arg;
  decimal latch_ttl_arg;
  std::array<std::string_view, 3> keys;
  std::array<std::string_view, 5> args;
  clock_type::time_point written{};
  lock_state::release_undo undo;
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
                    std::optional<milliseconds> l, bool_handler r, void_handler d,
                    token_handler t = {})
      : s(std::move(st)),
        wait(w),
        lease(l),
        report(std::move(r)),
        done(std::move(d)),
        report_token(std::move(t)) {}

  ~acquire_operation() {
    if (link) link->op = nullptr;
    if (waiter) s->client->hub.remove(*waiter);
  }

  client_impl& client() const noexcept { return *s->client; }

  static void start(owner op) {
    client_impl& c = op->client();
    if (op->link) {
      op->link->op = op.get();
      op->cancelled = op->link->requested.load();
    }
    op->lease_ms = op->lease.value_or(c.cfg.watchdog_timeout);
    op->lease_arg.assign(op->lease_ms.count());
    op->keys[0] = op->s->key;
    if (op->s->kind == lock_kind::fenced) {
      op->token_key = token_counter(op->s->key);
      op->keys[1] = op->token_key;
      op->key_count = 2;
    }
    op->args = {op->lease_arg.view(), op->s->field};
    const auto now = clock_type::now();
    op->started = now;
    op->deadline = op->wait ? now + *op->wait : clock_type::time_point::max();
    if (op->cancelled) return finish(std::move(op), cancelled_error(), false, true);
    attempt(std::move(op));
  }

  /// An attempt, once started, gets a full round trip's bound (config::command_timeout) even
  /// at the end of the wait: a try_lock(wait) completes within wait + command_timeout.
  clock_type::time_point attempt_deadline() const noexcept {
    if (detached || !wait) return clock_type::time_point::max();
    return std::max(deadline, attempt_started + client().cfg.command_timeout);
  }

  static void attempt(owner op) {
    client_impl& c = op->client();
    ++c.counters.acquire_attempts;
    op->attempt_started = clock_type::now();
    op->written = {};
    request_options opts;  // an acquire: never written twice, reconciled instead
    opts.deadline = op->attempt_deadline();
    opts.on_deadline = &acquire_operation::on_deadline;
    opts.context = op.get();
    opts.written_at = &op->written;
    op->in_flight = true;
    auto* p = op.get();
    p->request = c.scripts.async_run(
        acquire_script(p->s->kind), std::span(p->keys.data(), p->key_count), p->args, opts,
        [op = std::move(op)](std::error_code ec, resp3::value reply) mutable {
          op->in_flight = false;
          on_attempt(std::move(op), ec, reply);
        });
  }

  /// The bound passed with an attempt written and unanswered (a stalled server): the caller is
  /// told now; the answer, when it comes, is still processed (and an acquisition given back).
  static void on_deadline(void* context) {
    auto* op = static_cast<acquire_operation*>(context);
    op->detach(error_with(
        errc::timeout,
        fmt::format("lock '{}': no answer from Redis in time; an acquisition that happens "
                    "after all is given back",
                    op->s->name())));
  }

  /// Cancellation, on the client's executor.
  void on_cancel() {
    if (detached) return;
    cancelled = true;
    if (sleeping) {
      waiter->timer.cancel();
    } else if (in_flight && written == clock_type::time_point{}) {
      // Still queued (the session is down): it never reached the server, so just take it back.
      client().session.withdraw(s->key, request,
                                std::make_error_code(std::errc::operation_canceled));
    } else if (in_flight && !client().session.connected()) {
      detach(cancelled_error());
    }
    // Otherwise the answer to the written attempt is due at once; it is awaited, and an
    // acquisition it made is given back before the caller is told.
  }

  static void on_attempt(owner op, std::error_code ec, const resp3::value& reply) {
    const bool took_wake = std::exchange(op->wake_taken, false);
    // Unsynced (config::sync_replicas) matters only for an attempt that took the lock: a busy
    // one wrote nothing.
    const bool unsynced = ec == errc::replicas_not_synced;
    if (!ec || unsynced) {
      const auto decoded = decode_acquire_reply(op->s->kind, reply);
      switch (decoded.what) {
        case acquire_reply::outcome::acquired:
          op->token = decoded.token;
          if (unsynced) return give_back_unsynced(std::move(op));
          return on_acquired(std::move(op));
        case acquire_reply::outcome::busy:
          op->ttl = decoded.ttl;
          return on_busy(std::move(op));
        default:
          return finish(std::move(op),
                        error_with(errc::protocol_error, "acquire script: unexpected reply"),
                        false);
      }
    }
    const bool written = op->written != clock_type::time_point{};
    if (written && (ec == errc::connection_lost || ec == errc::timeout)) {
      // Unknown: the server may have run it. Ask it (as often as it takes; counted once).
      ++op->client().counters.reconciled_acquires;
      return reconcile(std::move(op));
    }
    // Not written (it certainly did not run), or an error reply.
    if (!written && took_wake && op->waiter) {
      // The retry a wake-up started never reached the server (withdrawn by a cancellation
      // while queued for the turn's write): the wake-up was not used, so leaving passes it on.
      op->waiter->woken = true;
      op->waiter->by_message = op->wake_by_message;
    }
    auto e = failure_of(op->client(), ec, reply, fmt::format("lock '{}'", op->s->name()));
    finish(std::move(op), std::move(e), false);
  }

  static void on_acquired(owner op) {
    op->s->on_acquired(op->lease_ms, !op->lease, op->written);
    if (op->token > 0) op->s->token.store(op->token, std::memory_order_relaxed);
    if (op->cancelled || op->detached) return give_back(std::move(op));
    op->s->last_wake = op->reason;
    op->account();
    finish(std::move(op), nullptr, true);
  }

  /// Taken on the master, but fewer replicas than config::sync_replicas asks acknowledged it
  /// in time: a failover now could hand the lock to a second owner, so the acquisition is given
  /// back (a re-entry's hold only; the owner's earlier holds stay) and the caller fails.
  static void give_back_unsynced(owner op) {
    const auto& sync = op->client().cfg.sync_replicas;
    op->s->on_acquired(op->lease_ms, !op->lease, op->written);
    if (!op->failure) {
      op->failure = error_with(
          errc::replicas_not_synced,
          fmt::format("lock '{}': acquired, but fewer than {} replica(s) acknowledged it within "
                      "{} ms (sync_replicas); given back",
                      op->s->name(), sync.replicas, sync.timeout.count()));
    }
    give_back(std::move(op));
  }

  /// After an attempt's answer was lost: the owner's hold count on the server, against the one
  /// it had before the attempt, says whether the attempt ran. Retried across reconnects.
  static void reconcile(owner op) {
    client_impl& c = op->client();
    if (op->cancelled) op->detach(cancelled_error());
    command hget(command_kind::query, "HGET", {std::string_view(op->s->key)},
                 {std::string_view(op->s->field)});
    request_options opts;
    // The question stays open as long as the attempt's own bound (max once detached).
    opts.deadline = op->attempt_deadline();
    auto* p = op.get();
    p->in_flight = true;
    p->request =
        c.session.exec(std::move(hget), opts,
                       [op = std::move(op)](std::error_code ec, resp3::value reply) mutable {
                         op->in_flight = false;
                         on_reconciled(std::move(op), ec, reply);
                       });
  }

  static void on_reconciled(owner op, std::error_code ec, const resp3::value& reply) {
    if (ec == errc::timeout && !op->detached) {
      // Out of time while the session is down: the caller is told; the question stays open.
      op->detach(failure_of(op->client(), ec, reply, fmt::format("lock '{}'", op->s->name())));
      return reconcile(std::move(op));
    }
    if (ec) {
      // Closed (or fail-fast while down): nobody can learn more. A hold it made, if any, expires
      // with its lease on the server; the watchdog does not renew it.
      auto e = failure_of(op->client(), ec, reply, fmt::format("lock '{}'", op->s->name()));
      return finish(std::move(op), std::move(e), false);
    }
    std::int64_t count = 0;
    if (reply.type == resp3::type::number) {
      count = reply.integer;
    } else if (!reply.is_null()) {
      std::from_chars(reply.str.data(), reply.str.data() + reply.str.size(), count);
    }
    // Against the holds the server counted where this HGET ran, as answers in order tell it:
    // not the count when the attempt was sent (a caller told `timeout` may have acquired again
    // since, its grant answered before this HGET), and not the callers' count (a release sent
    // after this HGET, such as another lost attempt's give-back, has lowered that already). A
    // hold two questions both see is claimed by the first answer only.
    if (count > static_cast<std::int64_t>(op->s->server_holds)) {
      // A fenced acquisition's token was in the lost answer: read the counter (see fetch_token).
      if (op->s->kind == lock_kind::fenced) return fetch_token(std::move(op));
      return on_acquired(std::move(op));
    }
    // It has not run. It should not any more, but bytes of a connection we gave up can still
    // reach the server (a stalled flow that heals): such a late run adds a hold nobody has, which
    // this owner's final unlock will then give back (lock_state::on_released).
    op->s->maybe_orphaned = true;
    if (op->detached) return;  // destroyed: nothing to give back
    if (op->cancelled) return finish(std::move(op), cancelled_error(), false);
    if (clock_type::now() >= op->attempt_deadline()) return finish(std::move(op), nullptr, false);
    attempt(std::move(op));
  }

  /// A fenced acquire that ran but whose answer (with its token) was lost: the counter's value
  /// now is a token of this owner's. While the owner holds the lock nobody else can acquire, so
  /// the counter moved since the lost attempt only by this owner's own acquisitions: the value
  /// read is this acquisition's token or a later one of the same owner, and above every token
  /// an earlier holder got, which is what a fenced resource checks.
  static void fetch_token(owner op) {
    client_impl& c = op->client();
    command get(command_kind::query, "GET", {std::string_view(op->token_key)});
    request_options opts;
    opts.deadline = op->attempt_deadline();
    auto* p = op.get();
    p->in_flight = true;
    p->request = c.session.exec(
        std::move(get), opts, [op = std::move(op)](std::error_code ec, resp3::value reply) mutable {
          op->in_flight = false;
          std::int64_t token = 0;
          if (!ec && !reply.is_null()) {
            std::from_chars(reply.str.data(), reply.str.data() + reply.str.size(), token);
          }
          if (token <= 0 && !op->detached && !op->cancelled) {
            // The hold is ours but its token cannot be told: give it back rather
            // than hand out a lock without a token.
            auto e =
                ec ? failure_of(op->client(), ec, reply, fmt::format("lock '{}'", op->s->name()))
                   : error_with(errc::protocol_error, "fenced lock: no token counter");
            op->s->on_acquired(op->lease_ms, !op->lease, op->written);
            op->failure = std::move(e);
            return give_back(std::move(op));
          }
          op->token = token;
          on_acquired(std::move(op));
        });
  }

  static void on_busy(owner op) {
    if (op->detached) return;  // nothing taken, nobody waiting
    if (op->wait && *op->wait == milliseconds::zero()) {
      return finish(std::move(op), nullptr, false);
    }
    if (!op->waiter) {
      if (op->cancelled) return finish(std::move(op), cancelled_error(), false);
      client_impl& c = op->client();
      op->waiter.emplace(c.executor);
      c.hub.add(op->s->key, op->s->channel(), *op->waiter);
    } else if (clock_type::now() >= op->deadline) {
      return finish(std::move(op), nullptr, false);
    }
    sleep(std::move(op));
  }

  static void sleep(owner op) {
    // A cancellation that arrived while a retry was in flight ends the wait now: there was no
    // timer to interrupt.
    if (op->cancelled) return finish(std::move(op), cancelled_error(), false);
    notify_hub::waiter& w = *op->waiter;
    if (w.woken || w.failed) return wake(std::move(op));
    const auto nap = op->ttl.count() >= 0 ? op->ttl : op->client().cfg.watchdog_timeout;
    const auto now = clock_type::now();
    if (now >= op->deadline) return finish(std::move(op), nullptr, false);
    w.timer.expires_at(op->deadline - now > nap ? now + nap : op->deadline);
    op->sleeping = true;
    w.timer.async_wait([op = std::move(op)](boost::system::error_code) mutable {
      op->sleeping = false;
      wake(std::move(op));
    });
  }

  static void wake(owner op) {
    notify_hub::waiter& w = *op->waiter;
    client_impl& c = op->client();
    if (w.failed) {
      std::string text = c.hub.refusal_of(w);
      if (text.empty()) text = fmt::format("lock '{}': {}", op->s->name(), w.failed.message());
      auto e = std::make_exception_ptr(std::system_error(w.failed, text));
      return finish(std::move(op), std::move(e), false);
    }
    if (op->cancelled) return finish(std::move(op), cancelled_error(), false);
    op->reason = !w.woken       ? wake_reason::expiry
                 : w.by_message ? wake_reason::notification
                                : wake_reason::immediate;
    if (op->reason == wake_reason::expiry) ++c.counters.expiry_wakeups;
    if (op->reason == wake_reason::notification) ++c.counters.notified_wakeups;
    op->wake_taken = w.woken;
    op->wake_by_message = w.by_message;
    w.woken = false;
    attempt(std::move(op));
  }

  /// Metrics and the slow-acquire log line of an acquisition its caller gets.
  void account() const {
    client_impl& c = client();
    const auto waited = clock_type::now() - started;
    c.wait_times.observe(waited);
    auto& by_reason = reason == wake_reason::immediate      ? c.counters.acquired_immediate
                      : reason == wake_reason::notification ? c.counters.acquired_notification
                                                            : c.counters.acquired_expiry;
    by_reason.fetch_add(1, std::memory_order_relaxed);
    const auto threshold = c.cfg.slow_acquire_threshold;
    if (threshold.count() > 0 && waited >= threshold) {
      c.log(log_level::warning, "lock '{}' (owner {}) acquired after {} ms (threshold {} ms)",
            s->name(), c.short_owner(s->owner),
            std::chrono::duration_cast<milliseconds>(waited).count(), threshold.count());
    }
  }

  /// Completes the caller now, leaving the operation alive for the answer it waits on.
  void detach(std::exception_ptr e) {
    if (detached) return;
    detached = true;
    // Leave the hub now: a waiter that will not retry must not hold on to wake-ups.
    if (waiter) {
      client().hub.remove(*waiter);
      waiter.reset();
    }
    // Posted: detach runs inside the session's bookkeeping (a deadline hook) or a cancellation.
    tell(std::move(e), false, true);
  }

  void tell(std::exception_ptr e, bool acquired, bool inside_initiation) {
    const auto& ex = client().executor;
    if (e && (report || done || report_token)) s->set_last_error(e);
    if (report) {
      bool_handler h(std::move(report));
      deliver(ex, std::move(h), slot, inside_initiation, std::move(e), acquired);
    } else if (report_token) {
      token_handler h(std::move(report_token));
      const auto result = acquired ? std::optional<std::int64_t>(token) : std::nullopt;
      deliver(ex, std::move(h), slot, inside_initiation, std::move(e), result);
    } else if (done) {
      void_handler h(std::move(done));
      deliver(ex, std::move(h), slot, inside_initiation, std::move(e));
    }
  }

  static void finish(owner op, std::exception_ptr e, bool acquired,
                     bool inside_initiation = false) {
    if (op->detached) return;  // the caller was told already
    // Unlink the waiter first (it may pass a wake-up on or unsubscribe), then tell the caller.
    if (op->waiter) {
      op->client().hub.remove(*op->waiter);
      op->waiter.reset();
    }
    op->tell(std::move(e), acquired, inside_initiation);
  }

  /// Undoes an acquisition that completed after the caller cancelled or was told.
  static void give_back(owner op) {
    ++op->client().counters.given_back;
    auto s = op->s;
    async_release(std::move(s), [op = std::move(op)](std::exception_ptr e) mutable {
      auto why = op->failure ? std::move(op->failure) : cancelled_error();
      finish(std::move(op), e ? std::move(e) : std::move(why), false);
    });
  }

  std::shared_ptr<lock_state> s;
  std::optional<milliseconds> wait;
  std::optional<milliseconds> lease;
  // One of the three is set: lock() has no result to report, a fenced lock reports its token.
  bool_handler report;
  void_handler done;
  token_handler report_token;
  asio::cancellation_slot slot;
  // Only for a caller with a cancellation slot: it outlives the operation in the slot handler.
  std::shared_ptr<cancel_link<acquire_operation>> link;
  clock_type::time_point started;  // when the caller asked
  clock_type::time_point deadline;
  clock_type::time_point attempt_started;
  clock_type::time_point written{};  // when the current attempt was written; epoch: not (yet)
  milliseconds lease_ms{0};
  milliseconds ttl{0};  // the holder's PTTL from the latest failed attempt
  decimal lease_arg;
  std::string token_key;  // fenced: the token counter
  std::array<std::string_view, 2> keys;
  std::size_t key_count = 1;
  std::array<std::string_view, 2> args;
  std::int64_t token = 0;      // fenced: this acquisition's token
  std::exception_ptr failure;  // why a give-back ends the operation, if not a cancellation
  std::optional<notify_hub::waiter> waiter;  // from the first failed attempt on
  multiplexer::id_type request = 0;          // the attempt or reconciliation in flight
  wake_reason reason = wake_reason::immediate;
  bool wake_taken = false;       // the attempt in flight used up a wake-up of its waiter
  bool wake_by_message = false;  // and that wake-up was an unlock message
  bool cancelled = false;
  bool detached = false;   // the caller was told; the answer is still awaited
  bool in_flight = false;  // an attempt or reconciliation is owned by the session
  bool sleeping = false;   // owned by the waiter's timer: a cancellation must cancel it
};

// --- lost -------------------------------------------------------------------------------------

/// A wait for the watchdog to report the lock lost: one waiter on the state's lost_signal timer,
/// which reset() cancels for every waiter. Its own cancellation ends only this wait, through a
/// signal bound to its timer wait.
struct lost_operation {
  using owner = std::unique_ptr<lost_operation>;

  lost_operation(std::shared_ptr<lock_state> st, void_handler h)
      : s(std::move(st)), handler(std::move(h)) {}
  ~lost_operation() {
    if (link) link->op = nullptr;
  }

  static void start(owner op) {
    if (op->link) {
      op->link->op = op.get();
      if (op->link->requested.load()) return finish(std::move(op), cancelled_error(), true);
    }
    lock_state& s = *op->s;
    if (s.lost) return finish(std::move(op), nullptr, true);
    if (!s.renewing()) {
      auto e = error_with(
          errc::not_owner,
          fmt::format("lock '{}' is not held through the watchdog by {}", s.name(), s.field));
      return finish(std::move(op), std::move(e), true);
    }
    if (!s.lost_signal) {
      s.lost_signal = std::make_unique<asio::steady_timer>(s.client->executor,
                                                           asio::steady_timer::time_point::max());
    }
    auto* p = op.get();
    s.lost_signal->async_wait(asio::bind_cancellation_slot(
        p->stop.slot(), [op = std::move(op)](boost::system::error_code) mutable {
          const bool lost = op->s->lost;
          finish(std::move(op), lost ? nullptr : cancelled_error(), false);
        }));
  }

  /// Cancellation, on the client's executor.
  void on_cancel() { stop.emit(asio::cancellation_type::all); }

  static void finish(owner op, std::exception_ptr e, bool inside_initiation) {
    void_handler h(std::move(op->handler));
    const auto ex = op->s->client->executor;
    const auto slot = op->slot;
    op.reset();  // unlinked before the caller runs
    deliver(ex, std::move(h), slot, inside_initiation, std::move(e));
  }

  std::shared_ptr<lock_state> s;
  void_handler handler;
  asio::cancellation_slot slot;
  std::shared_ptr<cancel_link<lost_operation>> link;
  asio::cancellation_signal stop;  // bound to the timer wait
};

void start_acquire(std::unique_ptr<acquire_operation> op) {
  const auto ex = op->s->client->executor;
  op->slot = op->report         ? asio::get_associated_cancellation_slot(op->report)
             : op->report_token ? asio::get_associated_cancellation_slot(op->report_token)
                                : asio::get_associated_cancellation_slot(op->done);
  if (auto invalid = validate(op->wait, op->lease)) {
    return acquire_operation::finish(std::move(op), std::move(invalid), false, true);
  }
  if (op->slot.is_connected()) {
    op->link = std::make_shared<cancel_link<acquire_operation>>();
    install_cancellation(op->slot, op->link, ex);
  }
  asio::dispatch(ex, [op = std::move(op)]() mutable { acquire_operation::start(std::move(op)); });
}

}  // namespace

void async_acquire(std::shared_ptr<lock_state> s, std::optional<milliseconds> wait,
                   std::optional<milliseconds> lease, bool_handler handler) {
  start_acquire(std::make_unique<acquire_operation>(std::move(s), wait, lease, std::move(handler),
                                                    void_handler{}));
}

void async_lock(std::shared_ptr<lock_state> s, std::optional<milliseconds> lease,
                void_handler handler) {
  start_acquire(std::make_unique<acquire_operation>(std::move(s), std::nullopt, lease,
                                                    bool_handler{}, std::move(handler)));
}

void async_acquire_token(std::shared_ptr<lock_state> s, std::optional<milliseconds> wait,
                         std::optional<milliseconds> lease, token_handler handler) {
  start_acquire(std::make_unique<acquire_operation>(std::move(s), wait, lease, bool_handler{},
                                                    void_handler{}, std::move(handler)));
}

void async_lost(std::shared_ptr<lock_state> s, void_handler handler) {
  auto op = std::make_unique<lost_operation>(std::move(s), std::move(handler));
  const auto ex = op->s->client->executor;
  op->slot = asio::get_associated_cancellation_slot(op->handler);
  if (op->slot.is_connected()) {
    op->link = std::make_shared<cancel_link<lost_operation>>();
    install_cancellation(op->slot, op->link, ex);
  }
  asio::dispatch(ex, [op = std::move(op)]() mutable { lost_operation::start(std::move(op)); });
}

void async_release(std::shared_ptr<lock_state> s, void_handler handler) {
  auto op = std::make_unique<release_operation>(std::move(s), std::move(handler));
  const auto ex = op->s->client->executor;
  asio::dispatch(ex, [op = std::move(op)]() mutable { release_operation::start(std::move(op)); });
}

}  // namespace rlock::detail
