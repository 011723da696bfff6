#pragma once

#include "lock_view.hpp"

#include <optional>
#include <string_view>

namespace rlockctl {

/// What `watch` tells of one lock, one event at a time (sans I/O: the watch reads, this decides).
/// The meaning of a line comes from the event, in the order the server sent them; a read made
/// after it only says who and how many. A read is in time when no deletion (or expiry) of the
/// lock reached the watch before the read's answer did: the server sends its notifications and
/// its replies on one connection, in order, so a deletion queued behind the read means the read
/// shows a later state than the event's. A take whose read came too late is still a take ("taken
/// and released before it could be read"): keyspace notifications carry no hash field, so no
/// other source names its holder.
class lock_story {
 public:
  explicit lock_story(lock_view first) : last_(std::move(first)) {}

  /// Whether `event` is worth a read now: not when the lock's deletion is already queued behind
  /// it (`deletion_queued`), nor for the deletion itself (the key was gone when it was sent).
  static bool wants_read(std::string_view event, bool deletion_queued) noexcept;

  /// The change `event` makes, given the lock as read in time after it (none: not read, or the
  /// read came too late). Nothing when there is nothing new to tell.
  std::optional<lock_change> next(std::string_view event, const std::optional<lock_view>& read);

  /// The lock as this story last knew it.
  const lock_view& last() const noexcept { return last_; }

 private:
  lock_view last_;
  bool unread_hold_ = false;  // taken, with its deletion queued before it could be read
  bool after_take_ = false;   // the previous event wrote the hash (its PEXPIRE is the same step)
};

/// Whether a keyspace event ends a lock's key (so a read after it shows a later holder).
constexpr bool ends_key(std::string_view event) noexcept {
  return event == "del" || event == "expired";
}

}  // namespace rlockctl
