#include "session/multiplexer.hpp"

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

void multiplexer::complete(record& r, std::error_code ec, resp3::value v) {
  if (!r.handler) return;
  reply_handler h(std::move(r.handler.h));
  std::move(h)(ec, std::move(v));
}

void multiplexer::note_deadline(clock_type::time_point d) noexcept {
  next_deadline_ = std::min(next_deadline_, d);
}

multiplexer::id_type multiplexer::add(std::string payload, answer_kind kind, std::string channel,
                                      request_options opts, reply_handler handler) {
  const id_type id = next_id_++;
  note_deadline(opts.deadline);
  auto& queue = opts.handshake ? handshake_ : queued_;
  queue.push_back(
      record{id, std::move(payload), std::move(channel), kind, opts, std::move(handler), {}});
  return id;
}

std::size_t multiplexer::prepare_write(std::string& out, bool ready, clock_type::time_point now) {
  std::size_t n = 0;
  auto take = [&](std::deque<record>& from) {
    std::vector<record> late;  // a vector: a deque would allocate on every write
    while (!from.empty()) {
      record& r = from.front();
      if (r.opts.deadline <= now) {
        // Never write a request past its deadline (a renewal sent after its holder stopped
        // believing would extend a lease nobody holds): it stays queued for expire() to fail.
        late.push_back(std::move(r));
        from.pop_front();
        continue;
      }
      out.append(r.payload);
      if (r.opts.written_at != nullptr) *r.opts.written_at = now;
      // Only an idempotent request is ever written again; the others need not keep their bytes.
      if (r.opts.unknown != if_unknown::retry || r.opts.handshake) std::string().swap(r.payload);
      written_.push_back(std::move(r));
      from.pop_front();
      ++n;
    }
    for (auto it = late.rbegin(); it != late.rend(); ++it) from.push_front(std::move(*it));
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
    const bool matches = !written_.empty() && is_confirmation(kind, written_.front().kind) &&
                         v.elements.size() >= 2 && v.elements[1].str == written_.front().channel;
    if (!matches && kind == "sunsubscribe") {
      // Not an answer: Redis 7 unsubscribes a sharded channel by itself when its slot moves to
      // another node (or the node loses it in a failover). The connection re-places it.
      if (on_push_) on_push_(v);
      return verdict::ok;
    }
    if (!matches) return verdict::out_of_step;
  } else if (written_.empty() || (written_.front().kind != answer_kind::reply && !v.is_error())) {
    // A reply nobody asked for, or a plain reply where a confirmation (or a refusal) was due.
    return verdict::out_of_step;
  }
  if (auto& front = written_.front(); front.opts.answers > 1) {
    // One of several replies: the request is answered by the last one.
    front.collected.type = resp3::type::array;
    front.collected.elements.push_back(std::move(v));
    if (front.collected.elements.size() < front.opts.answers) return verdict::ok;
    record r = std::move(front);
    written_.pop_front();
    complete(r, {}, std::move(r.collected));
    return verdict::ok;
  }
  record r = std::move(written_.front());
  written_.pop_front();
  complete(r, {}, std::move(v));
  return verdict::ok;
}

void multiplexer::on_connection_lost(std::error_code reason) {
  std::vector<record> failed;
  std::deque<record> again;
  for (auto& r : written_) {
    if (!r.handler) continue;  // the caller was told already; nothing to do with its answer
    if (r.opts.unknown == if_unknown::retry && !r.opts.handshake) {
      r.collected = {};  // written again: all its replies come again
      again.push_back(std::move(r));
    } else {
      failed.push_back(std::move(r));
    }
  }
  written_.clear();
  for (auto& r : handshake_) failed.push_back(std::move(r));
  handshake_.clear();
  retried_ += again.size();
  // Written requests are older than queued ones: they go first, in their order.
  for (auto it = again.rbegin(); it != again.rend(); ++it) queued_.push_front(std::move(*it));
  for (auto& r : failed) complete(r, reason, {});
}

void multiplexer::fail_queued(std::error_code reason) {
  auto failed = std::exchange(queued_, {});
  for (auto& r : failed) complete(r, reason, {});
}

void multiplexer::fail_all(std::error_code reason) {
  std::vector<record> failed;
  for (auto* q : {&written_, &handshake_, &queued_}) {
    for (auto& r : *q) failed.push_back(std::move(r));
    q->clear();
  }
  for (auto& r : failed) complete(r, reason, {});
}

void multiplexer::expire(clock_type::time_point now) {
  std::vector<record> timed_out;
  std::vector<reply_handler> unknown;  // written, deadline passed: the answer will be dropped
  std::vector<std::pair<void (*)(void*), void*>> hooks;
  next_deadline_ = clock_type::time_point::max();
  for (auto* q : {&handshake_, &queued_}) {
    // Never written: they certainly did not run, so they simply fail.
    for (auto it = q->begin(); it != q->end();) {
      if (it->opts.deadline <= now) {
        timed_out.push_back(std::move(*it));
        it = q->erase(it);
      } else {
        note_deadline(it->opts.deadline);
        ++it;
      }
    }
  }
  for (auto& r : written_) {
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
  for (auto& r : timed_out) complete(r, make_error_code(errc::timeout), {});
  for (auto& h : unknown) std::move(h)(make_error_code(errc::timeout), resp3::value{});
  for (auto [fn, ctx] : hooks) fn(ctx);
}

clock_type::time_point multiplexer::next_deadline() const noexcept { return next_deadline_; }

bool multiplexer::withdraw(id_type id, std::error_code reason) {
  for (auto* q : {&handshake_, &queued_}) {
    auto it = std::find_if(q->begin(), q->end(), [id](const record& r) { return r.id == id; });
    if (it != q->end()) {
      record r = std::move(*it);
      q->erase(it);
      complete(r, reason, {});
      return true;
    }
  }
  return false;
}

}  // namespace rlock::detail
