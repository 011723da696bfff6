#pragma once

// What an election observer is told, waiting for its next(): the changes its listeners heard
// (one listener on one deployment, or one per node of a quorum-backed election), put in order by
// one observer_sequence, held in a bounded queue, and given to next() one at a time. Lives on one
// executor; the listeners bring what they hear there.
#include "election/observer_sequence.hpp"
#include "engine/delivery.hpp"
#include "rlock/election_change.hpp"
#include "rlock/error.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace rlock::detail {

class change_queue : public std::enable_shared_from_this<change_queue> {
 public:
  /// At most this many changes wait for next(); an observer that does not read drops the oldest
  /// (its next change tells how many it skipped).
  static constexpr std::size_t queue_bound = 1024;

  /// `note_error` keeps the words of a failure told (the election's last_error()).
  change_queue(boost::asio::any_io_executor ex, std::string name, election_numbering numbering,
               std::function<void(const failure&)> note_error)
      : ex_(std::move(ex)),
        name_(std::move(name)),
        order_(numbering),
        note_error_(std::move(note_error)) {}

  const boost::asio::any_io_executor& executor() const noexcept { return ex_; }

  // --- on the executor ------------------------------------------------------------------------

  /// A message heard: queued if newer than everything told. Whether it was stale (older than
  /// the last change told), which for one record asks for a read of it.
  bool offer_message(election_change c) {
    if (order_.stale_message(c)) return true;
    enqueue(order_.on_message(std::move(c)));
    return false;
  }
  /// A record read: the state as it is, queued as a snapshot if newer.
  void offer_snapshot(election_change c) { enqueue(order_.on_snapshot(std::move(c))); }

  /// The observer ends with `f` once what is queued was read (the first failure stays).
  void fail(failure f) {
    if (!error_) error_.emplace(std::move(f));
    give();
  }

  // --- any thread -----------------------------------------------------------------------------

  /// Completes `h` with the next change (queued, or the next one heard). Its cancellation is
  /// installed here, in the initiating call: one emitted before `h` reaches the executor still
  /// ends it (the two are posted in order).
  void next(handler<election_change> h) {
    auto slot = boost::asio::get_associated_cancellation_slot(h);
    if (slot.is_connected()) {
      slot.assign([weak = weak_from_this(), ex = ex_](boost::asio::cancellation_type) {
        boost::asio::post(ex, [weak] {
          if (auto self = weak.lock()) self->cancel();
        });
      });
    }
    boost::asio::post(ex_, [self = shared_from_this(), h = std::move(h), slot]() mutable {
      self->take(std::move(h), slot);
    });
  }

  /// Ends the observer: a next() waiting completes with operation_aborted.
  void close() {
    boost::asio::post(ex_, [self = shared_from_this()] {
      self->fail(failure(boost::asio::error::operation_aborted, "the observer was closed"));
    });
  }

 private:
  void enqueue(std::optional<election_change> c) {
    if (!c) return;
    // Bounded: the order's counter keeps the gap, and the next change tells it as `skipped`.
    if (ready_.size() == queue_bound) {
      const auto dropped = ready_.front();
      ready_.pop_front();
      ready_.front().skipped += dropped.skipped + 1;
    }
    ready_.push_back(std::move(*c));
    if (waiting_) boost::asio::post(ex_, [self = shared_from_this()] { self->give(); });
  }

  void take(handler<election_change> h, boost::asio::cancellation_slot slot) {
    if (waiting_) {
      ops::deliver(ex_, std::move(h), slot, false,
                   failure(errc::invalid_argument,
                           fmt::format("election '{}': an observer's next() is already "
                                       "waiting; call it once at a time",
                                       name_)),
                   election_change{});
      return;
    }
    waiting_.emplace(std::move(h));
    slot_ = slot;
    if (std::exchange(cancelled_, false)) {
      answer(failure(boost::asio::error::operation_aborted, "next() was cancelled"), {});
      return;
    }
    give();
  }

  /// A cancellation of next(): of the one waiting, or of the one posted behind it.
  void cancel() {
    if (waiting_) {
      answer(failure(boost::asio::error::operation_aborted, "next() was cancelled"), {});
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
      answer(*error_, {});
    }
  }

  void answer(failure f, election_change c) {
    if (!waiting_) return;
    auto h = std::move(*waiting_);
    waiting_.reset();
    const auto slot = std::exchange(slot_, boost::asio::cancellation_slot());
    if (f && note_error_) note_error_(f);
    ops::deliver(ex_, std::move(h), slot, false, std::move(f), std::move(c));
  }

  boost::asio::any_io_executor ex_;
  std::string name_;
  observer_sequence order_;
  std::function<void(const failure&)> note_error_;
  std::deque<election_change> ready_;
  std::optional<handler<election_change>> waiting_;
  boost::asio::cancellation_slot slot_;
  std::optional<failure> error_;  // the channel failed or the observer closed: after the queue
  bool cancelled_ = false;        // a next() was cancelled before it arrived here
};

}  // namespace rlock::detail
