#include "watchdog/watchdog.hpp"

#include <algorithm>
#include <span>
#include <string>
#include <utility>

namespace rlock::detail {

namespace asio = boost::asio;

/// One renewal call: up to batch_size leases, and the views of its arguments into them (the
/// snapshots keep the owners alive until the reply is in).
struct watchdog::batch {
  struct item {
    std::shared_ptr<void> keep_alive;
    lease* l;
    std::uint64_t generation;
  };
  std::vector<item> items;
  std::string lease_ms;
  std::vector<std::string_view> keys;
  std::vector<std::string_view> args;
  clock::time_point sent{};  // set by the session each time the call is written
  bool round = false;        // part of a round (else one claimed lease's own renewal)
};

watchdog::watchdog(asio::any_io_executor ex, script_registry& scripts,
                   std::chrono::milliseconds lease_ms)
    : executor_(std::move(ex)),
      scripts_(scripts),
      lease_(lease_ms),
      margin_(margin_for(lease_ms)),
      timer_(executor_) {}

void watchdog::add(lease& l, std::shared_ptr<void> keep_alive, clock::time_point sent,
                   std::chrono::milliseconds claim) {
  const bool claimed = claim.count() > 0 && claim < lease_;
  if (l.renewing()) {
    if (claimed) {
      // Handed over by push while still renewed (a belief the server no longer backed): the
      // server's TTL is the claim now, so the belief is too, until a renewal runs.
      l.confirmed_ = sent;
      l.claim_ms_ = static_cast<std::uint32_t>(claim.count());
      arm_for(believe_until(l));
      lease* one = &l;
      send(std::span<lease* const>(&one, 1), owner_.lock(), false);
      return;
    }
    // Re-entered: the acquire script set the TTL again.
    l.confirmed_ = std::max(l.confirmed_, sent);
    return;
  }
  l.claim_ms_ = claimed ? static_cast<std::uint32_t>(claim.count()) : 0;
  l.keep_alive_ = std::move(keep_alive);
  l.generation_ = next_generation_++;
  l.group_ = scripts_.group_of(l.lease_key());
  l.renew_ = l.renewal_script();
  l.failing_ = false;
  l.confirmed_ = sent;
  l.prev_ = tail_;
  l.next_ = nullptr;
  (tail_ != nullptr ? tail_->next_ : head_) = &l;
  tail_ = &l;
  ++size_;
  index(l);
  if (next_round_ == clock::time_point::max()) next_round_ = clock::now() + lease_ / 3;
  arm_for(believe_until(l));
  if (claimed) {
    lease* one = &l;
    send(std::span<lease* const>(&one, 1), owner_.lock(), false);
  }
}

void watchdog::remove(lease& l) noexcept {
  if (!l.renewing()) return;
  (l.prev_ != nullptr ? l.prev_->next_ : head_) = l.next_;
  (l.next_ != nullptr ? l.next_->prev_ : tail_) = l.prev_;
  l.prev_ = l.next_ = nullptr;
  unindex(l);
  --size_;
  if (size_ == 0) {
    // Nothing left to renew. The timer is left to fire once and find nothing: cancelling it and
    // arming it again for the next hold cost every lock+unlock pair a timer cancel, an aborted
    // handler and a timer arm (S1). It holds no reference to the client, and close() stops it.
    next_round_ = earliest_ = clock::time_point::max();
  }
  // Last: this may destroy the owner, and with it `l`.
  auto keep = std::move(l.keep_alive_);
}

void watchdog::stop() noexcept {
  while (head_ != nullptr) {
    lease& l = *head_;
    auto keep = l.keep_alive_;
    remove(l);
    l.on_watchdog_stopped();
  }
  next_round_ = clock::time_point::max();
  earliest_ = clock::time_point::max();
  armed_at_ = clock::time_point::max();
  timer_.cancel();
}

void watchdog::index(lease& l) {
  if (!indexed_) return;
  const auto [at, fresh] = by_key_.try_emplace(l.lease_key(), &l);
  if (fresh) {
    l.same_key_ = nullptr;
    return;
  }
  // Behind the first: the map's key views the first lease's own bytes (unindex re-keys it when
  // that one goes).
  l.same_key_ = std::exchange(at->second->same_key_, &l);
}

void watchdog::unindex(lease& l) noexcept {
  if (!indexed_) return;
  const auto at = by_key_.find(l.lease_key());
  if (at == by_key_.end()) return;
  if (at->second == &l) {
    // The map's key views this lease's own bytes: the next lease of the key gets an entry
    // that views its own.
    lease* next = l.same_key_;
    by_key_.erase(at);
    if (next != nullptr) by_key_.emplace(next->lease_key(), next);
  } else {
    for (lease* p = at->second; p != nullptr; p = p->same_key_) {
      if (p->same_key_ == &l) {
        p->same_key_ = l.same_key_;
        break;
      }
    }
  }
  l.same_key_ = nullptr;
}

void watchdog::check(std::span<const std::string_view> keys) {
  std::vector<lease*> order;
  for (const auto key : keys) {
    const auto at = by_key_.find(key);
    if (at == by_key_.end()) continue;
    for (lease* l = at->second; l != nullptr; l = l->same_key_) {
      if (l->checked_when_changed()) order.push_back(l);
    }
  }
  if (order.empty()) return;
  checks_.fetch_add(order.size(), std::memory_order_relaxed);
  send_grouped(order, owner_.lock(), false);
}

void watchdog::check_all() {
  if (head_ == nullptr) return;
  std::vector<lease*> order;
  order.reserve(size_);
  for (lease* l = head_; l != nullptr; l = l->next_) order.push_back(l);
  checks_.fetch_add(order.size(), std::memory_order_relaxed);
  send_grouped(order, owner_.lock(), false);
}

void watchdog::report_lost(lease& l, std::string_view why) {
  auto keep = l.keep_alive_;  // the owner must survive its own notification
  remove(l);
  l.on_lease_lost(why);
}

void watchdog::arm_for(clock::time_point deadline) {
  earliest_ = std::min(earliest_, deadline);
  const auto at = std::min(next_round_, earliest_);
  if (at >= armed_at_ || at == clock::time_point::max()) return;
  armed_at_ = at;
  timer_.expires_at(at);
  // Weak: a timer left armed must not keep the client alive (the timer dies with it, and its
  // handler then must not touch this object).
  timer_.async_wait([this, owner = owner_](boost::system::error_code ec) {
    const auto keep = owner.lock();
    if (ec || !keep) return;  // re-armed earlier, stopped, or the client is gone
    armed_at_ = clock::time_point::max();
    on_timer();
  });
}

void watchdog::on_timer() {
  const auto now = clock::now();
  // First the holders whose belief deadline passed: they are told before anything else.
  std::vector<std::shared_ptr<void>> keep;
  std::vector<lease*> expired;
  earliest_ = clock::time_point::max();
  for (lease* l = head_; l != nullptr; l = l->next_) {
    const auto until = believe_until(*l);
    if (until <= now) {
      keep.push_back(l->keep_alive_);
      expired.push_back(l);
    } else {
      earliest_ = std::min(earliest_, until);
    }
  }
  for (lease* l : expired) {
    if (l->renewing()) {
      report_lost(*l, "not renewed within its lease (the server could not be reached in time)");
    }
  }
  if (head_ == nullptr) {
    next_round_ = clock::time_point::max();
    return;
  }
  if (now >= next_round_) {
    // A round still in flight (the session is down, the server stalled) is not doubled: its
    // calls go out when the session is back, and the belief deadlines bound the wait.
    if (round_batches_in_flight_ == 0) start_round();
    next_round_ = now + lease_ / 3;
  }
  arm_for(clock::time_point::max());
}

void watchdog::start_round() {
  auto owner = owner_.lock();
  // In acquisition order, grouped (stably) by renewal script and script group when there is
  // more than one of either.
  std::vector<lease*> order;
  order.reserve(size_);
  for (lease* l = head_; l != nullptr; l = l->next_) order.push_back(l);
  send_grouped(order, owner, true);
}

void watchdog::send_grouped(std::vector<lease*>& order, const std::shared_ptr<void>& owner,
                            bool round) {
  bool grouped = false;
  for (const lease* l : order) {
    grouped = grouped || l->group_ != order.front()->group_ || l->renew_ != order.front()->renew_;
  }
  if (grouped) {
    std::stable_sort(order.begin(), order.end(), [](const lease* a, const lease* b) {
      return a->renew_ != b->renew_ ? a->renew_ < b->renew_ : a->group_ < b->group_;
    });
  }
  for (std::size_t next = 0; next < order.size();) {
    const std::size_t first = next;
    const std::uint16_t group = order[next]->group_;
    const script renew = order[next]->renew_;
    while (next < order.size() && next - first < batch_size && order[next]->group_ == group &&
           order[next]->renew_ == renew) {
      ++next;
    }
    send(std::span<lease* const>(order.data() + first, next - first), owner, round);
  }
}

void watchdog::send(std::span<lease* const> items, const std::shared_ptr<void>& owner, bool round) {
  auto b = std::make_unique<batch>();
  b->round = round;
  b->lease_ms = std::to_string(lease_.count());
  b->items.reserve(items.size());
  auto deadline = clock::time_point::max();
  for (lease* l : items) {
    b->items.push_back({l->keep_alive_, l, l->generation_});
    deadline = std::min(deadline, believe_until(*l));
  }
  b->keys.reserve(b->items.size());
  b->args.reserve(1 + b->items.size());
  b->args.push_back(b->lease_ms);
  for (const auto& it : b->items) {
    b->keys.push_back(it.l->lease_key());
    b->args.push_back(it.l->lease_field());
  }
  // Idempotent, so written again after a reconnect; useful until the earliest holder in the
  // batch stops believing, and no longer.
  request_options opts;  // a renewal: written again after a reconnect (its kind)
  opts.deadline = deadline;
  opts.written_at = &b->sent;
  renew_calls_.fetch_add(1, std::memory_order_relaxed);
  ++batches_in_flight_;
  if (round) ++round_batches_in_flight_;
  batch& ref = *b;
  scripts_.async_run(items.front()->renew_, ref.keys, ref.args, opts,
                     [this, b = std::move(b), owner](std::error_code ec, resp3::value reply) {
                       --batches_in_flight_;
                       if (b->round) --round_batches_in_flight_;
                       on_batch(*b, ec, reply);
                     });
}

void watchdog::on_batch(batch& b, std::error_code ec, const resp3::value& reply) {
  // A failed call renews nothing; the belief deadline tells the holders in time.
  if (ec) {
    renew_failures_.fetch_add(1, std::memory_order_relaxed);
    std::vector<const lease*> newly_failing;
    for (const auto& it : b.items) {
      lease& l = *it.l;
      if (!l.renewing() || l.generation_ != it.generation || l.failing_) continue;
      l.failing_ = true;
      newly_failing.push_back(&l);
    }
    if (on_failure_ && !newly_failing.empty()) on_failure_(newly_failing, ec, reply);
    return;
  }
  for (std::size_t i = 0; i < b.items.size() && i < reply.elements.size(); ++i) {
    lease& l = *b.items[i].l;
    // Unlocked (or unlocked and locked again) while the call was in flight: not ours to judge.
    if (!l.renewing() || l.generation_ != b.items[i].generation) continue;
    if (reply.elements[i].integer == 1) {
      // The lease now runs from this call's (last) send time, at the earliest, and is whole.
      l.confirmed_ = std::max(l.confirmed_, b.sent);
      l.claim_ms_ = 0;
      l.failing_ = false;
    } else {
      report_lost(l, "the server no longer has it (expired, deleted or force-unlocked)");
    }
  }
}

}  // namespace rlock::detail
