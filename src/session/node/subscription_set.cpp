#include "session/node/subscription_set.hpp"

namespace rlock::detail {

void subscription_set::erase_if_idle(map_type::iterator it) {
  if (!it->second.wanted && it->second.outstanding == 0) channels_.erase(it);
}

subscription_set::action subscription_set::want(std::string_view channel, bool connected) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) it = channels_.emplace(std::string(channel), entry{}).first;
  entry& e = it->second;
  e.wanted = true;
  if (!connected || e.last_sent == sent_kind::subscribe) return action::none;
  e.last_sent = sent_kind::subscribe;
  e.confirmed = false;
  ++e.outstanding;
  return action::subscribe;
}

subscription_set::action subscription_set::unwant(std::string_view channel, bool connected) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return action::none;
  entry& e = it->second;
  e.wanted = false;
  if (connected && e.last_sent == sent_kind::subscribe) {
    e.last_sent = sent_kind::unsubscribe;
    e.confirmed = false;
    ++e.outstanding;
    return action::unsubscribe;
  }
  erase_if_idle(it);
  return action::none;
}

bool subscription_set::on_subscribed(std::string_view channel) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return false;
  entry& e = it->second;
  if (e.outstanding > 0) --e.outstanding;
  if (e.outstanding == 0 && e.last_sent == sent_kind::subscribe) {
    e.confirmed = true;
    return e.wanted;
  }
  return false;
}

void subscription_set::on_unsubscribed(std::string_view channel) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return;
  entry& e = it->second;
  if (e.outstanding > 0) --e.outstanding;
  erase_if_idle(it);
}

bool subscription_set::on_refused(std::string_view channel) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return false;
  entry& e = it->second;
  if (e.outstanding > 0) --e.outstanding;
  e.confirmed = false;
  // The server did not subscribe: unless a later SUBSCRIBE is still in flight, it is not
  // subscribed now, and leaving needs no UNSUBSCRIBE.
  if (e.outstanding == 0) e.last_sent = sent_kind::none;
  const bool tell = e.wanted;
  erase_if_idle(it);
  return tell;
}

bool subscription_set::on_dropped(std::string_view channel) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return false;
  entry& e = it->second;
  e.confirmed = false;
  // Commands still outstanding keep their own answers; only the server's state changed.
  if (e.last_sent == sent_kind::subscribe) e.last_sent = sent_kind::none;
  const bool wanted = e.wanted;
  erase_if_idle(it);
  return wanted;
}

void subscription_set::on_disconnect() {
  for (auto it = channels_.begin(); it != channels_.end();) {
    entry& e = it->second;
    e.outstanding = 0;
    e.confirmed = false;
    e.last_sent = sent_kind::none;
    it = e.wanted ? std::next(it) : channels_.erase(it);
  }
}

std::vector<std::string> subscription_set::replay() {
  std::vector<std::string> out;
  for (auto& [name, e] : channels_) {
    if (!e.wanted || e.last_sent == sent_kind::subscribe) continue;
    e.last_sent = sent_kind::subscribe;
    e.confirmed = false;
    ++e.outstanding;
    out.push_back(name);
  }
  return out;
}

bool subscription_set::active(std::string_view channel) const {
  auto it = channels_.find(channel);
  return it != channels_.end() && it->second.wanted && it->second.confirmed;
}

bool subscription_set::wanted(std::string_view channel) const {
  auto it = channels_.find(channel);
  return it != channels_.end() && it->second.wanted;
}

}  // namespace rlock::detail
