#include "notify/notify_hub.hpp"

#include <algorithm>
#include <utility>

namespace rlock::detail {

void notify_hub::wake(waiter& w, bool by_message) {
  w.woken = true;
  w.by_message = by_message;
  if (w.asleep()) unpark(w);
}

void notify_hub::unpark(waiter& w) {
  sleepers_.remove(w);
  w.on_unpark(w);
  arm();
}

void notify_hub::sleep(waiter& w, clock::time_point until) {
  sleepers_.add(w, until);
  arm();
}

void notify_hub::interrupt(waiter& w) {
  if (w.asleep()) unpark(w);
}

void notify_hub::arm() {
  const auto next = sleepers_.next_deadline();
  if (next == clock::time_point::max()) {
    if (armed_until_ != clock::time_point::max()) {
      armed_until_ = clock::time_point::max();
      timer_.cancel();
    }
    return;
  }
  if (next >= armed_until_) return;  // it fires first, and re-arms
  armed_until_ = next;
  timer_.expires_at(next);
  // Weak: the timer is cancelled when the client (which holds the hub) is destroyed, and its
  // handler then must not touch the hub.
  timer_.async_wait([this, owner = owner_](boost::system::error_code ec) {
    const auto keep = owner.lock();
    if (!keep || ec == boost::asio::error::operation_aborted) return;
    on_timer();
  });
}

void notify_hub::on_timer() {
  armed_until_ = clock::time_point::max();
  const auto now = clock::now();
  while (auto* s = sleepers_.take_due(now)) {
    auto& w = static_cast<waiter&>(*s);
    w.on_unpark(w);
  }
  arm();
}

void notify_hub::wake_one(channel_state& c, bool by_message) {
  waiter* oldest = nullptr;
  for (waiter* w = c.head; w != nullptr; w = w->next) {
    if (w->woken || w->reserved) continue;
    if (w->woken_first) return wake(*w, by_message);
    if (oldest == nullptr) oldest = w;
    if (c.woken_first == 0) break;  // nobody to look further for
  }
  if (oldest != nullptr) wake(*oldest, by_message);
}

void notify_hub::add(std::string_view key, std::string_view channel, message_policy policy,
                     waiter& w) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) it = channels_.emplace(std::string(channel), channel_state{}).first;
  channel_state& c = it->second;
  if (c.size == 0) {
    c.name = it->first;
    c.key = std::string(key);
    c.policy = policy;
  }
  w.hub = this;
  w.channel = &c;
  w.prev = c.tail;
  w.next = nullptr;
  (c.tail != nullptr ? c.tail->next : c.head) = &w;
  c.tail = &w;
  if (w.woken_first) ++c.woken_first;
  if (c.size++ == 0) {
    session_.subscribe(c.key, c.name);
  } else if (session_.subscribed(c.key, c.name)) {
    wake(w, false);
  }
}

void notify_hub::remove(waiter& w) {
  if (w.asleep()) {
    sleepers_.remove(w);
    arm();
  }
  channel_state* c = w.channel;
  if (c == nullptr) return;
  (w.prev != nullptr ? w.prev->next : c->head) = w.next;
  (w.next != nullptr ? w.next->prev : c->tail) = w.prev;
  w.prev = w.next = nullptr;
  w.channel = nullptr;
  --c->size;
  if (!c->sinks.empty()) {
    std::erase_if(c->sinks, [&w](const auto& s) { return s.first == &w; });
  }
  if (w.woken_first) --c->woken_first;
  if (w.woken && !w.failed) wake_one(*c, w.by_message);
  if (c->size == 0) {
    session_.unsubscribe(c->key, c->name);
    channels_.erase(channels_.find(c->name));
  }
}

notify_hub::waiter* notify_hub::handoff_candidate(std::string_view channel) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return nullptr;
  for (waiter* w = it->second.head; w != nullptr; w = w->next) {
    if (w->asleep() && !w->woken && !w->reserved && !w->failed && w->owner != nullptr) return w;
  }
  return nullptr;
}

std::string notify_hub::refusal_of(const waiter& w) const {
  return w.channel != nullptr ? w.channel->refusal : std::string{};
}

void notify_hub::on_message(std::string_view channel, std::string_view payload,
                            clock::time_point since) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return;
  for (const auto& [w, sink] : it->second.sinks) sink->heard(*sink, payload);
  std::uint32_t ticket = 0;
  switch (it->second.policy(payload, ticket)) {
    case wake_policy::grant:
      // To the acquisition it names; none here (it left: its leave script gives the hold back
      // on the server) takes nothing.
      for (waiter* w = it->second.head; w != nullptr; w = w->next) {
        if (w->ticket == ticket && !w->failed) {
          it->second.grant_since = std::min(it->second.grant_since, since);
          w->pushed_grant = true;
          wake(*w, true);
          break;
        }
      }
      break;
    case wake_policy::all:
      for (waiter* w = it->second.head; w != nullptr; w = w->next) wake(*w, true);
      break;
    case wake_policy::one:
      wake_one(it->second, true);
      break;
    case wake_policy::some:
      for (std::uint32_t i = 0; i < ticket && i < it->second.size; ++i) wake_one(it->second, true);
      break;
    case wake_policy::none:
      break;
  }
}

void notify_hub::on_subscribed(std::string_view channel) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return;
  // Everybody registered before the confirmation retries once now; after a reconnect, this is
  // what makes up for the unlock messages missed while the connection was down.
  for (waiter* w = it->second.head; w != nullptr; w = w->next) wake(*w, false);
}

void notify_hub::on_refused(std::string_view channel, std::error_code ec, std::string_view text) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return;
  it->second.refusal = std::string(text);
  it->second.refused = ec;
  // Only this channel's waiters fail; they leave (and the channel goes) as they see it.
  for (waiter* w = it->second.head; w != nullptr; w = w->next) {
    w->failed = true;
    wake(*w, false);
  }
}

void notify_hub::fail_all(std::error_code reason) {
  closed_ = reason;
  auto channels = std::exchange(channels_, {});
  for (auto& [name, c] : channels) {
    for (waiter* w = c.head; w != nullptr;) {
      waiter* next = w->next;
      w->failed = true;
      w->channel = nullptr;
      w->prev = w->next = nullptr;
      wake(*w, false);
      w = next;
    }
  }
  // Sleepers on no channel (spin lock waiters, which poll) are failed too, at once.
  while (auto* s = sleepers_.take_due(clock::time_point::max())) {
    auto& w = static_cast<waiter&>(*s);
    w.failed = true;
    w.woken = true;
    w.on_unpark(w);
  }
  arm();
}

std::size_t notify_hub::waiter_count(std::string_view channel) const {
  auto it = channels_.find(channel);
  return it == channels_.end() ? 0 : it->second.size;
}

}  // namespace rlock::detail
