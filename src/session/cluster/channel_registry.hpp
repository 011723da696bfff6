#pragma once

#include "session/cluster/slot_map.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace rlock::detail {

/// Sans-I/O, at session level in Cluster mode: the channels somebody here waits on, and the node
/// each is subscribed on. A sharded channel must be subscribed on the master that owns its slot
/// (`SSUBSCRIBE` elsewhere answers `-MOVED`), so after every change of the slot map (a
/// resharding, a failover) the registry says which channels move where; the router then
/// unsubscribes them on the old node and subscribes them on the new one, and the confirmation
/// there wakes their waiters, who retry at once. Reference counting is the caller's (the notify
/// hub wants a channel once, however many waiters it has).
class channel_registry {
 public:
  /// A channel to move: unsubscribe on `from` (if not empty), subscribe on `to` (if not empty).
  struct move {
    std::string channel;
    std::string from;
    std::string to;
  };

  /// Somebody waits on `channel` (hashed like a key). Not placed yet: place() or reconcile().
  void want(std::string_view channel);
  /// Nobody waits any more: returns the node it was placed on (empty: none), and forgets it.
  std::string unwant(std::string_view channel);

  /// `channel` is subscribed (or being subscribed) on `node`.
  void place(std::string_view channel, std::string_view node);
  /// The node dropped `channel` (an unsolicited `sunsubscribe`: its slot moved), or refused it
  /// with `-MOVED`: it is placed nowhere until the next reconcile().
  void unplace(std::string_view channel);

  /// For the map `map`: every wanted channel placed elsewhere than on its slot's owner, with
  /// where it goes (empty `to` when nobody serves the slot); the placements are updated.
  std::vector<move> reconcile(const slot_map& map);

  /// Where `channel` is placed (empty: nowhere, or not wanted).
  std::string_view placement(std::string_view channel) const;
  bool wanted(std::string_view channel) const { return channels_.find(channel) != channels_.end(); }
  std::size_t size() const noexcept { return channels_.size(); }
  /// How many wanted channels are placed on `node`.
  std::size_t placed_on(std::string_view node) const;
  /// The wanted channels placed on `node`.
  std::vector<std::string> channels_on(std::string_view node) const;

 private:
  struct entry {
    std::uint16_t slot = 0;
    std::string node;
  };
  struct hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  std::unordered_map<std::string, entry, hash, std::equal_to<>> channels_;
};

}  // namespace rlock::detail
