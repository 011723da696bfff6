#include "session/node/multiplexer.hpp"

#include "rlock/error.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace rlock::detail {

namespace {

bool is_confirmation(std::string_view kind, answer_kind expected) {
  // Sharded pub/sub (Redis Cluster 7) confirms with "ssubscribe" / "sunsubscribe".
  switch (expected) {
    case answer_kind::subscribe:
      return kind == "subscribe" || kind == "ssubscribe";
    case answer_kind::unsubscribe:
      return kind == "unsubscribe" || kind == "sunsubscribe";
    case answer_kind::reply:
      return false;
  }
  return false;
}

bool is_confirmation_kind(std::string_view kind) {
  return is_confirmation(kind, answer_kind::subscribe) ||
         is_confirmation(kind, answer_kind::unsubscribe);
}

}  // namespace

multiplexer::slot multiplexer::take_slot() {
  if (!free_.empty()) {
    const slot s = free_.back();
    free_.pop_back();
    return s;
  }
  if (slot_count_ % chunk_size == 0) chunks_.push_back(std::make_unique<record[]>(chunk_size));
  return static_cast<slot>(slot_count_++);
}

void multiplexer::finish(slot s, std::error_code ec, resp3::value&& v) {
  record& r = at(s);
  reply_handler h(std::move(r.handler.h));
  // What add() does not overwrite: a kept payload's memory, and replies collected so far.
  if (!r.payload.empty()) std::string().swap(r.payload);
  if (!r.channel.empty()) std::string().swap(r.channel);
  r.collected.reset();
  free_.push_back(s);
  if (free_.size() == slot_count_ && slot_count_ > idle_slots_kept) {
    // Nothing in flight after a burst (100 000 waiters' first attempts at once): give the
    // memory back instead of keeping slots for the peak forever. Every queue is empty now.
    chunks_.clear();
    chunks_.shrink_to_fit();
    slot_count_ = 0;
    std::vector<slot>().swap(free_);
    handshake_ = slot_queue();
    queued_ = slot_queue();
    written_ = slot_queue();
  }
  if (h) std::move(h)(ec, std::move(v));
}

void multiplexer::note_deadline(clock_type::time_point d) noexcept {
  next_deadline_ = std::min(next_deadline_, d);
}

multiplexer::id_type multiplexer::add(std::string payload, answer_kind kind, std::string channel,
                                      request_options opts, reply_handler handler) {
  const id_type id = next_id_++;
  note_deadline(opts.deadline);
  const slot s = take_slot();
  record& r = at(s);
  r.id = id;
  r.payload = std::move(payload);
  r.channel = std::move(channel);
  r.kind = kind;
  r.opts = opts;
  r.was_written = false;
  r.handler = handler_box(std::move(handler));
  (opts.handshake ? handshake_ : queued_).push_back(s);
  return id;
}

std::size_t multiplexer::prepare_write(std::string& out, bool ready, clock_type::time_point now) {
  std::size_t n = 0;
  auto take = [&](slot_queue& from) {
    std::vector<slot> late;  // empty (no allocation) unless a request is past its deadline
    while (!from.empty()) {
      const slot s = from.front();
      from.pop_front();
      record& r = at(s);
      if (r.opts.deadline <= now) {
        // Never write a request past its deadline (a renewal sent after its holder stopped
        // believing would extend a lease nobody holds): it stays queued for expire() to fail.
        late.push_back(s);
        continue;
      }
      out.append(r.payload);
      r.was_written = true;
      r.written = now;
      if (r.opts.written_at != nullptr) *r.opts.written_at = now;
      // Only an idempotent request is ever written again; the others need not keep their bytes.
      if (r.opts.unknown != if_unknown::retry || r.opts.handshake) r.payload = std::string();
      written_.push_back(s);
      ++n;
    }
    for (auto it = late.rbegin(); it != late.rend(); ++it) from.push_front(*it);
  };
  take(handshake_);
  if (ready) take(queued_);
  return n;
}

multiplexer::verdict multiplexer::on_value(resp3::value& v) {
  if (v.is_push()) {
    const std::string_view kind =
        v.elements.empty() ? std::string_view{} : std::string_view(v.elements.front().str);
    if (!is_confirmation_kind(kind)) {
      if (on_push_) on_push_(v);
      return verdict::ok;
    }
    // Redis answers commands in order, and a confirmation is the answer to one: it must match
    // the oldest written request exactly.
    const bool matches = !written_.empty() && is_confirmation(kind, at(written_.front()).kind) &&
                         v.elements.size() >= 2 &&
                         v.elements[1].str == at(written_.front()).channel;
    if (!matches && kind == "sunsubscribe") {
      // Not an answer: Redis 7 unsubscribes a sharded channel by itself when its slot moves to
      // another node (or the node loses it in a failover). The connection re-places it.
      if (on_push_) on_push_(v);
      return verdict::ok;
    }
    if (!matches) return verdict::out_of_step;
  } else if (written_.empty() ||
             (at(written_.front()).kind != answer_kind::reply && !v.is_error())) {
    // A reply nobody asked for, or a plain reply where a confirmation (or a refusal) was due.
    return verdict::out_of_step;
  }
  const slot s = written_.front();
  last_answered_write_ = at(s).written;
  if (record& front = at(s); front.opts.answers > 1) {
    // One of several replies: the request is answered by the last one.
    if (!front.collected) {
      front.collected = std::make_unique<resp3::value>();
      front.collected->type = resp3::type::array;
    }
    front.collected->elements.push_back(std::move(v));
    if (front.collected->elements.size() < front.opts.answers) return verdict::ok;
    written_.pop_front();
    resp3::value all = std::move(*front.collected);
    finish(s, {}, std::move(all));
    return verdict::ok;
  }
  written_.pop_front();
  finish(s, {}, std::move(v));
  return verdict::ok;
}

void multiplexer::on_connection_lost(std::error_code reason) {
  std::vector<slot> failed;
  std::vector<slot> again;
  for (const slot s : written_) {
    record& r = at(s);
    if (!r.handler) {
      // The caller was told already; nothing to do with its answer.
      failed.push_back(s);
    } else if (r.opts.unknown == if_unknown::retry && !r.opts.handshake) {
      r.collected.reset();  // written again: all its replies come again
      again.push_back(s);
    } else {
      failed.push_back(s);
    }
  }
  written_.clear();
  for (const slot s : handshake_) failed.push_back(s);
  handshake_.clear();
  retried_ += again.size();
  // Written requests are older than queued ones: they go first, in their order.
  for (auto it = again.rbegin(); it != again.rend(); ++it) queued_.push_front(*it);
  for (const slot s : failed) finish(s, reason, {});
}

void multiplexer::fail_queued(std::error_code reason) {
  std::vector<slot> failed(queued_.begin(), queued_.end());
  queued_.clear();
  for (const slot s : failed) finish(s, reason, {});
}

void multiplexer::fail_all(std::error_code reason) {
  std::vector<slot> failed;
  for (auto* q : {&written_, &handshake_, &queued_}) {
    failed.insert(failed.end(), q->begin(), q->end());
    q->clear();
  }
  for (const slot s : failed) finish(s, reason, {});
}

void multiplexer::expire(clock_type::time_point now) {
  std::vector<slot> timed_out;
  std::vector<reply_handler> unknown;  // written, deadline passed: the answer will be dropped
  std::vector<std::pair<void (*)(void*), void*>> hooks;
  next_deadline_ = clock_type::time_point::max();
  for (auto* q : {&handshake_, &queued_}) {
    // Never written: they certainly did not run, so they simply fail. One written before a
    // reconnect and queued again is still unknown: with a deadline hook it is treated as a
    // written one (the caller is told, the request stays to be written again and its late
    // answer still reaches the operation), not as one that never ran.
    for (auto it = q->begin(); it != q->end();) {
      record& r = at(*it);
      auto& opts = r.opts;
      if (opts.deadline <= now && r.was_written && opts.on_deadline != nullptr && r.handler) {
        hooks.emplace_back(std::exchange(opts.on_deadline, nullptr), opts.context);
        opts.deadline = clock_type::time_point::max();
        ++it;
      } else if (opts.deadline <= now) {
        timed_out.push_back(*it);
        it = q->erase(it);
      } else {
        note_deadline(opts.deadline);
        ++it;
      }
    }
  }
  for (const slot s : written_) {
    record& r = at(s);
    if (!r.handler) continue;
    if (r.opts.deadline > now) {
      note_deadline(r.opts.deadline);
    } else if (r.opts.on_deadline != nullptr) {
      // The caller is told now and keeps the record to see the late answer; once only.
      hooks.emplace_back(std::exchange(r.opts.on_deadline, nullptr), r.opts.context);
      r.opts.deadline = clock_type::time_point::max();
    } else {
      unknown.push_back(std::move(r.handler.h));
    }
  }
  // Handlers last: they may add requests, or close everything.
  for (const slot s : timed_out) finish(s, make_error_code(errc::timeout), {});
  for (auto& h : unknown) std::move(h)(make_error_code(errc::timeout), resp3::value{});
  for (auto [fn, ctx] : hooks) fn(ctx);
}

clock_type::time_point multiplexer::next_deadline() const noexcept { return next_deadline_; }

bool multiplexer::withdraw(id_type id, std::error_code reason) {
  for (auto* q : {&handshake_, &queued_}) {
    auto it = std::find_if(q->begin(), q->end(), [&](slot s) { return at(s).id == id; });
    if (it != q->end()) {
      const slot s = *it;
      q->erase(it);
      finish(s, reason, {});
      return true;
    }
  }
  return false;
}

}  // namespace rlock::detail
