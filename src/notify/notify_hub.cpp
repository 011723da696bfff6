#include "notify/notify_hub.hpp"

#include "resp3/request.hpp"

#include <utility>

namespace rlock::detail {

void notify_hub::wake(waiter& w, bool by_message) {
  w.woken = true;
  w.by_message = by_message;
  w.timer.cancel();
}

void notify_hub::wake_one(channel_state& c, bool by_message) {
  for (waiter* w = c.head; w != nullptr; w = w->next) {
    if (!w->woken) {
      wake(*w, by_message);
      return;
    }
  }
}

void notify_hub::subscribe(channel_state& c, bool on) {
  std::string cmd;
  resp3::append_command(cmd, {on ? "SUBSCRIBE" : "UNSUBSCRIBE", c.name});
  conn_.send(cmd);
  c.want = on;
  ++c.outstanding;
}

void notify_hub::add(std::string_view channel, waiter& w) {
  auto [it, inserted] = channels_.try_emplace(std::string(channel));
  channel_state& c = it->second;
  if (inserted) c.name = it->first;
  w.channel = &c;
  w.prev = c.tail;
  w.next = nullptr;
  (c.tail != nullptr ? c.tail->next : c.head) = &w;
  c.tail = &w;
  ++c.size;
  if (!c.want) {
    subscribe(c, true);
  } else if (c.active()) {
    wake(w, false);
  }
}

void notify_hub::remove(waiter& w) {
  channel_state* c = w.channel;
  if (c == nullptr) return;
  (w.prev != nullptr ? w.prev->next : c->head) = w.next;
  (w.next != nullptr ? w.next->prev : c->tail) = w.prev;
  w.prev = w.next = nullptr;
  w.channel = nullptr;
  --c->size;
  if (w.woken && w.failed == std::error_code{}) wake_one(*c, w.by_message);
  if (c->size == 0 && c->want && conn_.is_open()) subscribe(*c, false);
  if (c->size == 0 && (c->outstanding == 0 || !conn_.is_open())) {
    channels_.erase(channels_.find(c->name));
  }
}

void notify_hub::on_push(const resp3::value& push) {
  // RESP3 pub/sub pushes: ["subscribe", channel, count], ["unsubscribe", channel, count],
  // ["message", channel, payload].
  if (push.elements.size() < 3) return;
  const std::string& kind = push.elements[0].str;
  auto it = channels_.find(push.elements[1].str);
  if (it == channels_.end()) return;
  channel_state& c = it->second;
  if (kind == "message") {
    // Redisson publishes "0" (wake one per process) or "1" (wake all).
    if (push.elements[2].str == "1") {
      for (waiter* w = c.head; w != nullptr; w = w->next) wake(*w, true);
    } else {
      wake_one(c, true);
    }
  } else if (kind == "subscribe" || kind == "unsubscribe") {
    if (c.outstanding > 0) --c.outstanding;
    if (c.active()) {
      // Everybody registered before the confirmation retries once now.
      for (waiter* w = c.head; w != nullptr; w = w->next) wake(*w, false);
    } else if (c.size == 0 && c.outstanding == 0) {
      channels_.erase(it);
    }
  }
}

void notify_hub::fail_all(std::error_code reason) {
  auto channels = std::exchange(channels_, {});
  for (auto& [name, c] : channels) {
    for (waiter* w = c.head; w != nullptr;) {
      waiter* next = w->next;
      w->failed = reason;
      w->channel = nullptr;
      w->prev = w->next = nullptr;
      wake(*w, false);
      w = next;
    }
  }
}

std::size_t notify_hub::waiter_count(std::string_view channel) const {
  auto it = channels_.find(std::string(channel));
  return it == channels_.end() ? 0 : it->second.size;
}

}  // namespace rlock::detail
