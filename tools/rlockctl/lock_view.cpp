#include "lock_view.hpp"

#include "lock/names.hpp"
#include "session/redis_error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
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
    throw std::system_error(make_error_code(rlock::errc::protocol_error),
                            fmt::format("{}: no answer", what));
  }
  const reply& r = answers[i];
  if (r.is_error()) {
    throw std::system_error(make_error_code(rlock::detail::errc_of_reply(r.str)),
                            fmt::format("{}: {}", what, r.str));
  }
  return r;
}

std::string holders_text(const std::vector<holder>& hs) {
  std::string text;
  for (const auto& h : hs) {
    if (!text.empty()) text += ", ";
    text += fmt::format("{} (count {})", h.owner, h.count);
  }
  return text;
}

const holder* find(const std::vector<holder>& hs, std::string_view owner) {
  for (const auto& h : hs)
    if (h.owner == owner) return &h;
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

std::optional<std::vector<holder>> lock_holders(const reply& hgetall) {
  // RESP3 answers a map; RESP2 (or a proxy) a flat array: both alternate field and value.
  if (hgetall.type != type::map && hgetall.type != type::array) return std::nullopt;
  const auto& e = hgetall.elements;
  if (e.size() % 2 != 0) return std::nullopt;
  std::vector<holder> hs;
  for (std::size_t i = 0; i < e.size(); i += 2) {
    const auto count = to_int(e[i + 1].str);
    if (!is_owner_field(e[i].str) || !count || *count <= 0) return std::nullopt;
    hs.push_back({e[i].str, *count});
  }
  return hs;
}

std::vector<command> status_commands(const std::string& key, bool sharded) {
  // Sharded channels (Cluster) are counted by the master owning their slot, the lock's.
  return {{"TYPE", key},
          {"HGETALL", key},
          {"PTTL", key},
          {"PUBSUB", sharded ? "SHARDNUMSUB" : "NUMSUB", rlock::detail::unlock_channel(key)},
          {"GET", rlock::detail::token_counter(key)}};
}

std::vector<command> state_commands(const std::string& key) {
  return {{"HGETALL", key}, {"PTTL", key}};
}

lock_view read_state(std::string name, const std::vector<reply>& answers, std::size_t first) {
  lock_view v;
  v.name = std::move(name);
  const reply& hash = checked(answers, first, "HGETALL");
  const reply& pttl = checked(answers, first + 1, "PTTL");
  auto hs = lock_holders(hash);
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
  } else {
    v.name = std::move(name);
    v.status = lock_view::state::not_a_lock;
    v.key_type = type_reply.str;
  }
  const reply& numsub = checked(answers, 3, "PUBSUB NUMSUB");
  // [channel, count] as an array (or a map in some proxies).
  if (numsub.elements.size() == 2) v.subscribers = numsub.elements[1].integer;
  const reply& token = checked(answers, 4, "GET");
  if (!token.is_null()) v.token = to_int(token.str);
  return v;
}

std::string describe(const lock_view& v) {
  switch (v.status) {
    case lock_view::state::free:
      return fmt::format("{}: free{}", v.name,
                         v.subscribers && *v.subscribers > 0
                             ? fmt::format(", {} subscriber(s)", *v.subscribers)
                             : std::string());
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
  if (v.token) text += fmt::format(" (last token {})", *v.token);
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
    for (const auto& h : v.holders) hs.push_back({{"owner", h.owner}, {"count", h.count}});
    o["holders"] = std::move(hs);
    if (v.ttl_ms) o["ttl_ms"] = *v.ttl_ms;
  }
  if (v.subscribers) o["subscribers"] = *v.subscribers;
  if (v.token) o["token"] = *v.token;
  return o;
}

std::optional<lock_change> describe_change(const lock_view& before, const lock_view& after,
                                           std::string_view event) {
  using st = lock_view::state;
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
  for (const auto& h : after.holders) {
    const holder* old = find(before.holders, h.owner);
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
