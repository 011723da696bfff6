#include "lock_view.hpp"

#include <fmt/format.h>

namespace rlockctl {

namespace {

using rlock::hold_role;
using rlock::key_kind;
using rlock::permit_hold;
using rlock::queued_waiter;

std::string_view role_name(hold_role r) noexcept {
  return r == hold_role::read ? "read" : r == hold_role::write ? "write" : "";
}

std::string holders_text(const std::vector<rlock::lock_holder>& hs) {
  std::string text;
  for (const auto& h : hs) {
    if (!text.empty()) text += ", ";
    text += h.role == hold_role::exclusive
                ? fmt::format("{} (count {})", h.owner, h.count)
                : fmt::format("{} ({} count {})", h.owner, role_name(h.role), h.count);
  }
  return text;
}

std::string holds_text(const std::vector<permit_hold>& hs) {
  std::string text;
  for (const auto& h : hs) {
    if (!text.empty()) text += ", ";
    text += fmt::format("{} ({} permit{}", h.id, h.permits, h.permits == 1 ? "" : "s");
    if (h.expires_in) text += fmt::format(", expires in {} ms", h.expires_in->count());
    if (h.never_expires) text += ", never expires";
    text += ")";
  }
  return text;
}

std::string queue_text(const std::vector<queued_waiter>& q) {
  std::string text;
  for (const auto& w : q) {
    if (!text.empty()) text += ", ";
    text += w.owner;
    std::string notes = w.by_push ? "by push" : "";
    if (w.deadline_in) {
      if (!notes.empty()) notes += ", ";
      notes += fmt::format("deadline in {} ms", w.deadline_in->count());
    }
    if (!notes.empty()) text += " (" + notes + ")";
  }
  return text;
}

/// A read-write lock's waiting writers, in their turn's order.
std::string writers_text(const std::vector<queued_waiter>& ws) {
  std::string text;
  for (const auto& w : ws) {
    if (!text.empty()) text += ", ";
    text += w.owner;
    if (w.deadline_in) {
      text += w.deadline_in->count() < 0
                  ? fmt::format(" (mark lapsed {} ms ago)", -w.deadline_in->count())
                  : fmt::format(" (mark lapses in {} ms)", w.deadline_in->count());
    }
  }
  return text;
}

const rlock::lock_holder* find(const std::vector<rlock::lock_holder>& hs, std::string_view owner,
                               hold_role role) {
  for (const auto& h : hs)
    if (h.owner == owner && h.role == role) return &h;
  return nullptr;
}

/// A semaphore's free permits, or a latch's count: a counter key's value.
std::optional<std::int64_t> counter_of(const lock_view& v) noexcept {
  return v.available ? v.available : v.count;
}

}  // namespace

std::string_view status_name(const lock_view& v) noexcept {
  if (v.kind == key_kind::other) return "not-a-lock";
  return v.held() ? "held" : "free";
}

std::string describe(const lock_view& v) {
  if (v.kind == key_kind::count_down_latch) {
    return fmt::format("{}: count-down latch, count {}{}, {} waiter(s)", v.name, *v.count,
                       *v.count <= 0 ? " (open)" : "", v.subscribers.value_or(0));
  }
  if (v.kind == key_kind::semaphore) {
    std::string text = fmt::format("{}: semaphore, {} permit(s) available", v.name, *v.available);
    if (v.total) text += fmt::format(" of {}", *v.total);
    if (!v.permits.empty()) text += fmt::format(", held by {}", holds_text(v.permits));
    if (v.subscribers && *v.subscribers > 0) {
      text += fmt::format(", {} subscriber(s)", *v.subscribers);
    }
    return text;
  }
  if (v.kind == key_kind::other) {
    return fmt::format("{}: not a lock (the key is a {})", v.name, v.key_type);
  }
  const std::string writers = v.writers.empty()
                                  ? std::string()
                                  : fmt::format(", waiting writers: {}", writers_text(v.writers));
  if (!v.held()) {
    return fmt::format(
        "{}: free{}{}{}", v.name,
        v.subscribers && *v.subscribers > 0 ? fmt::format(", {} subscriber(s)", *v.subscribers)
                                            : std::string(),
        v.queue.empty() ? std::string() : fmt::format(", fair, queue: {}", queue_text(v.queue)),
        v.writers.empty() ? std::string() : ", read-write" + writers);
  }
  std::string text = fmt::format("{}: held by {}", v.name, holders_text(v.holders));
  text += v.ttl ? fmt::format(", ttl {} ms", v.ttl->count()) : std::string(", no TTL");
  if (v.subscribers) text += fmt::format(", {} subscriber(s)", *v.subscribers);
  text += fmt::format(", {}", kind_name(v));
  if (v.mode) text += fmt::format(" (mode {})", role_name(*v.mode));
  if (v.token) text += fmt::format(" (last token {})", *v.token);
  if (!v.queue.empty()) text += fmt::format(", queue: {}", queue_text(v.queue));
  return text + writers;
}

boost::json::object to_json(const lock_view& v) {
  boost::json::object o;
  o["lock"] = v.name;
  o["state"] = status_name(v);
  if (v.kind == key_kind::other) {
    o["type"] = v.key_type;
  } else {
    o["kind"] = kind_name(v);
    boost::json::array hs;
    for (const auto& h : v.holders) {
      boost::json::object e{{"owner", h.owner}, {"count", h.count}};
      if (h.role != hold_role::exclusive) e["role"] = role_name(h.role);
      hs.push_back(std::move(e));
    }
    o["holders"] = std::move(hs);
    if (v.mode) o["mode"] = role_name(*v.mode);
    if (!v.holders.empty()) o["ttl_ms"] = v.ttl ? v.ttl->count() : -1;
  }
  if (v.kind == key_kind::count_down_latch) {
    o["count"] = *v.count;
    o["waiters"] = v.subscribers.value_or(0);
  } else if (v.kind == key_kind::semaphore) {
    o["available"] = *v.available;
    if (v.total) o["total"] = *v.total;
    boost::json::array hs;
    for (const auto& h : v.permits) {
      boost::json::object e{{"id", h.id}, {"permits", h.permits}};
      if (h.expires_in) e["expires_in_ms"] = h.expires_in->count();
      if (h.never_expires) e["never_expires"] = true;
      hs.push_back(std::move(e));
    }
    o["permit_holds"] = std::move(hs);
  }
  if (v.subscribers) o["subscribers"] = *v.subscribers;
  if (v.token) o["token"] = *v.token;
  if (!v.queue.empty()) {
    boost::json::array q;
    for (const auto& w : v.queue) {
      boost::json::object e{{"owner", w.owner}, {"by_push", w.by_push}};
      if (w.deadline_in) e["deadline_in_ms"] = w.deadline_in->count();
      q.push_back(std::move(e));
    }
    o["queue"] = std::move(q);
  }
  if (!v.writers.empty()) {
    boost::json::array ws;
    for (const auto& w : v.writers) {
      boost::json::object e{{"owner", w.owner}};
      if (w.deadline_in) e["mark_lapses_in_ms"] = w.deadline_in->count();
      ws.push_back(std::move(e));
    }
    o["waiting_writers"] = std::move(ws);
  }
  return o;
}

std::optional<lock_change> describe_change(const lock_view& before, const lock_view& after,
                                           std::string_view event) {
  const auto before_count = counter_of(before);
  const auto after_count = counter_of(after);
  if (before_count || after_count) {
    // A semaphore or a latch: its count and its holds.
    if (before_count == after_count && before.permits == after.permits) return std::nullopt;
    if (before.permits.empty() && after.permits.empty()) {
      // A count and no holds either side: without waiters the key alone cannot tell a
      // count-down latch's count (Redisson's RCountDownLatch) from a semaphore's free permits.
      const auto n = after_count.value_or(0);
      return lock_change{"count", fmt::format("count {}{} (a count-down latch's, or a semaphore's "
                                              "free permits)",
                                              n, n <= 0 ? ", open" : "")};
    }
    return lock_change{"permits", fmt::format("{} permit(s) available, {} hold(s)",
                                              after.available.value_or(0), after.permits.size())};
  }
  const bool was = before.held();
  const bool is = after.held();
  if (!was && is) {
    return lock_change{"locked", fmt::format("locked by {}", holders_text(after.holders))};
  }
  if (was && !is) {
    const std::string who = holders_text(before.holders);
    if (event == "expired") return lock_change{"expired", fmt::format("expired (held by {})", who)};
    return lock_change{"released", fmt::format("released by {}", who)};
  }
  if (!was && !is) {
    // The whole hold happened between two reads: a hash write is its take, an unlock message
    // its release (lock_story tells both, when it sees both).
    if (event == "hincrby" || event == "hset") {
      return lock_change{"locked", "taken and released before it could be read"};
    }
    if (event == "unlock-message") {
      return lock_change{"released", "locked and released between two reads"};
    }
    if (event == "expired") return lock_change{"expired", "expired"};
    return std::nullopt;
  }
  if (before.holders == after.holders) {
    if (event == "expire") {
      return lock_change{"renewed",
                         fmt::format("renewed by {} (ttl {} ms)", holders_text(after.holders),
                                     after.ttl ? after.ttl->count() : -1)};
    }
    return std::nullopt;
  }
  if (before.mode && after.mode) {
    // A read-write lock: owners come and go beside each other (readers share it).
    for (const auto& h : after.holders) {
      if (find(before.holders, h.owner, h.role) == nullptr) {
        return lock_change{"locked", fmt::format("{} half taken by {} (mode {})", role_name(h.role),
                                                 h.owner, role_name(*after.mode))};
      }
    }
    for (const auto& h : before.holders) {
      if (find(after.holders, h.owner, h.role) == nullptr) {
        return lock_change{"released-once",
                           fmt::format("{} half released by {} (mode {})", role_name(h.role),
                                       h.owner, role_name(*after.mode))};
      }
    }
  }
  for (const auto& h : after.holders) {
    const rlock::lock_holder* old = find(before.holders, h.owner, h.role);
    if (old == nullptr) {
      return lock_change{"handed-over",
                         fmt::format("handed over from {} to {}", holders_text(before.holders),
                                     holders_text(after.holders))};
    }
    if (h.count > old->count) {
      return lock_change{"re-entered",
                         fmt::format("re-entered by {} (count {})", h.owner, h.count)};
    }
    if (h.count < old->count) {
      return lock_change{"released-once",
                         fmt::format("released once by {} (count {})", h.owner, h.count)};
    }
  }
  return lock_change{"handed-over",
                     fmt::format("handed over from {} to {}", holders_text(before.holders),
                                 holders_text(after.holders))};
}

}  // namespace rlockctl
