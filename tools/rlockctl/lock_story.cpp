// The watch's account of a lock (lock_story.hpp): events give the meaning, reads the names.
#include "lock_story.hpp"

namespace rlockctl {

namespace {

/// An event that writes a lock's hash: a take (HINCRBY for Redisson's hash locks, HSET for the
/// fair and read-write locks' takes), a re-entry, or a release of one hold.
bool writes_hash(std::string_view event) noexcept { return event == "hincrby" || event == "hset"; }

lock_view free_like(const lock_view& v) {
  lock_view free;
  free.name = v.name;
  free.key = v.key;
  return free;
}

}  // namespace

bool lock_story::wants_read(std::string_view event, bool deletion_queued) noexcept {
  if (event == "subscribed" || event == "resync") return true;  // the state as it is, always
  return !ends_key(event) && !deletion_queued;
}

std::optional<lock_change> lock_story::next(std::string_view event,
                                            const std::optional<lock_view>& read) {
  const bool after_take = after_take_;
  after_take_ = writes_hash(event);
  if (event == "subscribed" || event == "resync") {
    // Where the story starts (again, after a reconnect: what changed while away, if anything).
    std::optional<lock_change> change;
    if (event == "resync" && read) change = describe_change(last_, *read, event);
    unread_hold_ = false;
    if (read) last_ = *read;
    return change;
  }
  if (ends_key(event)) {
    const lock_view gone = free_like(last_);
    std::optional<lock_change> change;
    if (unread_hold_) {
      change = event == "expired"
                   ? lock_change{"expired", "expired (its holder was not read in time)"}
                   : lock_change{"released", "released (its holder was not read in time)"};
    } else {
      change = describe_change(last_, gone, event);
    }
    unread_hold_ = false;
    last_ = gone;
    return change;
  }
  if (unread_hold_) return std::nullopt;  // the unread hold's own steps, before its deletion
  const bool take = writes_hash(event) && !last_.held();
  if (take && !(read && read->held())) {
    // A take all the same, whatever the read found: it ended (or moved on) before the read.
    // With its deletion queued the deletion will tell the release; without (the server does not
    // send deletions), the release is told here too.
    unread_hold_ = !read.has_value();
    last_ = read ? *read : free_like(last_);
    return lock_change{"locked", "taken and released before it could be read"};
  }
  if (!read) return std::nullopt;  // a step its queued deletion already followed
  auto change = describe_change(last_, *read, event);
  last_ = *read;
  // The PEXPIRE that follows a take or re-entry in the same script is part of that change.
  if (change && change->kind == "renewed" && after_take) return std::nullopt;
  return change;
}

}  // namespace rlockctl
