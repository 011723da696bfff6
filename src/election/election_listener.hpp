#pragma once

// An election observer's ear on one client: a wait-hub waiter on the election's channel that
// hears every payload (notify_hub::payload_sink) and after every (re)confirmation of the channel
// reads the record (Redis does not replay what was published while a connection was down). Lives
// on its client's executor; what it hears goes to the observer's change_queue, which orders it
// (one ear per node of a quorum-backed election feeds one queue).
#include "election/change_queue.hpp"
#include "election/leader_record.hpp"
#include "engine/delivery.hpp"
#include "engine/engine_context.hpp"
#include "engine/lock_state.hpp"
#include "engine/round_trip.hpp"
#include "names/names.hpp"
#include "notify/notify_hub.hpp"
#include "rlock/election_change.hpp"
#include "rlock/error.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include <array>
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
  /// An ear for `queue` on the client of `s` (its key names the election). `counter` is the key
  /// of the term's counter the record read answers beside (the fenced lock's, or the quorum's).
  /// `one_record`: the only ear of its queue, whose stale messages ask for a read of the record
  /// (the one record may have begun again); a quorum's ears leave the order to the others.
  election_listener(std::shared_ptr<lock_state> s, std::shared_ptr<change_queue> queue,
                    std::string counter, bool one_record)
      : s_(std::move(s)),
        queue_(std::move(queue)),
        counter_(std::move(counter)),
        one_record_(one_record) {
    append_tagged_name(election_channel_prefix, s_->key(), channel_);
    append_tagged_name(election_record_prefix, s_->key(), record_);
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

  /// Leaves the channel. Any thread.
  void leave() {
    boost::asio::post(s_->executor(), [self = shared_from_this()] {
      self->left_ = true;
      if (self->joined_) self->waiter::leave();
      self->joined_ = false;
    });
  }

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
    if (self.one_record_) {
      // The queue lives on this executor.
      if (self.queue_->offer_message(std::move(*parsed.change))) {
        // Below the last change told: a late message, or a record begun again after the
        // server lost its data; the record says which (read on the executor: not from inside
        // the hub).
        boost::asio::post(self.s_->executor(), [weak = self.weak_from_this()] {
          if (auto me = weak.lock(); me && !me->left_) me->read_record();
        });
      }
      return;
    }
    boost::asio::post(self.queue_->executor(),
                      [q = self.queue_, c = std::move(*parsed.change)]() mutable {
                        (void)q->offer_message(std::move(c));  // a node behind: the others lead
                      });
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
            if (r->seq > 0) {
              boost::asio::dispatch(self->queue_->executor(),
                                    [q = self->queue_, c = snapshot_of(*r)]() mutable {
                                      q->offer_snapshot(std::move(c));
                                    });
            }
          } else {
            self->s_->log(log_level::warning, "election '{}': unexpected record reply {}",
                          self->s_->name(), resp3::brief(reply));
          }
          if (std::exchange(self->read_again_, false)) self->read_record();
        });
  }

  void fail(listener_failure f) {
    boost::asio::dispatch(queue_->executor(),
                          [q = queue_, f = std::move(f)]() mutable { q->fail(std::move(f)); });
  }

  std::shared_ptr<lock_state> s_;  // the election's names, client, executor and last error
  std::shared_ptr<change_queue> queue_;
  std::string channel_;
  std::string record_;
  std::string counter_;
  std::array<std::string_view, 3> keys_{};  // election_leader's: lock, record, counter
  bool one_record_;
  bool joined_ = false;
  bool left_ = false;
  bool reading_ = false;
  bool read_again_ = false;
};

}  // namespace rlock::detail
