#pragma once

#include "resp3/value.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/circular_buffer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace rlock::detail {

using clock_type = std::chrono::steady_clock;

/// What the answer to a request looks like. Every written request has exactly one record of it,
/// so no answer can ever be taken for another request's.
enum class answer_kind : std::uint8_t {
  /// One RESP3 value that is not a push.
  reply,
  /// The push `["subscribe", channel, n]`, or an error reply (e.g. `-NOPERM`).
  subscribe,
  /// The push `["unsubscribe", channel, n]`, or an error reply.
  unsubscribe,
};

/// What a request becomes when it was written and its connection died before the answer came:
/// its outcome is unknown (the server may have run it, or not).
enum class if_unknown : std::uint8_t {
  /// Complete with errc::connection_lost; the caller reconciles (an acquire) or reports it.
  fail,
  /// Idempotent (queries, renewals, a latched release): write it again on the next connection.
  retry,
};

/// The completion of a request: its answer (an error reply is an answer, returned as a value), or
/// why there is none. errc::timeout and errc::connection_lost after the request was written mean
/// that its outcome is unknown; `written` in the request's options tells which. The answer comes
/// as an rvalue: a handler reads it in place or takes it (every reply's path: no copies).
using reply_handler = boost::asio::any_completion_handler<void(std::error_code, resp3::value&&)>;

struct request_options {
  /// After this, a request still queued is failed with errc::timeout (it never reached the
  /// server); one already written is failed with errc::timeout too, unless `on_deadline` is set.
  clock_type::time_point deadline = clock_type::time_point::max();
  if_unknown unknown = if_unknown::fail;
  /// Handshake requests (HELLO, SELECT, SCRIPT LOAD) are the only ones written to a connection
  /// that is not ready yet; they are never retried on another connection.
  bool handshake = false;
  /// For callers that must see a late answer (an acquire that may have taken the lock): at the
  /// deadline of a written request, `on_deadline(context)` is called instead of failing it, and
  /// the request goes on waiting for its answer or its connection's end.
  void (*on_deadline)(void*) = nullptr;
  void* context = nullptr;
  /// Set to the time the request was (last) written: a lease counts from its send time.
  clock_type::time_point* written_at = nullptr;
  /// How many replies the payload's commands produce (a script followed by `WAIT`: 2). With
  /// more than one, they are written together, so they run on one connection back to back, and
  /// the handler gets them as one array, in order: all of them, or none (an error).
  std::uint8_t answers = 1;
};

/// Sans-I/O request bookkeeping of one connection, in the way of Boost.Redis's multiplexer:
/// requests are queued, written in order, and matched to answers in order; pushes that are not
/// (un)subscribe confirmations go to the push handler. It does no I/O: the connection feeds it the
/// values it reads and writes what `prepare_write` hands out. Handlers run inside these calls
/// (never inside `add`), after the multiplexer's own state is consistent, so they may add
/// requests.
class multiplexer {
 public:
  using id_type = std::uint64_t;
  using push_handler = std::function<void(resp3::value&)>;

  multiplexer() = default;
  multiplexer(const multiplexer&) = delete;
  multiplexer& operator=(const multiplexer&) = delete;

  /// Queues a request. `channel` names the channel of a (un)subscribe request (one per request).
  id_type add(std::string payload, answer_kind kind, std::string channel, request_options opts,
              reply_handler handler);

  /// Moves queued requests to the written list, in order, appending their bytes to `out`:
  /// handshake requests always, the others only once the connection is `ready`. A request whose
  /// deadline has passed is never written; it stays for expire(). Returns how many were moved.
  std::size_t prepare_write(std::string& out, bool ready, clock_type::time_point now);

  /// What reading a value means for the connection.
  enum class verdict : std::uint8_t {
    ok,
    /// An answer no written request expects (a reply with nothing written, a confirmation for
    /// another channel, a plain reply where a confirmation was due): the stream cannot be
    /// trusted and the connection must be dropped.
    out_of_step,
  };
  verdict on_value(resp3::value& v);

  /// The connection is gone. Written requests: idempotent ones go back to the head of the queue
  /// (in their order); the others fail with `reason` (their outcome is unknown). Queued requests
  /// stay queued for the next connection, except handshake ones, which fail.
  void on_connection_lost(std::error_code reason);

  /// Fails the queued requests (not the written ones) with `reason`: fail-fast while down.
  void fail_queued(std::error_code reason);

  /// Fails every request, queued and written, with `reason` (the client is closing).
  void fail_all(std::error_code reason);

  /// Applies deadlines that have passed by `now` (see request_options::deadline).
  void expire(clock_type::time_point now);
  /// The earliest deadline of a request that still has one to apply.
  clock_type::time_point next_deadline() const noexcept;

  /// Withdraws a request that is still queued, failing it with `reason`; false once written
  /// (its answer is then awaited as usual).
  bool withdraw(id_type id, std::error_code reason);

  void set_push_handler(push_handler h) { on_push_ = std::move(h); }

  std::size_t queued() const noexcept { return queued_.size() + handshake_.size(); }
  std::size_t written() const noexcept { return written_.size(); }
  /// Requests written again after their connection died unanswered (stats).
  std::uint64_t retried() const noexcept { return retried_; }
  /// When the latest request answered so far was written (epoch: none yet). Pushes read after
  /// that answer were sent by the server after it ran that request.
  clock_type::time_point last_answered_write() const noexcept { return last_answered_write_; }

 private:
  /// A reply_handler that can be move-assigned: Boost 1.81's any_completion_handler move
  /// assignment recurses into its converting constructor, and the queues move-assign on erase.
  struct handler_box {
    reply_handler h;
    handler_box(reply_handler x) noexcept : h(std::move(x)) {}
    handler_box(handler_box&& o) noexcept : h(std::move(o.h)) {}
    handler_box& operator=(handler_box&& o) noexcept {
      reply_handler taken(std::move(o.h));
      h.swap(taken);
      return *this;
    }
    explicit operator bool() const noexcept { return static_cast<bool>(h); }
  };

  struct record {
    id_type id = 0;
    std::string payload;  // kept while the request may still be (re)written
    std::string channel;
    answer_kind kind = answer_kind::reply;
    request_options opts;
    handler_box handler{reply_handler{}};     // empty: the caller was told; the answer is dropped
    std::unique_ptr<resp3::value> collected;  // the replies so far, when opts.answers > 1
    /// Written at least once: back in the queue after a reconnect, it is still `unknown`.
    bool was_written = false;
    clock_type::time_point written{};  // its latest write
  };

  /// Records live in reused slots and the queues hold slot numbers: a request passes from the
  /// queue to the written list to its answer as a number, never moved as a ~200-byte record, and
  /// nothing is allocated per request in the steady state (std::deque allocated and freed a
  /// 512-byte chunk every other request, in each queue: malloc and free topped S1's profile).
  using slot = std::uint32_t;
  /// A FIFO of slot numbers. Grows by doubling; never shrinks.
  class slot_queue {
   public:
    using iterator = boost::circular_buffer<slot>::iterator;
    bool empty() const noexcept { return buf_.empty(); }
    std::size_t size() const noexcept { return buf_.size(); }
    slot front() const noexcept { return buf_.front(); }
    iterator begin() noexcept { return buf_.begin(); }
    iterator end() noexcept { return buf_.end(); }
    void push_back(slot s) {
      grow();
      buf_.push_back(s);
    }
    void push_front(slot s) {
      grow();
      buf_.push_front(s);
    }
    void pop_front() noexcept { buf_.pop_front(); }
    iterator erase(iterator it) { return buf_.erase(it); }
    void clear() noexcept { buf_.clear(); }

   private:
    void grow() {
      if (buf_.full()) buf_.set_capacity(std::max<std::size_t>(16, 2 * buf_.capacity()));
    }
    boost::circular_buffer<slot> buf_;
  };

  slot take_slot();
  /// Frees `s` and completes its handler (if it still has one) with (ec, v). Everything is moved
  /// out of the slot first: the handler may add requests, which may reuse it.
  void finish(slot s, std::error_code ec, resp3::value&& v);
  void note_deadline(clock_type::time_point d) noexcept;

  record& at(slot s) noexcept { return chunks_[s / chunk_size][s % chunk_size]; }
  const record& at(slot s) const noexcept { return chunks_[s / chunk_size][s % chunk_size]; }

  /// Slots kept when nothing is in flight; above this, an idle multiplexer frees them all.
  static constexpr std::size_t idle_slots_kept = 64;
  /// Records live in chunks that never move: a burst of requests (bench S6: 100 000 first
  /// attempts at once) grows the storage a chunk at a time, never holding an old and a new
  /// copy of it, and a record in use never moves.
  static constexpr std::size_t chunk_size = 256;
  std::vector<std::unique_ptr<record[]>> chunks_;
  std::size_t slot_count_ = 0;  // slots handed out of the chunks (free or in use)
  std::vector<slot> free_;
  slot_queue handshake_;
  slot_queue queued_;
  slot_queue written_;
  push_handler on_push_;
  id_type next_id_ = 1;
  std::uint64_t retried_ = 0;
  clock_type::time_point last_answered_write_{};
  clock_type::time_point next_deadline_ = clock_type::time_point::max();
};

}  // namespace rlock::detail
