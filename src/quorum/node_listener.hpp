#pragma once

// A quorum waiter's ear on one node: a wait-hub waiter on the lock's channel of that node's
// client, with no acquisition behind it (owner null: a local handoff never picks it). It lives
// on its client's executor; what it hears (an unlock, its subscription confirmed again, the
// channel refused or the client closing) is handed to a callback on the quorum's executor.
#include "engine/engine_context.hpp"
#include "notify/notify_hub.hpp"
#include "rlock/detail/quorum_flights.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace rlock::detail {

class node_listener final : public notify_hub::waiter,
                            public std::enable_shared_from_this<node_listener> {
 public:
  enum class heard : std::uint8_t { unlock, subscribed, failed };
  /// Called on the quorum's executor: node `index` heard `what` (`why`: the failure's words).
  using sink = std::function<void(std::size_t index, heard what, const std::string& why)>;

  node_listener(std::shared_ptr<engine_context> ctx, std::string key, std::string channel_name,
                message_policy policy, std::size_t index, boost::asio::any_io_executor quorum_ex,
                quorum_flights::ticket away, sink to)
      : client_ex_(ctx->executor),
        hub_(ctx->hub),
        ctx_(std::move(ctx)),
        key_(std::move(key)),
        channel_(std::move(channel_name)),
        policy_(policy),
        index_(index),
        quorum_ex_(std::move(quorum_ex)),
        away_(std::move(away)),
        to_(std::move(to)) {}

  /// Joins the channel (subscribing if this client has no waiter on it yet). Any thread.
  void join() {
    boost::asio::post(client_ex_, [self = shared_from_this()] {
      if (self->left_) return;
      self->on_unpark = &node_listener::on_unparked;
      self->hub_.add(self->key_, self->channel_, self->policy_, *self);
      self->joined_ = true;
      self->settle();
    });
  }
  /// Leaves the channel (the client's last waiter on it unsubscribes); nothing more is heard.
  /// Any thread.
  void leave() {
    boost::asio::post(client_ex_, [self = shared_from_this()] {
      self->left_ = true;
      if (self->joined_) self->hub_.remove(*self);
      self->joined_ = false;
      self->to_ = nullptr;
      // Nothing more goes to the quorum's executor: the last word says so there.
      if (self->away_) boost::asio::post(self->quorum_ex_, [back = std::move(*self->away_)] {});
      self->away_.reset();
    });
  }

 private:
  // From inside the hub: only schedules (the hub must not be re-entered).
  static void on_unparked(notify_hub::waiter& w) {
    auto self = static_cast<node_listener&>(w).shared_from_this();
    boost::asio::post(self->client_ex_, [self] { self->settle(); });
  }

  /// Reads what woke it, passes it on, and sleeps again (until the next wake-up).
  void settle() {
    if (left_ || !joined_) return;
    notify_hub& h = hub_;
    if (failed) {
      std::string why = h.refusal_of(*this);
      if (why.empty()) why = h.failure_of(*this).message();
      tell(heard::failed, why);
      h.remove(*this);
      joined_ = false;
      return;
    }
    if (woken) {
      const heard what = by_message ? heard::unlock : heard::subscribed;
      woken = false;
      by_message = false;
      tell(what, {});
    }
    if (!asleep()) h.sleep(*this, notify_hub::clock::time_point::max());
  }

  void tell(heard what, std::string why) {
    if (!to_) return;
    boost::asio::post(quorum_ex_,
                      [to = to_, i = index_, what, why = std::move(why)] { to(i, what, why); });
  }

  // What it uses of its node's client: the executor and the hub; the context only stays alive.
  boost::asio::any_io_executor client_ex_;
  notify_hub& hub_;
  std::shared_ptr<engine_context> ctx_;
  std::string key_;
  std::string channel_;
  message_policy policy_;
  std::size_t index_;
  boost::asio::any_io_executor quorum_ex_;
  std::optional<quorum_flights::ticket> away_;  // until it left (client's executor only)
  sink to_;                                     // client's executor only
  bool joined_ = false;
  bool left_ = false;
};

}  // namespace rlock::detail
