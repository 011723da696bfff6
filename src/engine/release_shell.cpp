// The release of one hold, and the wait for a lost lock, as plain asynchronous operations: one
// heap object each, driven by the completions of their round trips (see acquire_shell.cpp for the
// acquisition).
//
// A release is made idempotent by Redisson's unlock latch (one request id per unlock, reused by
// every retry): written and unanswered when the connection dies, it is written again on the next
// one (docs/design/fault-model.md). The kind builds its script call (lock_kind::release_call).

#include "engine/delivery.hpp"
#include "engine/engine_context.hpp"
#include "engine/handoff.hpp"
#include "engine/lock_kind.hpp"
#include "engine/lock_state.hpp"
#include "engine/operations.hpp"
#include "engine/release_fsm.hpp"
#include "engine/round_trip.hpp"
#include "names/names.hpp"

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/steady_timer.hpp>

namespace rlock::detail {

namespace {

using namespace ops;

// --- release ----------------------------------------------------------------------------------

struct release_operation {
  using owner = std::unique_ptr<release_operation>;

  release_operation(std::shared_ptr<lock_state> st, void_handler h)
      : s(std::move(st)), handler(std::move(h)) {}

  static void start(owner op) {
    lock_state& s = *op->s;
    engine_context& c = *s.ctx;
    op->undo = s.before_release();
    op->grants_at_start = s.grants;
    const auto lease_ms = c.lease_arg(s.lease, op->lease_arg);
    // The channel and the latch key in one buffer: one allocation per unlock.
    op->names.reserve(64 + 2 * s.key().size() + 32);
    s.kind.channel(s.key(), op->names);
    const std::size_t channel_size = op->names.size();
    append_request_latch(s, op->names);
    op->channel = std::string_view(op->names).substr(0, channel_size);
    op->latch = std::string_view(op->names).substr(channel_size);
    // A final release with a coroutine of this client parked on the lock hands it over.
    if (op->undo.holds == 1) op->ticket = reserve_handoff(s, op->channel);
    op->fsm = release_fsm(op->ticket != nullptr);
    // The latch keeps the answer for 2 × command_timeout: a retry may come until the
    // operation's bound and one reconnect later. A later one reads "not the owner" once the
    // latch is gone: harmless for a release (its caller was told the outcome is unknown), and a
    // transfer answered so is settled by asking (settle_transfer). Longer would leave the latch
    // of every unlock a closing client gives up on for a lease.
    auto in = latched_inputs(s, op->channel, op->latch);
    in.lease_ms = lease_ms;
    if (op->ticket) {
      in.to_field = op->ticket->to->field();
      in.to_lease_ms = op->ticket->lease_arg.view();
      s.kind.transfer_call(s.identity(), in, op->call);
    } else {
      s.kind.release_call(s.identity(), in, op->call);
    }
    // A release: retried (the latch makes a retry return the first answer).
    auto opts = round_trip(s);
    opts.on_deadline = &release_operation::on_deadline;
    opts.context = op.get();
    opts.written_at = &op->written;
    auto* p = op.get();
    auto answered = [op = std::move(op)](std::error_code ec, resp3::value&& reply) mutable {
      on_reply(std::move(op), ec, reply);
    };
    if (p->batched) {
      c.scripts.async_run_batched(p->call.which, p->call.key_span(), p->call.arg_span(), opts,
                                  std::move(answered), false);
    } else {
      c.scripts.async_run(p->call.which, p->call.key_span(), p->call.arg_span(), opts,
                          std::move(answered));
    }
  }

  /// The bound passed with the release written and unanswered: the caller learns that its
  /// outcome is unknown; the answer, when it comes, still updates the owner's state.
  static void on_deadline(void* context) {
    auto* op = static_cast<release_operation*>(context);
    if (!op->fsm.on_deadline()) return;
    op->tell(failure(errc::timeout,
                     fmt::format("unlock of '{}': no answer within {} ms; the release may "
                                 "still happen",
                                 op->s->name(), op->s->ctx->cfg.command_timeout.count())),
             true);
  }

  static void on_reply(owner op, std::error_code ec, const resp3::value& reply) {
    engine_context& c = *op->s->ctx;
    if (ec == errc::replicas_not_synced) {
      // Released on the master: that is what unlock means. A failover before a replica has it
      // would bring the hold back until its lease ends, which delays the next owner and
      // endangers nobody: logged, not failed (release_fsm counts it as answered).
      const auto& sync = c.cfg.sync_replicas;
      op->s->log(log_level::warning,
                 ": released, but fewer than {} replica(s) acknowledged it within {} ms "
                 "(sync_replicas)",
                 sync.replicas, sync.timeout.count());
      ec = {};
    }
    const bool written = op->written != clock_type::time_point{};
    const auto plan = op->fsm.on_answer(ec, reply.is_null(), reply.type == resp3::type::number,
                                        reply.integer, written);
    if (plan.late) {
      // Its caller was told the outcome is unknown (its bound passed): what the server did.
      op->s->log(log_level::debug, ": an unlock told to its caller as unknown was {}",
                 ec ? "not answered: " + ec.message() : "answered " + resp3::brief(reply));
    }
    // The issue 24 soak: a waiter let go to retry re-entered the hold handed to it, and nobody
    // knew of the second count. So a transfer whose answer says nothing certain is asked about.
    if (plan.settle_transfer) {
      settle_transfer(std::exchange(op->ticket, nullptr), op->begun, op->s->owner);
    }
    failure error;
    lock_state::release_outcome outcome;
    if (plan.record) {
      resp3::value released;
      released.type = resp3::type::number;
      released.integer = 1;
      outcome =
          op->s->on_released(plan.as_released ? released : reply, op->written, op->grants_at_start);
      error = std::move(outcome.error);
    } else if (plan.tell) {
      // Nobody to tell (its bound passed): the text is not built.
      error = failure_of(c, ec, reply, fmt::format("unlock of '{}'", op->s->name()));
    }
    if (plan.undo) op->s->release_not_sent(op->undo);
    // The new owner's lease started when the script first ran, no earlier than this release
    // began: not its last write (a retry after a reconnect returns the first run's answer).
    if (plan.finish_handoff) {
      finish_handoff(std::exchange(op->ticket, nullptr), plan.handed_over,
                     plan.record ? op->begun : clock_type::time_point{});
    }
    // Bookkeeping before the caller runs (it may resume inline): the answer is in, so the
    // latch has done its work; holds nobody has go back before anything the caller does next.
    if (plan.drop_latch) c.latches.add(op->latch);
    if (outcome.orphaned) give_back_orphans(op->s);
    if (outcome.verify) verify_hold(op->s);
    if (plan.tell) op->tell(std::move(error));
  }

  /// Asks the server whether a transfer whose answer was lost handed the lock to `t`'s waiter
  /// (the receiving owner's reconcile question, a query retried across reconnects), then grants
  /// the hold or lets the waiter retry. The waiter stays reserved meanwhile, so it cannot
  /// re-enter what it may already hold. Either way the new owner is marked maybe_orphaned: the
  /// transfer's bytes may still be on their way (a paused server, a held connection) and run
  /// after the answer, adding a hold that only a "still held" final unlock reveals.
  static void settle_transfer(std::shared_ptr<handoff_ticket> t, clock_type::time_point begun,
                              std::uint64_t from) {
    lock_state& to = *t->to;
    to.maybe_orphaned = true;
    to.ask(to.kind.reconcile_question(to.identity()),
           [t = std::move(t), begun, from](std::error_code ec, resp3::value&& answer) {
             bool ran = false;
             lock_state& receiver = *t->to;
             if (!ec && !answer.is_error()) {
               ran = receiver.kind.judge(receiver.server_holds, answer).what !=
                     reconcile_result::outcome::not_run;
             }
             receiver.log(log_level::debug,
                          ": the answer of a handoff to it from owner {} of this client was lost; "
                          "asked, the server says {} ({} known): {}",
                          from, ec ? ec.message() : resp3::brief(answer), receiver.server_holds,
                          ran ? "handed over" : "not handed over");
             // No answer: nobody knows; the waiter retries, and maybe_orphaned catches a second
             // count its attempt might add to a hold that did land.
             finish_handoff(t, ran, begun);
           });
  }

  /// Releases holds the server counts for this owner that no caller has, one per round trip
  /// (each release takes one); bounded, in case something else keeps adding them.
  static void give_back_orphans(const std::shared_ptr<lock_state>& s) {
    if (++s->orphan_releases > max_orphan_releases) return;
    s->log(log_level::debug,
           ": its final unlock was answered 'still held' after an acquire of it may have run "
           "late; giving back a hold nobody has ({} of at most {})",
           s->orphan_releases, max_orphan_releases);
    async_give_back(s, [](const failure&) {});
  }

  /// After on_released's `verify`: asks the server whether this owner still holds the lock
  /// (its hold count); none, while a caller here holds it, is a lost lock: reported as lost()
  /// now, not at the watchdog's next round. No answer: the watchdog's renewal tells.
  static void verify_hold(const std::shared_ptr<lock_state>& s) {
    auto question = s->kind.count_question != nullptr
                        ? s->kind.count_question(s->identity())
                        : command(command_kind::query, "HGET", {s->key()}, {s->field()});
    s->ask(std::move(question), [s, grants = s->grants](std::error_code ec, resp3::value&& answer) {
      if (ec || answer.is_error()) return;
      // A reply that is no count holds nothing.
      const std::int64_t count =
          s->kind.count_of != nullptr ? s->kind.count_of(answer) : as_integer(answer).value_or(0);
      // Granted again since the question, or released: nothing to judge.
      if (s->grants != grants || s->local_holds == 0) return;
      if (count > 0) {
        s->server_holds = static_cast<std::uint64_t>(count);
        return;
      }
      s->on_lease_lost(
          "released by an unlock of the same owner that began before this hold "
          "was granted");
    });
  }
  static constexpr std::uint8_t max_orphan_releases = 16;  // lock_state::orphan_releases

  /// Tells the caller (once). Posted when called from the deadline hook, which runs inside the
  /// session's bookkeeping.
  void tell(failure e, bool from_hook = false) {
    if (!handler) return;
    s->set_last_error(e);
    void_handler h(std::move(handler));
    // unlock() ignores cancellation: no slot handler was installed, none is cleared.
    deliver(s->executor(), std::move(h), asio::cancellation_slot(), from_hook, std::move(e));
  }

  std::shared_ptr<lock_state> s;
  void_handler handler;
  std::string names;         // the channel, then the latch key
  std::string_view channel;  // views into names
  std::string_view latch;
  decimal lease_arg;  // a lease other than the watchdog's
  release_script_call call;
  std::shared_ptr<handoff_ticket> ticket;  // a local handoff (config::local_handoff)
  release_fsm fsm{false};
  clock_type::time_point begun = clock_type::now();
  clock_type::time_point written{};
  lock_state::release_undo undo;
  std::uint32_t grants_at_start = 0;  // the owner's grants when it began (on_released)
  bool batched = false;               // sent in a batch (async_release)
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
      if (op->link->requested.load()) return finish(std::move(op), cancelled(), true);
    }
    lock_state& s = *op->s;
    if (s.lost) return finish(std::move(op), {}, true);
    if (!s.renewing()) {
      failure e(errc::not_owner, fmt::format("lock '{}' is not held through the watchdog by {}",
                                             s.name(), s.shown_field()));
      return finish(std::move(op), std::move(e), true);
    }
    if (!s.lost_signal) {
      s.lost_signal =
          std::make_unique<asio::steady_timer>(s.executor(), asio::steady_timer::time_point::max());
    }
    auto* p = op.get();
    s.lost_signal->async_wait(asio::bind_cancellation_slot(
        p->stop.slot(), [op = std::move(op)](boost::system::error_code) mutable {
          failure why;
          if (op->s->lost) {
            // Lost: what the caller waits for.
          } else if (op->link && op->link->requested.load()) {
            why = cancelled();
          } else {
            why =
                cancelled(fmt::format("lock '{}': no longer held here (released, or the "
                                      "client closed) before it was lost",
                                      op->s->name()));
          }
          finish(std::move(op), std::move(why), false);
        }));
  }

  /// Cancellation, on the client's executor.
  void on_cancel() { stop.emit(asio::cancellation_type::all); }

  static void finish(owner op, failure e, bool inside_initiation) {
    void_handler h(std::move(op->handler));
    const auto ex = op->s->executor();
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

}  // namespace

void async_lost(std::shared_ptr<lock_state> s, void_handler handler) {
  auto op = std::make_unique<lost_operation>(std::move(s), std::move(handler));
  const auto ex = op->s->executor();
  op->slot = asio::get_associated_cancellation_slot(op->handler);
  if (op->slot.is_connected()) {
    op->link = std::make_shared<cancel_link<lost_operation>>();
    install_cancellation(op->slot, op->link, ex);
  }
  asio::dispatch(ex, [op = std::move(op)]() mutable { lost_operation::start(std::move(op)); });
}

void async_release(std::shared_ptr<lock_state> s, void_handler handler, bool batched) {
  auto op = std::make_unique<release_operation>(std::move(s), std::move(handler));
  op->batched = batched;
  const auto ex = op->s->executor();
  on_client(ex, [op = std::move(op)]() mutable { release_operation::start(std::move(op)); });
}

void async_give_back(std::shared_ptr<lock_state> s, void_handler handler, bool after_handoff) {
  s->ctx->metrics.given_back(after_handoff);
  async_release(std::move(s), std::move(handler));
}

}  // namespace rlock::detail
