#pragma once

// An election observer's ear on its client: a wait-hub waiter on the election's channel that
// hears every payload (notify_hub::payload_sink), orders what it hears with an
// observer_sequence, and after every (re)confirmation of the channel reads the record (Redis does
// not replay what was published while a connection was down). Lives on the client's executor;
// what it tells waits in a queue for the observer's next().
#include "election/leader_record.hpp"
#include "election/observer_sequence.hpp"
#include "engine/delivery.hpp"
#include "engine/engine_context.hpp"
#include "engine/lock_state.hpp"
#include "engine/round_trip.hpp"
#include "names/names.hpp"
#include "notify/notify_hub.hpp"
#include "rlock/election_change.hpp"
#include "rlock/error.hpp"

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include <array>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace rlock::detail {

/// rlock's failure (a waiter's own failure() hides the name inside the listener).
using listener_failure = failure;

class election_listener final : public notify_hub::waiter,
                                public notify_hub::payload_sink,
                                public std::enable_shared_from_this<election_listener> {
 public:
  /// At most this many changes wait for next(); an observer that does not read drops the oldest
  /// (its next change tells how many it skipped).
  static constexpr std::size_t queue_bound = 1024;

  explicit election_listener(std::shared_ptr<lock_state> s) : s_(std::move(s)) {
    append_tagged_name(election_channel_prefix, s_->key(), channel_);
    append_tagged_name(election_record_prefix, s_->key(), record_);
    counter_ = token_counter(s_->key());
    keys_ = {s_->key(), record_, counter_};
    heard = &election_listener::on_heard;
    on_unpark = &election_listener::on_unparked;
  }

  /// Joins the channel (subscribing if this client has no other observer of it). Any thread.
  void join() {
    boost::asio::post(s_->executor(), [self = shared_from_this()] {
      if (self->left_) return;
      notify_hub& joined = self->s_->ctx->hub;
      if (const auto closed = joined.closed()) {
        self->fail(
            listener_failure(closed, fmt::format("election '{}': observing a closed client ({})",
                                                 self->s_->name(), closed.message())));
        return;
      }
      joined.add(self->s_->key(), self->channel_, &election_listener::no_wake, *self);
      joined.listen(*self, *self);
      self->joined_ = true;
      self->settle();
    });
  }

  /// Leaves the channel; a next() waiting completes with operation_aborted. Any thread.
  void leave() {
    boost::asio::post(s_->executor(), [self = shared_from_this()] {
      self->left_ = true;
      if (self->joined_) self->waiter::leave();
      self->joined_ = false;
      self->fail(
          listener_failure(boost::asio::error::operation_aborted, "the observer was closed"));
    });
  }

  /// Completes `h` with the next change (queued, or the next one heard). Any thread. Its
  /// cancellation is installed here, in the initiating call: one emitted before `h` reaches the
  /// executor still ends it (the two are posted in order).
  void next(handler<election_change> h) {
    auto slot = boost::asio::get_associated_cancellation_slot(h);
    if (slot.is_connected()) {
      slot.assign([weak = weak_from_this(), ex = s_->executor()](boost::asio::cancellation_type) {
        boost::asio::post(ex, [weak] {
          if (auto self = weak.lock()) self->cancel();
        });
      });
    }
    boost::asio::post(s_->executor(), [self = shared_from_this(), h = std::move(h),
                                       slot]() mutable { self->take(std::move(h), slot); });
  }

  const boost::asio::any_io_executor& executor() const noexcept { return s_->executor(); }

 private:
  /// The channel's messages wake nobody: its payloads go to the sinks.
  static wake_policy no_wake(std::string_view, std::uint32_t&) noexcept {
    return wake_policy::none;
  }

  // From inside the hub: only queues and schedules (the hub must not be re-entered).
  static void on_heard(notify_hub::payload_sink& sink, std::string_view payload) {
    auto& self = static_cast<election_listener&>(sink);
    auto parsed = parse_election_message(payload);
    if (!parsed.change) {
      // Anybody may publish on a channel: a stranger's message is reported, never believed.
      self.s_->log(log_level::warning, "election channel '{}': {}; ignored", self.channel_,
                   parsed.error);
      return;
    }
    if (self.order_.stale_message(*parsed.change)) {
      // Below the last change told: a late message, or a record begun again after the server
      // lost its data; the record says which (read on the executor: not from inside the hub).
      boost::asio::post(self.s_->executor(), [weak = self.weak_from_this()] {
        if (auto me = weak.lock(); me && !me->left_) me->read_record();
      });
      return;
    }
    self.enqueue(self.order_.on_message(std::move(*parsed.change)));
  }
  static void on_unparked(notify_hub::waiter& w) {
    auto self = static_cast<election_listener&>(w).shared_from_this();
    boost::asio::post(self->s_->executor(), [self] { self->settle(); });
  }

  /// Reads what woke it (its channel confirmed again, or failed) and sleeps again.
  void settle() {
    if (left_ || !joined_) return;
    if (failed) {
      std::string why = refusal();
      const std::error_code code = waiter::failure();
      if (why.empty()) why = code.message();
      waiter::leave();
      joined_ = false;
      fail(listener_failure(
          code, fmt::format("election '{}': observing {}: {}", s_->name(), channel_, why)));
      return;
    }
    if (woken) {
      woken = false;
      by_message = false;
      read_record();
    }
    if (!asleep()) sleep(notify_hub::clock::time_point::max());
  }

  /// The record, read after the channel was (re)confirmed: the state as it is now.
  void read_record() {
    if (reading_) {
      read_again_ = true;  // confirmed again while the read was out: one more after it
      return;
    }
    reading_ = true;
    s_->ctx->scripts.async_run(
        script::election_leader, keys_, {}, round_trip(*s_),
        [self = shared_from_this()](std::error_code ec, const resp3::value& reply) {
          self->reading_ = false;
          if (self->left_) return;
          if (ec || reply.is_error()) {
            const auto f = failure_of(*self->s_->ctx, ec, reply, "election record");
            self->s_->set_last_error(f);
            self->s_->log(log_level::warning, "election '{}': the record was not read: {}",
                          self->s_->name(), f.text());
          } else if (auto r = read_leader_record(reply)) {
            if (r->seq > 0) self->enqueue(self->order_.on_snapshot(snapshot_of(*r)));
          } else {
            self->s_->log(log_level::warning, "election '{}': unexpected record reply {}",
                          self->s_->name(), resp3::brief(reply));
          }
          if (std::exchange(self->read_again_, false)) self->read_record();
        });
  }

  void enqueue(std::optional<election_change> c) {
    if (!c) return;
    // Bounded: the order's counter keeps the gap, and the next change tells it as `skipped`.
    if (ready_.size() == queue_bound) {
      const auto dropped = ready_.front();
      ready_.pop_front();
      ready_.front().skipped += dropped.skipped + 1;
    }
    ready_.push_back(std::move(*c));
    if (waiting_) boost::asio::post(s_->executor(), [self = shared_from_this()] { self->give(); });
  }

  void take(handler<election_change> h, boost::asio::cancellation_slot slot) {
    if (waiting_) {
      const auto ex = s_->executor();
      ops::deliver(ex, std::move(h), slot, false,
                   listener_failure(errc::invalid_argument,
                                    fmt::format("election '{}': an observer's next() is already "
                                                "waiting; call it once at a time",
                                                s_->name())),
                   election_change{});
      return;
    }
    waiting_.emplace(std::move(h));
    slot_ = slot;
    if (std::exchange(cancelled_, false)) {
      answer(listener_failure(boost::asio::error::operation_aborted, "next() was cancelled"), {});
      return;
    }
    give();
  }

  /// A cancellation of next(): of the one waiting, or of the one posted behind it.
  void cancel() {
    if (waiting_) {
      answer(listener_failure(boost::asio::error::operation_aborted, "next() was cancelled"), {});
    } else {
      cancelled_ = true;
    }
  }

  /// Gives the waiting next() what is there: a change, or the failure once the queue is empty.
  void give() {
    if (!waiting_) return;
    if (!ready_.empty()) {
      auto c = std::move(ready_.front());
      ready_.pop_front();
      answer({}, std::move(c));
    } else if (error_) {
      answer(listener_failure(*error_), {});
    }
  }

  void answer(listener_failure f, election_change c) {
    if (!waiting_) return;
    auto h = std::move(*waiting_);
    waiting_.reset();
    const auto slot = std::exchange(slot_, boost::asio::cancellation_slot());
    if (f) s_->set_last_error(f);
    ops::deliver(s_->executor(), std::move(h), slot, false, std::move(f), std::move(c));
  }

  void fail(listener_failure f) {
    if (!error_) error_.emplace(std::move(f));
    give();
  }

  std::shared_ptr<lock_state> s_;  // the election's names, client, executor and last error
  std::string channel_;
  std::string record_;
  std::string counter_;
  std::array<std::string_view, 3> keys_{};  // election_leader's: lock, record, counter
  observer_sequence order_;
  std::deque<election_change> ready_;
  std::optional<handler<election_change>> waiting_;
  boost::asio::cancellation_slot slot_;
  std::optional<listener_failure>
      error_;  // the channel failed or the observer closed: after the queue
  bool joined_ = false;
  bool left_ = false;
  bool reading_ = false;
  bool read_again_ = false;
  bool cancelled_ = false;  // a next() was cancelled before it arrived here
};

}  // namespace rlock::detail
