// The I/O shell of an acquisition: acquire_fsm decides, this file only starts what it says (an
// attempt or a reconcile question through the script registry and the session, a sleep on the
// waiter's timer, a give-back) and feeds the completions back. The lock kind (lock_kind.hpp)
// builds the commands and reads the replies; nothing here branches on the kind.
//
// One heap object per acquisition, owned by whichever completion it waits for; no coroutine
// frame, co_spawn or awaitable thread per operation: S1 (instructions per lock+unlock) and S6
// (bytes per sleeping waiter) are dominated by exactly those. The caller and the protocol state
// are separate: the operation can complete its caller (its bound passed, or it was cancelled)
// and stay alive, owned by its request, until Redis's answer settles what happened.

#include "engine/acquire_fsm.hpp"
#include "engine/acquire_reply.hpp"
#include "engine/delivery.hpp"
#include "engine/engine_context.hpp"
#include "engine/handoff.hpp"
#include "engine/lock_kind.hpp"
#include "engine/lock_state.hpp"
#include "engine/operations.hpp"
#include "notify/notify_hub.hpp"

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <type_traits>
#include <variant>
#include <vector>

namespace rlock::detail {

namespace {

using namespace ops;
using action = acquire_fsm::action;
using attempt_answer = acquire_fsm::answer;
using verdict = acquire_fsm::verdict;

/// std::optional<milliseconds> in half its bytes (bench S6 counts them): none is
/// milliseconds::min(). Only for values already validated (delivery.hpp's validate).
class optional_ms {
 public:
  optional_ms(std::optional<milliseconds> v) noexcept : v_(v.value_or(milliseconds::min())) {}
  explicit operator bool() const noexcept { return v_ != milliseconds::min(); }
  milliseconds operator*() const noexcept { return v_; }
  const milliseconds* operator->() const noexcept { return &v_; }
  milliseconds value_or(milliseconds other) const noexcept { return *this ? v_ : other; }

 private:
  milliseconds v_;
};

/// The longest a waiter sleeps without a message, whatever the server answered: the longer of
/// its own lease and the watchdog's (a short lease must not make a waiter poll a holder that
/// renews for longer; a wait answered as years must still end in a look at the lock).
milliseconds longest_nap(const engine_config& cfg, std::optional<milliseconds> lease) noexcept {
  return std::max(lease.value_or(cfg.watchdog_timeout), cfg.watchdog_timeout);
}

/// An acquisition's machine: its bounds are the caller's wait, command_timeout and the leases.
acquire_fsm machine_for(const engine_config& cfg, clock_type::time_point started,
                        const milliseconds* wait, std::optional<milliseconds> lease) noexcept {
  return acquire_fsm(started, wait, cfg.command_timeout, cfg.watchdog_timeout,
                     longest_nap(cfg, lease));
}

struct acquire_operation : attempt_gate::entry {
  using owner = std::unique_ptr<acquire_operation>;

  // The handlers are constructed in place, never move-assigned: Boost 1.81's
  // any_completion_handler move assignment recurses into its converting constructor.
  template <typename Handler>
  acquire_operation(std::shared_ptr<lock_state> st, std::optional<milliseconds> w,
                    std::optional<milliseconds> l, Handler h)
      : s(std::move(st)),
        lease(l),
        wait(w),
        started(clock_type::now()),
        fsm(machine_for(s->ctx->cfg, started, w ? &*w : nullptr, l)),
        caller(std::in_place_type<Handler>, std::move(h)),
        error(validate(w, l)) {}

  ~acquire_operation() {
    if (link) link->op = nullptr;
    leave_handoff();
    waiter.leave();
  }

  /// Leaves a local handoff in flight to it: the unlock gives the hold back when its answer
  /// comes.
  void leave_handoff() {
    if (!ticket) return;
    ticket->waiter_op = nullptr;
    ticket.reset();
  }

  engine_context& ctx() const noexcept { return *s->ctx; }

  static void start(owner op) {
    if (op->link) op->link->op = op.get();
    if (op->s->kind.waiting == wait_mode::queue) op->waiter.ticket = op->ctx().next_ticket();
    const auto next = op->fsm.start(op->link && op->link->requested.load());
    run(std::move(op), next, true);
  }

  /// Does what the machine says, in a context that owns the operation, until the operation
  /// waits for a completion (which then owns it) or is over.
  static void run(owner op, action next, bool inside_initiation = false) {
    for (;;) {
      switch (next) {
        case action::attempt:
          return attempt(std::move(op));
        case action::reconcile:
          return reconcile(std::move(op));
        case action::join:
          op->join();
          next = op->fsm.on_joined();
          break;
        case action::sleep:
          return sleep(std::move(op));
        case action::give_back:
          return give_back(std::move(op));
        case action::complete:
          op->tell(inside_initiation);
          next = op->fsm.resume();
          break;
        case action::done:
          if (op->left_a_trace && !op->took_hold) leave(*op);
          return;
        case action::interrupt:
        case action::withdraw:
        case action::wait:  // only events from hooks yield these
          return;
      }
    }
  }

  /// Does what the machine says in a hook (a cancellation, the caller's bound), where the
  /// operation is owned by a pending completion: at most tell the caller and nudge that
  /// completion. Nothing may touch `this` after a withdraw (it completes the request at once).
  void act(action next) {
    if (next == action::complete) {
      tell(true);
      next = fsm.resume();
    }
    if (next == action::interrupt) {
      waiter.interrupt();
    } else if (next == action::withdraw) {
      const auto cancelled = std::make_error_code(std::errc::operation_canceled);
      if (queued()) {
        // Still waiting for its turn: it never reached the session.
        withdraw();
        on_attempt(owner(this), cancelled, resp3::value{});
        return;
      }
      ctx().session.withdraw(s->key(), request, cancelled);
    }
  }

  // --- attempts -------------------------------------------------------------------------------

  static void attempt(owner op) {
    engine_context& c = op->ctx();
    if (op->fsm.request_deadline() == clock_type::time_point::max()) {
      // Unbounded: it takes a turn in the gate (released when its answer comes).
      if (!c.attempts.enter(*op)) {
        op.release();  // owned by the gate until its turn (take_turn) or the client closes
        return;
      }
      op->counted = true;
    }
    send_attempt(std::move(op));
  }

  /// Its turn came: an attempt in flight was answered.
  static void take_turn(attempt_gate::entry& e) {
    owner op(static_cast<acquire_operation*>(&e));
    op->counted = true;
    send_attempt(std::move(op));
  }

  static void send_attempt(owner op) {
    engine_context& c = op->ctx();
    c.metrics.attempt_sent();
    op->written = {};
    request_options opts;  // an acquire: never written twice, reconciled instead
    opts.deadline = op->fsm.request_deadline();
    if (opts.deadline != clock_type::time_point::max()) {
      opts.on_deadline = &acquire_operation::on_bound;
      opts.context = op.get();
    }
    opts.written_at = &op->written;
    // Built for this attempt only: a waiter keeps no bytes of its call while it sleeps.
    decimal own_lease;
    attempt_room room;
    acquire_inputs in;
    op->prepare(own_lease, room, in);
    // From its first waiting attempt on, what the kind leaves on the server while it waits (a
    // place in a fair queue, a writer's mark) may be there: undone if it gives up.
    const bool waits = !op->wait || op->wait->count() != 0;  // not a single attempt
    if (waits && op->s->kind.leave_call != nullptr) op->left_a_trace = true;
    if (op->s->kind.waiting == wait_mode::queue && op->left_a_trace &&
        op->waiter.channel == nullptr && c.session.ordered_pushes()) {
      // A fair waiter listens on its own channel before its attempt can queue it: the
      // SUBSCRIBE is written ahead of the attempt on the same connection, so a handoff by push
      // made right after the attempt is heard (no retry once the channel is confirmed).
      op->join();
      op->joined_first = true;
    }
    acquire_script_call call;
    op->s->kind.acquire_call(op->s->identity(), in, call);
    auto* p = op.get();
    auto answered = [op = std::move(op)](std::error_code ec, resp3::value&& reply) mutable {
      on_attempt(std::move(op), ec, reply);
    };
    p->request = p->batched
                     ? c.scripts.async_run_batched(call.which, call.key_span(), call.arg_span(),
                                                   opts, std::move(answered), true)
                     : c.scripts.async_run_once(call.which, call.key_span(), call.arg_span(), opts,
                                                std::move(answered));
  }

  /// An attempt's inputs: the lease, the publish command and the caller's argument
  /// (lock_state::argument), and the kind's own arguments
  /// (lock_kind::prepare_attempt: a fair queue's allowance and ticket, a writer's mark, ...).
  void prepare(decimal& own_lease, attempt_room& room, acquire_inputs& in) const {
    const engine_context& c = ctx();
    in.lease_ms = c.lease_arg(lease.value_or(milliseconds{0}), own_lease);
    in.publish = c.session.publish_command();
    if (s->kind.takes_argument) {
      if (const auto* given = s->argument()) in.argument = *given;
    }
    if (const auto kind_own = s->kind.prepare_attempt) {
      kind_own({c.cfg, lease ? std::optional(*lease) : std::nullopt,
                wait ? std::optional(*wait) : std::nullopt, waiter.ticket},
               room, in);
    }
  }

  /// A waiter that gives up (out of time, cancelled, failed) undoes what its waiting left on the
  /// server (lock_kind::leave_call). A fair waiter leaves the queue: Redisson's acquireFailed,
  /// which also gives back a handoff by push made to it meanwhile. A writer takes back its
  /// mark, so the readers it held back need not wait out the mark's lease. Nobody waits for it;
  /// idempotent, so it is written again after a reconnect, for as long as what it removes could
  /// otherwise stay (fair_lock::wait_timeout: a queue entry is dropped as stale only when
  /// another waiter's script runs on the lock, which may never happen). A late leave may take
  /// back a mark the same owner's next wait made: that writer marks again within half a lease.
  static void leave(acquire_operation& op) {
    engine_context& c = op.ctx();
    struct leaving {
      std::shared_ptr<lock_state> s;  // the call views its key and field
      std::string channel;
      decimal lease;
      attempt_room room;
      acquire_inputs attempt;
      release_script_call call;
      owed_requests::debt owed;  // ends with its answer
    };
    auto l = std::make_unique<leaving>();
    l->s = op.s;
    op.s->kind.channel(op.s->key(), l->channel);
    op.prepare(l->lease, l->room, l->attempt);  // what its attempts gave, to give back
    op.s->kind.leave_call(op.s->identity(), {l->channel, l->attempt}, l->call);
    request_options opts;
    // Useful while what it removes could still be there: a queue entry until the fair lock's
    // wait_timeout, a writer's mark until its lease.
    opts.deadline = clock_type::now() + std::max(c.cfg.command_timeout, l->attempt.trace_lasts);
    auto& call = l->call;
    // client::close() waits for it: counted from the caller's answer on (owes), or from now.
    l->owed = op.owes ? std::move(op.owes) : owed_requests::debt(c.owed);
    c.scripts.async_run(call.which, call.key_span(), call.arg_span(), opts,
                        [l = std::move(l)](std::error_code, const resp3::value&) {});
  }

  /// The caller's bound passed with the attempt written and unanswered (a stalled server or a
  /// black-holed connection): the caller is told now; the answer, when it comes, is still
  /// processed (and an acquisition given back).
  static void on_bound(void* context) {
    auto* op = static_cast<acquire_operation*>(context);
    op->act(op->fsm.on_bound_passed());
  }

  /// Cancellation, on the client's executor.
  void on_cancel() {
    act(fsm.on_cancel(written != clock_type::time_point{}, ctx().session.connected()));
  }

  static void on_attempt(owner op, std::error_code ec, const resp3::value& reply) {
    if (op->counted) {
      op->counted = false;
      if (auto* next = op->ctx().attempts.leave()) take_turn(*next);
    }
    // Unsynced (config::sync_replicas) matters only for an attempt that took the lock: a busy
    // one wrote nothing.
    const bool unsynced = ec == errc::replicas_not_synced;
    const bool called_again = std::exchange(op->called_again, false);
    attempt_answer a = attempt_answer::failed;
    milliseconds ttl{-1};
    if (ec && script_registry::not_run(reply) && !called_again) {
      // NOSCRIPT (the server's script cache was flushed, or the script was not loaded yet): it
      // did not run, and the next attempt goes after a SCRIPT LOAD. Once in a row: a second
      // one is the server's error to report.
      op->called_again = true;
      a = attempt_answer::not_run;
    } else if (!ec || unsynced) {
      const auto decoded = op->s->kind.decode(reply);
      // The server ran this attempt after any handoff by push heard before its answer: the
      // answer says what holds (a handoff it found is claimed by it, the lease restarted).
      op->waiter.pushed_grant = false;
      switch (decoded.what) {
        case acquire_reply::outcome::acquired:
          op->record_hold(decoded.token);
          a = unsynced ? attempt_answer::unsynced : attempt_answer::acquired;
          if (unsynced) op->fail_unsynced();
          break;
        case acquire_reply::outcome::busy:
          a = attempt_answer::busy;
          ttl = decoded.ttl;
          op->busy_ttl = ttl;
          // A handoff by push to it can only come after this ran (fair kinds).
          op->busy_written = op->written;
          // Joined first, everything it heard came before this attempt ran, which saw the
          // lock busy after it: no reason to retry (a handoff since comes after this answer).
          if (op->joined_first) op->waiter.woken = false;
          break;
        case acquire_reply::outcome::malformed:
          op->error = failure(errc::protocol_error,
                              fmt::format("lock '{}': {} acquire script: unexpected reply",
                                          op->s->name(), op->s->kind.name));
          break;
      }
    } else if (op->written != clock_type::time_point{}) {
      // Written, and no answer: the server may have run it. Ask it (counted once).
      if (ec == errc::connection_lost || ec == errc::timeout) {
        op->ctx().metrics.attempt_reconciled();
        a = attempt_answer::unknown;
      } else {
        op->error = op->failure_from(ec, reply);
      }
    } else {
      // Never reached the server: it did not run.
      if (op->fsm.retry_after_wake()) {
        // The retry a wake-up started was never written: leaving passes the wake-up on.
        op->waiter.woken = true;
        op->waiter.by_message = op->wake_by_message;
      }
      if (ec == errc::timeout) {
        a = attempt_answer::not_written;
      } else {
        op->error = op->failure_from(ec, reply);
      }
    }
    const auto next = op->fsm.on_attempt(a, ttl, clock_type::now());
    run(std::move(op), next);
  }

  // --- reconciliation -------------------------------------------------------------------------

  /// After an attempt's answer was lost: the kind's question says whether it ran. A query, so
  /// the session asks again after a reconnect; bounded by the caller's bound until the caller
  /// is told, then open until answered.
  static void reconcile(owner op) {
    auto* p = op.get();
    p->request = p->s->ask(
        p->s->kind.reconcile_question(p->s->identity()),
        [op = std::move(op)](std::error_code ec, resp3::value&& reply) mutable {
          on_reconciled(std::move(op), ec, reply);
        },
        p->fsm.request_deadline());
  }

  static void on_reconciled(owner op, std::error_code ec, const resp3::value& reply) {
    attempt_answer a = attempt_answer::failed;
    if (ec == errc::timeout) {
      a = attempt_answer::unknown;
    } else if (ec || reply.is_error()) {
      op->error = op->failure_from(ec, reply);
    } else {
      const auto known = op->s->server_holds;
      const auto judged = op->s->kind.judge(known, reply);
      op->s->log(log_level::debug,
                 ": an attempt's answer was lost; asked, the server says {} ({} known): {}",
                 resp3::brief(reply), known,
                 judged.what == reconcile_result::outcome::not_run ? "it did not run" : "it ran");
      switch (judged.what) {
        case reconcile_result::outcome::ran:
          // The hold found may be a handoff by push to a waiting attempt that ran (its
          // registration asked for the claim), made after the lost attempt or an earlier busy
          // one: believed as one.
          op->record_hold(judged.token, op->reconciled_start(),
                          op->left_a_trace ? op->push_claim() : milliseconds{});
          a = attempt_answer::acquired;
          break;
        case reconcile_result::outcome::ran_no_token:
          // The hold is ours but its token cannot be told: given back rather than handed out.
          op->record_hold(0);
          op->error = failure(
              errc::protocol_error,
              fmt::format("lock '{}': acquired, but its token could not be read back; given back",
                          op->s->name()));
          a = attempt_answer::ran_no_token;
          break;
        case reconcile_result::outcome::not_run:
          // It should not run any more, but bytes of a connection we gave up can still reach
          // the server (a stalled flow that heals): such a late run adds a hold nobody has,
          // which this owner's final unlock then gives back (lock_state::on_released).
          op->s->maybe_orphaned = true;
          a = attempt_answer::busy;
          break;
      }
    }
    const auto next = op->fsm.on_reconciled(a, clock_type::now());
    run(std::move(op), next);
  }

  // --- waiting --------------------------------------------------------------------------------

  /// Joins the lock's channel: the hub subscribes with a channel's first waiter, and wakes this
  /// one at once if the subscription is already confirmed (an unlock may have gone unheard
  /// between the failed attempt and now).
  void join() {
    if (waiter.channel != nullptr) return;  // joined before its first attempt (fair kinds)
    notify_hub& hub = ctx().hub;
    waiter.owner = this;  // for the sleep and a local handoff
    waiter.on_unpark = &acquire_operation::on_unparked;
    waiter.woken_first = s->kind.woken_first;
    // A polling waiter (the spin lock's) listens on nothing: it only sleeps.
    if (s->kind.waiting == wait_mode::poll) return hub.attach(waiter);
    hub.add(s->key(), s->channel(), s->kind.on_message, waiter);
  }

  /// Asleep, the operation is owned by the hub's sleep set, which calls on_unparked when the
  /// sleep ends.
  static void sleep(owner op) {
    notify_hub::waiter& w = op->waiter;
    if (w.woken || w.failed) return woken(std::move(op));
    auto until = op->fsm.sleep_until();
    if (const auto backoff = op->s->kind.backoff) {
      // A polling waiter: the kind says when to look again.
      until = std::min(until, clock_type::now() + backoff(op->ctx().cfg, op->naps));
    }
    op.release();
    w.sleep(until);
  }

  /// From inside the hub (a message, the timer, a cancellation): the resumption is posted, so
  /// the hub is never re-entered, and owns the operation until it runs.
  static void on_unparked(notify_hub::waiter& w) {
    owner op(static_cast<acquire_operation*>(w.owner));
    const auto& ex = op->s->executor();
    asio::post(ex, [op = std::move(op)]() mutable { woken(std::move(op)); });
  }

  static void woken(owner op) {
    notify_hub::waiter& w = op->waiter;
    engine_context& c = op->ctx();
    acquire_fsm::wake why = acquire_fsm::wake::timer;
    if (w.granted) {
      why = acquire_fsm::wake::granted;  // the handoff recorded the hold
      w.granted = false;
      w.woken = false;
    } else if (w.pushed_grant && !w.failed) {
      // Taken from the push alone, or (its lease start too old) claimed by the attempt this
      // wake-up by message starts.
      w.pushed_grant = false;
      if (op->take_pushed_grant()) {
        why = acquire_fsm::wake::granted;
        w.woken = false;
      } else {
        why = acquire_fsm::wake::message;
      }
    } else if (w.failed) {
      const auto why_failed = w.failure();
      std::string text = w.refusal();
      if (text.empty()) text = fmt::format("lock '{}': {}", op->s->name(), why_failed.message());
      op->error = failure(why_failed, std::move(text));
      why = acquire_fsm::wake::failed;
    } else if (w.woken) {
      why = w.by_message ? acquire_fsm::wake::message : acquire_fsm::wake::subscribed;
    }
    if (w.reserved && why != acquire_fsm::wake::failed) {
      // A handoff to it is in flight: whatever woke it is used up; the handoff's answer wakes it.
      w.woken = false;
    }
    const auto next = op->fsm.on_woken(why, clock_type::now(), w.reserved);
    if (why == acquire_fsm::wake::granted) {
      op->reason = wake_reason::handoff;
    } else if (next == action::attempt) {
      op->reason = why == acquire_fsm::wake::timer     ? wake_reason::expiry
                   : why == acquire_fsm::wake::message ? wake_reason::notification
                                                       : wake_reason::immediate;
      c.metrics.woke(op->reason);
      op->wake_by_message = w.by_message;
      w.woken = false;
    }
    run(std::move(op), next);
  }

  // --- holds ----------------------------------------------------------------------------------

  /// A fair lock's release made this acquisition the holder and told it by push. Its lease
  /// began when that script ran, which was after this waiter's latest busy attempt ran and
  /// (where messages share the lock's connection) after the connection's latest answered
  /// request: the later of the two is where the lease is counted from. If that leaves less
  /// than three quarters of the lease, the hold is not taken from the push alone: an attempt
  /// claims it instead and restarts its lease (one round trip, only after a long silence).
  bool take_pushed_grant() {
    engine_context& c = ctx();
    auto since = busy_written;
    const auto pushed_after = waiter.take_grant_since();
    // Unknown (max: the channel's bound was taken by another grant) counts for nothing.
    if (c.session.ordered_pushes() && pushed_after != clock_type::time_point::max()) {
      since = std::max(since, pushed_after);
    }
    const auto held_for = lease.value_or(push_claim());
    if (since == clock_type::time_point{} || clock_type::now() - since > held_for / 4) return false;
    record_hold(0, since, push_claim());
    return true;
  }

  /// What the server gives a hold a release handed to this waiter by push: its own lease, or,
  /// renewed by the watchdog, config::fair_lock::handoff_claim only, so that a waiter that died
  /// at the head of the queue holds the lock no longer; the watchdog renews such a hold at once
  /// and believes it only that long until the renewal is answered. Zero: no claim.
  milliseconds push_claim() const noexcept {
    const auto claim = s->kind.push_claim;
    return claim != nullptr && !lease ? claim(ctx().cfg) : milliseconds{};
  }

  /// Where a hold a reconciliation found began at the latest: the lost attempt's write, or,
  /// for a fair kind, a handoff by push made before it (after its latest busy attempt).
  clock_type::time_point reconciled_start() const noexcept {
    if (s->kind.waiting != wait_mode::queue || busy_written == clock_type::time_point{}) {
      return written;
    }
    return std::min(written, busy_written);
  }

  /// The lease a hold of this acquisition gets: its own, or the watchdog's.
  milliseconds held_lease() const noexcept { return lease.value_or(ctx().cfg.watchdog_timeout); }

  /// Bookkeeping of a hold an answer took for this operation (kept even if it is given back),
  /// its lease counted from `sent` (the attempt's, or a handoff's, write).
  void record_hold(std::int64_t t) { record_hold(t, written); }
  void record_hold(std::int64_t t, clock_type::time_point sent, milliseconds claim = {}) {
    if (!s->kind.takes_hold) return;  // the condition holds: nothing to keep
    took_hold = true;
    const auto held = held_lease();
    s->on_acquired(held, !lease, sent, claim);
    // Believed from its write for its claim or its lease, less the watchdog's margin (the
    // watchdog's own rule): an answer later than that is given back (acquire_fsm).
    const auto believed = claim.count() > 0 && claim < held ? claim : held;
    fsm.hold_believed_until(sent + believed - watchdog::margin_for(held));
    hold_sent = sent;
    if (t > 0) {
      token = t;
      s->token.store(t, std::memory_order_relaxed);
    }
  }

  /// Taken on the master, but fewer replicas than config::sync_replicas asks acknowledged it in
  /// time: a failover now could hand the lock to a second owner, so the acquisition is given
  /// back (a re-entry's hold only; the owner's earlier holds stay) and the caller fails.
  void fail_unsynced() {
    const auto& sync = ctx().cfg.sync_replicas;
    error = failure(
        errc::replicas_not_synced,
        fmt::format("lock '{}': acquired, but fewer than {} replica(s) acknowledged it within "
                    "{} ms (sync_replicas); given back",
                    s->name(), sync.replicas, sync.timeout.count()));
  }

  /// Undoes an acquisition no caller will get (cancelled, told otherwise, unsynced).
  static void give_back(owner op) {
    if (!op->s->kind.takes_hold) {
      // A kind that takes no hold has nothing to give back.
      const auto next = op->fsm.on_given_back(false, clock_type::now());
      return run(std::move(op), next);
    }
    const bool late = op->fsm.giving_back_late_hold();
    if (late) {
      op->s->log(
          log_level::warning,
          ": acquired, but the answer came {} ms after the write that took it, too late "
          "to believe a lease of {} ms the server may have ended; given back, trying again",
          std::chrono::duration_cast<milliseconds>(clock_type::now() - op->hold_sent).count(),
          op->held_lease().count());
    } else {
      op->s->log(log_level::debug, ": giving back a hold its caller was not given");
    }
    auto s = op->s;
    async_give_back(std::move(s), [op = std::move(op), late](failure e) mutable {
      // A late hold the server ended already (not held any more) is what was feared, no failure.
      if (e && !(late && e.code == errc::not_owner)) op->error = std::move(e);
      if (late && !op->error && op->fsm.late_holds_exhausted()) {
        const auto held = op->held_lease();
        op->error = failure(
            errc::lock_lost,
            fmt::format("lock '{}': taken {} times, and each answer came later than its lease of "
                        "{} ms (less {} ms of margin) allows after its write, so the server may "
                        "have ended it first; each was given back. Use a lease longer than the "
                        "round trip to Redis",
                        op->s->name(), acquire_fsm::max_late_holds, held.count(),
                        watchdog::margin_for(held).count()));
      }
      // Given back: a retry's queue entry or mark is a trace of its own again.
      if (late && !op->error) op->took_hold = false;
      const auto next = op->fsm.on_given_back(static_cast<bool>(op->error), clock_type::now());
      run(std::move(op), next);
    });
  }

  // --- the caller -----------------------------------------------------------------------------

  failure failure_from(std::error_code ec, const resp3::value& reply) const {
    // A refusal of the kind's script (NON_REENTRANT_REACQUIRE, ...) is the kind's to name.
    if (reply.is_error()) ec = refusal_code(s->kind, reply.str, ec);
    return failure_of(ctx(), ec, reply, fmt::format("lock '{}'", s->name()));
  }

  failure verdict_error() const {
    switch (fsm.outcome()) {
      case verdict::cancelled:
        return cancelled();
      case verdict::timed_out: {
        const auto& c = ctx();
        const auto bound =
            wait && wait->count() > 0
                ? fmt::format("the wait ({} ms)", wait->count())
                : fmt::format("{} ms (command_timeout)", c.cfg.command_timeout.count());
        const auto last = c.session.connected() ? std::string() : c.session.last_error();
        return {errc::timeout,
                fmt::format("lock '{}': no answer from Redis within {}{}{}; an "
                            "acquisition that happens after all is given back",
                            s->name(), bound, last.empty() ? "" : "; last error: ", last)};
      }
      case verdict::failed:
        return error ? error : failure(errc::protocol_error, "acquire failed");
      default:
        return {};
    }
  }

  /// Tells the caller the machine's verdict (once). Leaves the hub first: a waiter that will not
  /// retry must not hold on to wake-ups (its unused one passes to the next waiter).
  void tell(bool inside_initiation) {
    leave_handoff();
    waiter.leave();
    const bool acquired = fsm.outcome() == verdict::acquired;
    // Told without a hold, with a trace on the server its leave will undo once the attempt in
    // flight (if any) is answered: client::close() waits for that from now on.
    if (!acquired && left_a_trace && !took_hold && !owes) owes = owed_requests::debt(ctx().owed);
    if (acquired && s->kind.takes_hold) {
      s->last_wake.store(static_cast<std::uint8_t>(reason), std::memory_order_relaxed);
      account();
    }
    auto e = verdict_error();
    const auto& ex = s->executor();
    std::visit(
        [&](auto& waiting) {
          using handler_type = std::decay_t<decltype(waiting)>;
          if (!waiting) return;  // told already
          if (e) s->set_last_error(e);
          handler_type h(std::move(waiting));
          const auto slot = asio::get_associated_cancellation_slot(h);  // start_acquire's
          if constexpr (std::is_same_v<handler_type, bool_handler>) {
            deliver(ex, std::move(h), slot, inside_initiation, std::move(e), acquired);
          } else if constexpr (std::is_same_v<handler_type, token_handler>) {
            const auto result = acquired ? std::optional<std::int64_t>(token) : std::nullopt;
            deliver(ex, std::move(h), slot, inside_initiation, std::move(e), result);
          } else if constexpr (std::is_same_v<handler_type, attempt_handler>) {
            const auto ttl = acquired ? milliseconds(-1) : busy_ttl;
            deliver(ex, std::move(h), slot, inside_initiation, std::move(e), acquired, ttl);
          } else {
            deliver(ex, std::move(h), slot, inside_initiation, std::move(e));
          }
        },
        caller);
  }

  /// Metrics and the slow-acquire log line of an acquisition its caller gets.
  void account() const {
    engine_context& c = ctx();
    const auto waited = clock_type::now() - started;
    c.metrics.acquired(reason, waited);
    const auto threshold = c.cfg.slow_acquire_threshold;
    if (threshold.count() > 0 && waited >= threshold) {
      s->log(log_level::warning, " acquired after {} ms (threshold {} ms)",
             std::chrono::duration_cast<milliseconds>(waited).count(), threshold.count());
    }
  }

  std::shared_ptr<lock_state> s;
  optional_ms lease;               // none: the watchdog's
  optional_ms wait;                // none: no bound
  clock_type::time_point started;  // when the caller asked
  acquire_fsm fsm;
  // lock() has no result to report, try_lock() whether it acquired, a fenced lock its token.
  // A single attempt (a quorum lock's vote) also the holder's TTL when busy.
  std::variant<void_handler, bool_handler, token_handler, attempt_handler> caller;
  detail::failure error;  // the shell's failure, for verdict::failed
  // Only for a caller with a cancellation slot: it outlives the operation in the slot handler.
  std::shared_ptr<cancel_link<acquire_operation>> link;
  clock_type::time_point written{};       // when the current attempt was written; epoch: not (yet)
  clock_type::time_point busy_written{};  // the latest attempt answered busy (fair kinds)
  std::int64_t token = 0;                 // this acquisition's token (kinds with tokens)
  milliseconds busy_ttl{-1};              // the latest busy answer's TTL of the holder
  clock_type::time_point hold_sent{};     // the write its latest hold's lease counts from
  notify_hub::waiter waiter;  // in the hub from the first busy answer until the caller is told
  multiplexer::id_type request = 0;        // the attempt or question in flight
  std::shared_ptr<handoff_ticket> ticket;  // a local handoff to it in flight
  owed_requests::debt owes;  // counted in engine_context::owed: told, with a trace to undo
  // The flags together, and no padding between them (bench S6 counts bytes per waiter).
  wake_reason reason = wake_reason::immediate;
  bool wake_by_message = false;  // the wake-up the attempt in flight used was an unlock message
  bool counted = false;          // its attempt in flight holds a turn of the gate
  bool called_again = false;     // the attempt in flight follows a NOSCRIPT answer
  bool left_a_trace = false;     // a waiting attempt was written: it may be queued, or marked
  bool took_hold = false;        // an answer or a handoff gave it a hold (kept or given back)
  bool joined_first = false;     // a fair waiter that joined its channel before its attempts
  bool batched = false;          // its attempts go in batches (async_acquire)
  backoff_state naps;            // a polling waiter's sleeps so far (lock_kind::backoff)
};

}  // namespace

std::shared_ptr<handoff_ticket> reserve_handoff(lock_state& releasing, std::string_view channel) {
  engine_context& c = *releasing.ctx;
  const auto& bound = c.cfg.local_handoff;
  // With sync_replicas an acquisition needs its replicas' acknowledgement; a handoff would
  // skip it.
  if (releasing.kind.transfer_call == nullptr || c.cfg.sync_replicas.replicas > 0 ||
      c.hub.channel_count() == 0) {
    return nullptr;  // nothing waits here (the common unlock): no lookup
  }
  const auto now = clock_type::now();
  // Other processes hear no unlock while the lock is handed around inside this one: after
  // max_streak handoffs in a row, or max_time after the first, this release publishes.
  const auto streak = releasing.handoff_streak;
  if (streak >= bound.max_streak ||
      (streak > 0 && now - releasing.streak_since >= bound.max_time)) {
    return nullptr;
  }
  auto* w = c.hub.handoff_candidate(channel);
  if (w == nullptr) return nullptr;
  auto* op = static_cast<acquire_operation*>(w->owner);
  if (&op->s->kind != &releasing.kind || op->s.get() == &releasing || op->ticket) return nullptr;
  w->reserved = true;
  auto t = std::make_shared<handoff_ticket>();
  t->streak = streak + 1;
  t->streak_since = streak == 0 ? now : releasing.streak_since;
  t->to = op->s;
  t->waiter_op = op;
  t->lease = op->held_lease();
  t->watchdog = !op->lease;
  t->lease_arg.assign(t->lease.count());
  op->ticket = t;
  return t;
}

void finish_handoff(const std::shared_ptr<handoff_ticket>& t, bool handed_over,
                    clock_type::time_point sent) {
  engine_context& c = *t->to->ctx;
  if (handed_over) c.metrics.handed_over();
  auto* op = static_cast<acquire_operation*>(t->waiter_op);
  if (op == nullptr) {
    // The waiter left (cancelled, out of time) while the handoff was in flight: the hold it
    // was given belongs to nobody, so it goes back at once.
    if (!handed_over) return;
    t->to->log(log_level::debug,
               ": a handoff reached an acquisition that had ended; giving it back");
    t->to->on_acquired(t->lease, t->watchdog, sent);
    async_give_back(
        t->to, [](const failure&) {}, true);
    return;
  }
  op->leave_handoff();
  notify_hub::waiter& w = op->waiter;
  w.reserved = false;
  if (handed_over) {
    op->record_hold(0, sent);
    t->to->handoff_streak = t->streak;
    t->to->streak_since = t->streak_since;
    w.granted = true;
  }
  w.wake_for_handoff();  // it takes the hold, or retries
}

void fail_waiting_attempts(engine_context& c, std::error_code reason) {
  // Taken out first: a handler told here may start another acquisition, which must not join
  // this round.
  std::vector<acquire_operation::owner> waiting;
  while (auto* e = c.attempts.take_waiting()) {
    waiting.emplace_back(static_cast<acquire_operation*>(e));
  }
  for (auto& op : waiting) acquire_operation::on_attempt(std::move(op), reason, resp3::value{});
}

namespace {

void start_acquire(std::unique_ptr<acquire_operation> op) {
  const auto ex = op->s->executor();
  auto slot = std::visit([](const auto& h) { return asio::get_associated_cancellation_slot(h); },
                         op->caller);
  if (op->error) {  // invalid arguments
    op->fsm.reject();
    op->tell(true);
    return;
  }
  if (slot.is_connected()) {
    op->link = std::make_shared<cancel_link<acquire_operation>>();
    install_cancellation(slot, op->link, ex);
  }
  on_client(ex, [op = std::move(op)]() mutable { acquire_operation::start(std::move(op)); });
}

}  // namespace

void async_acquire(std::shared_ptr<lock_state> s, std::optional<milliseconds> wait,
                   std::optional<milliseconds> lease, bool_handler handler, bool batched) {
  auto op = std::make_unique<acquire_operation>(std::move(s), wait, lease, std::move(handler));
  op->batched = batched;
  start_acquire(std::move(op));
}

void async_lock(std::shared_ptr<lock_state> s, std::optional<milliseconds> lease,
                void_handler handler) {
  start_acquire(
      std::make_unique<acquire_operation>(std::move(s), std::nullopt, lease, std::move(handler)));
}

void async_acquire_token(std::shared_ptr<lock_state> s, std::optional<milliseconds> wait,
                         std::optional<milliseconds> lease, token_handler handler) {
  start_acquire(std::make_unique<acquire_operation>(std::move(s), wait, lease, std::move(handler)));
}

void async_attempt(std::shared_ptr<lock_state> s, std::optional<milliseconds> lease,
                   attempt_handler handler) {
  start_acquire(std::make_unique<acquire_operation>(std::move(s), milliseconds::zero(), lease,
                                                    std::move(handler)));
}

}  // namespace rlock::detail
