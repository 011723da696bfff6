#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace rlock::detail {

/// Sans-I/O record of the channels a connection should be subscribed to: which are wanted, which
/// the server has confirmed, and which must be replayed on a new connection. The subscription set
/// is the source of truth for SUBSCRIBE / UNSUBSCRIBE: nothing is retried one by one; after a
/// reconnect every wanted channel is subscribed again.
///
/// Redis answers commands in order, so the server's state after all commands in flight is the
/// one the last command sent asks for; a channel is *active* once that command is a SUBSCRIBE and
/// its confirmation, the last outstanding one, has arrived.
class subscription_set {
 public:
  /// What the caller must send for a channel now.
  enum class action : std::uint8_t { none, subscribe, unsubscribe };

  /// Somebody here waits on `channel`. While disconnected nothing is sent: the replay will.
  action want(std::string_view channel, bool connected);
  /// Nobody here waits on `channel` any more.
  action unwant(std::string_view channel, bool connected);

  /// The confirmation of a SUBSCRIBE arrived: true if `channel` just became active.
  bool on_subscribed(std::string_view channel);
  void on_unsubscribed(std::string_view channel);
  /// An error reply to a SUBSCRIBE (e.g. -NOPERM): true if somebody still wants `channel`, whose
  /// waiters must then be told. The channel stays wanted until they leave.
  bool on_refused(std::string_view channel);

  /// The server unsubscribed `channel` by itself (Redis 7 sends `sunsubscribe` when a sharded
  /// channel's slot moves to another node): it is not subscribed here any more. True if somebody
  /// still wants it (it must be subscribed again, here or on the slot's new owner).
  bool on_dropped(std::string_view channel);

  /// The connection is gone: nothing is confirmed any more, nothing is outstanding.
  void on_disconnect();
  /// The channels to SUBSCRIBE on a new connection (every wanted one); marks them sent.
  std::vector<std::string> replay();

  bool active(std::string_view channel) const;
  bool wanted(std::string_view channel) const;
  /// Channels tracked: wanted, or with a command still outstanding.
  std::size_t size() const noexcept { return channels_.size(); }

 private:
  enum class sent_kind : std::uint8_t { none, subscribe, unsubscribe };
  struct entry {
    bool wanted = false;
    bool confirmed = false;  // the last command sent was SUBSCRIBE and it was confirmed
    sent_kind last_sent = sent_kind::none;  // on this connection
    std::uint32_t outstanding = 0;          // commands sent on this connection, not answered yet
  };

  struct hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  using map_type = std::unordered_map<std::string, entry, hash, std::equal_to<>>;

  void erase_if_idle(map_type::iterator it);

  map_type channels_;
};

}  // namespace rlock::detail
