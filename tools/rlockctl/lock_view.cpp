#include "lock_view.hpp"

#include "kinds/names.hpp"
#include "kinds/permit_id.hpp"
#include "session/redis_error.hpp"

#include <boost/system/system_error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <system_error>

namespace rlockctl {

namespace {

using rlock::detail::resp3::type;

std::optional<std::int64_t> to_int(std::string_view s) {
  std::int64_t v = 0;
  const auto* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc{} || p != end || s.empty()) return std::nullopt;
  return v;
}

// Redisson's and rlock's owner field: `<uuid>:<thread or owner id>`.
bool is_owner_field(std::string_view f) {
  const auto colon = f.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == f.size()) return false;
  return std::all_of(f.begin() + static_cast<std::ptrdiff_t>(colon) + 1, f.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

const reply& checked(const std::vector<reply>& answers, std::size_t i, std::string_view what) {
  if (i >= answers.size()) {
    throw boost::system::system_error(make_error_code(rlock::errc::protocol_error),
                                      fmt::format("{}: no answer", what));
  }
  const reply& r = answers[i];
  if (r.is_error()) {
    throw boost::system::system_error(make_error_code(rlock::detail::errc_of_reply(r.str)),
                                      fmt::format("{}: {}", what, r.str));
  }
  return r;
}

std::string holders_text(const std::vector<holder>& hs) {
  std::string text;
  for (const auto& h : hs) {
    if (!text.empty()) text += ", ";
    text += h.role.empty() ? fmt::format("{} (count {})", h.owner, h.count)
                           : fmt::format("{} ({} count {})", h.owner, h.role, h.count);
  }
  return text;
}

std::string tagged(std::string_view prefix, const std::string& key) {
  std::string name;
  rlock::detail::append_tagged_name(prefix, key, name);
  return name;
}

/// The server's clock in ms from TIME's answer, if it reads as one.
std::optional<std::int64_t> server_now(const reply& time) {
  if (time.elements.size() != 2) return std::nullopt;
  const auto s = to_int(time.elements[0].str);
  const auto us = to_int(time.elements[1].str);
  if (!s || !us) return std::nullopt;
  return *s * 1000 + *us / 1000;
}

/// The fair lock's queue from LRANGE, its deadlines from ZRANGE WITHSCORES (pairs, flat or
/// nested), the handoff registrations and TIME (answers 5 to 8, when present).
std::vector<queued_waiter> read_queue(const std::vector<reply>& answers) {
  std::vector<queued_waiter> q;
  if (answers.size() < 9) return q;
  const reply& list = checked(answers, 5, "LRANGE");
  const reply& timeouts = checked(answers, 6, "ZRANGE");
  const reply& handoff = checked(answers, 7, "HGETALL");
  const auto now = server_now(checked(answers, 8, "TIME"));
  auto deadline_of = [&](std::string_view owner) -> std::optional<std::int64_t> {
    const auto& e = timeouts.elements;
    for (std::size_t i = 0; i < e.size(); ++i) {
      // RESP3 nests [member, score] pairs; RESP2 alternates them.
      const bool nested = e[i].type == type::array && e[i].elements.size() == 2;
      const reply& member = nested ? e[i].elements[0] : e[i];
      if (member.str != owner) {
        if (!nested) ++i;
        continue;
      }
      const reply* score = nested ? &e[i].elements[1] : (i + 1 < e.size() ? &e[i + 1] : nullptr);
      if (score == nullptr || !now) return std::nullopt;
      const double at =
          score->type == type::double_type ? score->real : std::atof(score->str.c_str());
      return static_cast<std::int64_t>(at) - *now;
    }
    return std::nullopt;
  };
  auto registered = [&](std::string_view owner) {
    const auto& e = handoff.elements;
    for (std::size_t i = 0; i + 1 < e.size(); i += 2) {
      if (e[i].str == owner) return !e[i + 1].str.starts_with("g:");
    }
    return false;
  };
  for (const auto& e : list.elements) q.push_back({e.str, deadline_of(e.str), registered(e.str)});
  return q;
}

/// A semaphore's holds: `{<key>}:timeout` (brace rule as the lock's other names).
std::string holds_of(const std::string& key) {
  std::string name;
  rlock::detail::append_read_timeouts(key, {}, name);
  name.append(":timeout");
  return name;
}

/// The holds of a ZRANGE (with or without scores; RESP3 pairs or flat), their sizes from an
/// HGETALL (absent: 1), expiries against `now` when known.
std::vector<permit_hold> read_holds(const reply& zrange, const reply* sizes,
                                    std::optional<std::int64_t> now) {
  std::vector<permit_hold> out;
  const auto& e = zrange.elements;
  for (std::size_t i = 0; i < e.size(); ++i) {
    const bool nested = e[i].type == type::array && e[i].elements.size() == 2;
    permit_hold h;
    h.id = nested ? e[i].elements[0].str : e[i].str;
    const reply* score = nullptr;
    if (nested) {
      score = &e[i].elements[1];
    } else if (now && i + 1 < e.size()) {
      score = &e[++i];
    }
    if (score != nullptr && now) {
      const double at =
          score->type == type::double_type ? score->real : std::atof(score->str.c_str());
      if (at >= static_cast<double>(rlock::detail::redisson_never_expires)) {
        h.never_expires = true;
      } else {
        h.expires_in_ms = static_cast<std::int64_t>(at) - *now;
      }
    }
    if (sizes != nullptr) {
      for (std::size_t k = 0; k + 1 < sizes->elements.size(); k += 2) {
        if (sizes->elements[k].str == h.id)
          h.permits = to_int(sizes->elements[k + 1].str).value_or(1);
      }
    }
    // A permit id is 16 bytes on the wire; Redisson and rlock show it in hex.
    if (h.id.size() == rlock::detail::permit_id_size) h.id = rlock::detail::permit_id_hex(h.id);
    out.push_back(std::move(h));
  }
  return out;
}

std::string holds_text(const std::vector<permit_hold>& hs) {
  std::string text;
  for (const auto& h : hs) {
    if (!text.empty()) text += ", ";
    text += fmt::format("{} ({} permit{}", h.id, h.permits, h.permits == 1 ? "" : "s");
    if (h.expires_in_ms) text += fmt::format(", expires in {} ms", *h.expires_in_ms);
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
    if (w.deadline_in_ms) {
      if (!notes.empty()) notes += ", ";
      notes += fmt::format("deadline in {} ms", *w.deadline_in_ms);
    }
    if (!notes.empty()) text += " (" + notes + ")";
  }
  return text;
}

const holder* find(const std::vector<holder>& hs, std::string_view owner,
                   std::string_view role = {}) {
  for (const auto& h : hs)
    if (h.owner == owner && h.role == role) return &h;
  return nullptr;
}

}  // namespace

std::string_view lock_view::status_name() const noexcept {
  switch (status) {
    case state::free:
      return "free";
    case state::held:
      return "held";
    case state::not_a_lock:
      return "not-a-lock";
  }
  return "unknown";
}

std::optional<std::vector<holder>> lock_holders(const reply& hgetall, std::string* mode) {
  // RESP3 answers a map; RESP2 (or a proxy) a flat array: both alternate field and value.
  if (hgetall.type != type::map && hgetall.type != type::array) return std::nullopt;
  const auto& e = hgetall.elements;
  if (e.size() % 2 != 0) return std::nullopt;
  std::string found_mode;
  for (std::size_t i = 0; i < e.size(); i += 2) {
    if (e[i].str != "mode") continue;
    if (e[i + 1].str != "read" && e[i + 1].str != "write") return std::nullopt;
    found_mode = e[i + 1].str;
  }
  constexpr std::string_view write_suffix = rlock::detail::write_field_suffix;
  std::vector<holder> hs;
  for (std::size_t i = 0; i < e.size(); i += 2) {
    std::string_view field = e[i].str;
    if (field == "mode") continue;
    std::string role;
    if (!found_mode.empty()) {
      role = "read";
      if (field.ends_with(write_suffix)) {
        field.remove_suffix(write_suffix.size());
        role = "write";
      }
    }
    const auto count = to_int(e[i + 1].str);
    if (!is_owner_field(field) || !count || *count <= 0) return std::nullopt;
    hs.push_back({std::string(field), *count, std::move(role)});
  }
  if (mode != nullptr) *mode = std::move(found_mode);
  return hs;
}

std::vector<command> status_commands(const std::string& key, bool sharded) {
  // Sharded channels (Cluster) are counted by the master owning their slot, the lock's.
  return {{"TYPE", key},
          {"HGETALL", key},
          {"PTTL", key},
          {"PUBSUB", sharded ? "SHARDNUMSUB" : "NUMSUB", rlock::detail::unlock_channel(key)},
          {"GET", rlock::detail::token_counter(key)},
          {"LRANGE", tagged(rlock::detail::fair_queue_prefix, key), "0", "-1"},
          {"ZRANGE", tagged(rlock::detail::fair_timeout_prefix, key), "0", "-1", "WITHSCORES"},
          {"HGETALL", tagged(rlock::detail::fair_handoff_prefix, key)},
          {"TIME"},
          {"PUBSUB", sharded ? "SHARDNUMSUB" : "NUMSUB", tagged("redisson_rwlock:", key)},
          {"GET", key},
          {"ZRANGE", holds_of(key), "0", "-1", "WITHSCORES"},
          {"HGETALL", tagged(rlock::detail::semaphore_sizes_prefix, key)},
          {"GET", tagged(rlock::detail::semaphore_total_prefix, key)},
          {"PUBSUB", sharded ? "SHARDNUMSUB" : "NUMSUB", tagged("redisson_sc:", key)},
          {"PUBSUB", sharded ? "SHARDNUMSUB" : "NUMSUB",
           "redisson_countdownlatch__channel__{" + key + "}"}};
}

std::vector<command> state_commands(const std::string& key) {
  return {{"HGETALL", key}, {"PTTL", key}, {"GET", key}, {"ZRANGE", holds_of(key), "0", "-1"}};
}

lock_view read_state(std::string name, const std::vector<reply>& answers, std::size_t first) {
  lock_view v;
  v.name = std::move(name);
  // A semaphore's key is a string, which HGETALL refuses: its count and holds instead.
  if (first < answers.size() && answers[first].is_error() &&
      answers[first].str.starts_with("WRONGTYPE") && first + 3 < answers.size()) {
    const auto count = to_int(answers[first + 2].str);
    if (count) {
      v.available = count;
      v.permits = read_holds(checked(answers, first + 3, "ZRANGE"), nullptr, std::nullopt);
      v.status = v.permits.empty() ? lock_view::state::free : lock_view::state::held;
      return v;
    }
  }
  const reply& hash = checked(answers, first, "HGETALL");
  const reply& pttl = checked(answers, first + 1, "PTTL");
  auto hs = lock_holders(hash, &v.mode);
  if (!hs) {
    v.status = lock_view::state::not_a_lock;
    v.key_type = "hash";
    return v;
  }
  v.holders = std::move(*hs);
  v.status = v.holders.empty() ? lock_view::state::free : lock_view::state::held;
  // PTTL is -2 when the key went away between the two commands: free.
  if (v.status == lock_view::state::held && pttl.integer != -2) v.ttl_ms = pttl.integer;
  if (pttl.integer == -2) {
    v.holders.clear();
    v.mode.clear();
    v.status = lock_view::state::free;
  }
  return v;
}

lock_view read_status(std::string name, const std::vector<reply>& answers) {
  const reply& type_reply = checked(answers, 0, "TYPE");
  // HGETALL of a key of another type is refused (WRONGTYPE): decode only what applies.
  lock_view v;
  if (type_reply.str == "hash" || type_reply.str == "none") {
    v = read_state(std::move(name), answers, 1);
  } else if (const auto count = answers.size() > 14 && type_reply.str == "string"
                                    ? to_int(answers[10].str)
                                    : std::nullopt) {
    // An integer string: a semaphore's counter (Redisson's RSemaphore and
    // RPermitExpirableSemaphore), with rlock's and Redisson's holds in `{name}:timeout`.
    v.name = std::move(name);
    v.available = count;
    const auto now = server_now(checked(answers, 8, "TIME"));
    v.permits = read_holds(checked(answers, 11, "ZRANGE"), &checked(answers, 12, "HGETALL"), now);
    const reply& total = checked(answers, 13, "GET");
    if (!total.is_null()) v.total = to_int(total.str);
    v.status = v.permits.empty() ? lock_view::state::free : lock_view::state::held;
    const reply& waiters = checked(answers, 14, "PUBSUB NUMSUB");
    if (waiters.elements.size() == 2) v.subscribers = waiters.elements[1].integer;
    if (answers.size() > 15) {
      const reply& latch = checked(answers, 15, "PUBSUB NUMSUB");
      if (latch.elements.size() == 2) v.latch_waiters = latch.elements[1].integer;
    }
    if (v.is_latch()) v.status = lock_view::state::free;
    return v;
  } else {
    v.name = std::move(name);
    v.status = lock_view::state::not_a_lock;
    v.key_type = type_reply.str;
  }
  const reply& numsub = checked(answers, 3, "PUBSUB NUMSUB");
  // [channel, count] as an array (or a map in some proxies).
  if (numsub.elements.size() == 2) v.subscribers = numsub.elements[1].integer;
  if (!v.mode.empty() && answers.size() > 9) {
    // A read-write lock's waiters listen on its own channel.
    const reply& rw = checked(answers, 9, "PUBSUB NUMSUB");
    if (rw.elements.size() == 2) v.subscribers = rw.elements[1].integer;
  }
  const reply& token = checked(answers, 4, "GET");
  if (!token.is_null()) v.token = to_int(token.str);
  v.queue = read_queue(answers);
  return v;
}

std::string describe(const lock_view& v) {
  if (v.is_latch()) {
    return fmt::format("{}: count-down latch, count {}{}, {} waiter(s)", v.name, *v.available,
                       *v.available <= 0 ? " (open)" : "", *v.latch_waiters);
  }
  if (v.available) {
    std::string text = fmt::format("{}: semaphore, {} permit(s) available", v.name, *v.available);
    if (v.total) text += fmt::format(" of {}", *v.total);
    if (!v.permits.empty()) text += fmt::format(", held by {}", holds_text(v.permits));
    if (v.subscribers && *v.subscribers > 0) {
      text += fmt::format(", {} subscriber(s)", *v.subscribers);
    }
    return text;
  }
  switch (v.status) {
    case lock_view::state::free:
      return fmt::format(
          "{}: free{}{}", v.name,
          v.subscribers && *v.subscribers > 0 ? fmt::format(", {} subscriber(s)", *v.subscribers)
                                              : std::string(),
          v.queue.empty() ? std::string() : fmt::format(", fair, queue: {}", queue_text(v.queue)));
    case lock_view::state::not_a_lock:
      return fmt::format("{}: not a lock (the key is a {})", v.name, v.key_type);
    case lock_view::state::held:
      break;
  }
  std::string text = fmt::format("{}: held by {}", v.name, holders_text(v.holders));
  if (v.ttl_ms) {
    text += *v.ttl_ms < 0 ? ", no TTL" : fmt::format(", ttl {} ms", *v.ttl_ms);
  }
  if (v.subscribers) text += fmt::format(", {} subscriber(s)", *v.subscribers);
  text += fmt::format(", {}", v.kind());
  if (!v.mode.empty()) text += fmt::format(" (mode {})", v.mode);
  if (v.token) text += fmt::format(" (last token {})", *v.token);
  if (!v.queue.empty()) text += fmt::format(", queue: {}", queue_text(v.queue));
  return text;
}

boost::json::object to_json(const lock_view& v) {
  boost::json::object o;
  o["lock"] = v.name;
  o["state"] = v.status_name();
  if (v.status == lock_view::state::not_a_lock) {
    o["type"] = v.key_type;
  } else {
    o["kind"] = v.kind();
    boost::json::array hs;
    for (const auto& h : v.holders) {
      boost::json::object e{{"owner", h.owner}, {"count", h.count}};
      if (!h.role.empty()) e["role"] = h.role;
      hs.push_back(std::move(e));
    }
    o["holders"] = std::move(hs);
    if (!v.mode.empty()) o["mode"] = v.mode;
    if (v.ttl_ms) o["ttl_ms"] = *v.ttl_ms;
  }
  if (v.is_latch()) {
    o["count"] = *v.available;
    o["waiters"] = *v.latch_waiters;
  } else if (v.available) {
    o["available"] = *v.available;
    if (v.total) o["total"] = *v.total;
    boost::json::array hs;
    for (const auto& h : v.permits) {
      boost::json::object e{{"id", h.id}, {"permits", h.permits}};
      if (h.expires_in_ms) e["expires_in_ms"] = *h.expires_in_ms;
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
      if (w.deadline_in_ms) e["deadline_in_ms"] = *w.deadline_in_ms;
      q.push_back(std::move(e));
    }
    o["queue"] = std::move(q);
  }
  return o;
}

std::optional<lock_change> describe_change(const lock_view& before, const lock_view& after,
                                           std::string_view event) {
  using st = lock_view::state;
  if (after.available || before.available) {
    // A semaphore: its count and its holds.
    if (before.available == after.available && before.permits == after.permits) {
      return std::nullopt;
    }
    if (before.permits.empty() && after.permits.empty()) {
      // A count and no holds either side: the key alone cannot tell a count-down latch's count
      // (Redisson's RCountDownLatch) from a semaphore's free permits (RSemaphore).
      const auto n = after.available.value_or(0);
      return lock_change{"count", fmt::format("count {}{} (a count-down latch's, or a semaphore's "
                                              "free permits)",
                                              n, n <= 0 ? ", open" : "")};
    }
    return lock_change{"permits", fmt::format("{} permit(s) available, {} hold(s)",
                                              after.available.value_or(0), after.permits.size())};
  }
  const bool was = before.status == st::held;
  const bool is = after.status == st::held;
  if (!was && is) {
    return lock_change{"locked", fmt::format("locked by {}", holders_text(after.holders))};
  }
  if (was && !is) {
    const std::string who = holders_text(before.holders);
    if (event == "expired") return lock_change{"expired", fmt::format("expired (held by {})", who)};
    return lock_change{"released", fmt::format("released by {}", who)};
  }
  if (!was && !is) {
    // The whole hold happened between two reads.
    if (event == "hincrby" || event == "unlock-message") {
      return lock_change{"released", "locked and released between two reads"};
    }
    if (event == "expired") return lock_change{"expired", "expired"};
    return std::nullopt;
  }
  if (before.holders == after.holders) {
    if (event == "expire") {
      return lock_change{"renewed",
                         fmt::format("renewed by {} (ttl {} ms)", holders_text(after.holders),
                                     after.ttl_ms.value_or(-1))};
    }
    return std::nullopt;
  }
  if (!before.mode.empty() && !after.mode.empty()) {
    // A read-write lock: owners come and go beside each other (readers share it).
    for (const auto& h : after.holders) {
      if (find(before.holders, h.owner, h.role) == nullptr) {
        return lock_change{
            "locked", fmt::format("{} half taken by {} (mode {})", h.role, h.owner, after.mode)};
      }
    }
    for (const auto& h : before.holders) {
      if (find(after.holders, h.owner, h.role) == nullptr) {
        return lock_change{"released-once", fmt::format("{} half released by {} (mode {})", h.role,
                                                        h.owner, after.mode)};
      }
    }
  }
  for (const auto& h : after.holders) {
    const holder* old = find(before.holders, h.owner, h.role);
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
