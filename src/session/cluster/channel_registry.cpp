#include "session/cluster/channel_registry.hpp"

#include <algorithm>

namespace rlock::detail {

void channel_registry::want(std::string_view channel) {
  if (channels_.find(channel) != channels_.end()) return;
  channels_.emplace(std::string(channel), entry{key_slot(channel), {}});
}

std::string channel_registry::unwant(std::string_view channel) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return {};
  std::string node = std::move(it->second.node);
  channels_.erase(it);
  return node;
}

void channel_registry::place(std::string_view channel, std::string_view node) {
  auto it = channels_.find(channel);
  if (it != channels_.end()) it->second.node = std::string(node);
}

void channel_registry::unplace(std::string_view channel) { place(channel, {}); }

std::vector<channel_registry::move> channel_registry::reconcile(const slot_map& map) {
  std::vector<move> moves;
  for (auto& [name, e] : channels_) {
    const cluster_node* owner = map.owner(e.slot);
    std::string to = owner != nullptr ? owner->address() : std::string();
    if (to == e.node) continue;
    moves.push_back(move{name, e.node, to});
    e.node = std::move(to);
  }
  return moves;
}

std::string_view channel_registry::placement(std::string_view channel) const {
  auto it = channels_.find(channel);
  return it == channels_.end() ? std::string_view{} : std::string_view(it->second.node);
}

std::vector<std::string> channel_registry::channels_on(std::string_view node) const {
  std::vector<std::string> out;
  for (const auto& [name, e] : channels_) {
    if (e.node == node) out.push_back(name);
  }
  return out;
}

std::size_t channel_registry::placed_on(std::string_view node) const {
  return static_cast<std::size_t>(
      std::count_if(channels_.begin(), channels_.end(),
                    [node](const auto& kv) { return kv.second.node == node; }));
}

}  // namespace rlock::detail
