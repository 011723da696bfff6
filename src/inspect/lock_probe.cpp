#include "inspect/lock_probe.hpp"

#include "names/names.hpp"
#include "names/permit_id.hpp"
#include "session/redis_error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>

namespace rlock {

std::string_view to_string(key_kind k) noexcept {
  switch (k) {
    case key_kind::absent:
      return "absent";
    case key_kind::reentrant:
      return "reentrant";
    case key_kind::fair:
      return "fair";
    case key_kind::fenced:
      return "fenced";
    case key_kind::read_write:
      return "read-write";
    case key_kind::semaphore:
      return "semaphore";
    case key_kind::count_down_latch:
      return "count-down-latch";
    case key_kind::other:
      return "other";
  }
  return "unknown";
}

}  // namespace rlock

namespace rlock::detail {

namespace {

using resp3::type;
using std::chrono::milliseconds;

/// Where each answer is (probe_commands' order).
enum answer : std::size_t {
  key_type,
  hash,
  pttl,
  lock_subscribers,
  token_counter_value,
  fair_queue,
  fair_deadlines,
  fair_handoffs,
  server_time,
  rw_subscribers,
  counter,
  holds,
  hold_sizes,
  semaphore_total,
  semaphore_subscribers,
  latch_subscribers,
  writer_queue,
  writer_marks,
  answer_count,
};

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

std::string tagged(std::string_view prefix, std::string_view key) {
  std::string name;
  append_tagged_name(prefix, key, name);
  return name;
}

/// A name that `append` builds from the key, as a string.
std::string name_of(void (*append)(std::string_view, std::string&), std::string_view key) {
  std::string name;
  append(key, name);
  return name;
}

/// PUBSUB NUMSUB's count: [channel, count] as an array (or a map in some proxies).
std::optional<std::int64_t> numsub(const resp3::value& v) {
  if (v.elements.size() != 2) return std::nullopt;
  return v.elements[1].integer;
}

/// The server's clock in ms from TIME's answer, if it reads as one.
std::optional<std::int64_t> server_now(const resp3::value& time) {
  if (time.elements.size() != 2) return std::nullopt;
  const auto s = to_int(time.elements[0].str);
  const auto us = to_int(time.elements[1].str);
  // A clock a double holds exactly (2^53 ms, 285 000 years), never an overflow.
  if (!s || !us || *s < 0 || *s > (std::int64_t{1} << 53) / 1000 || *us < 0 || *us > 999'999) {
    return std::nullopt;
  }
  return *s * 1000 + *us / 1000;
}

/// From `now` until a zset score (ms on the server's clock), if the score is a time: computed in
/// double, so a score of 2^63, inf or nan (RESP3's doubles, or a foreign writer's) reads as no
/// time rather than as an overflow.
std::optional<milliseconds> until_score(double score, std::int64_t now) {
  const double in = score - static_cast<double>(now);
  constexpr double limit = static_cast<double>(std::int64_t{1} << 53);
  if (!std::isfinite(in) || in > limit || in < -limit) return std::nullopt;
  return milliseconds(static_cast<std::int64_t>(in));
}

double score_of(const resp3::value& v) {
  if (v.type == type::double_type) return v.real;
  double d = 0;
  std::from_chars(v.str.data(), v.str.data() + v.str.size(), d);
  return d;
}

/// Calls `each(member, score or null)` for a ZRANGE answer: RESP3 nests [member, score] pairs,
/// RESP2 alternates them when WITHSCORES was asked.
template <typename Each>
void for_each_scored(const resp3::value& z, Each each) {
  const auto& e = z.elements;
  for (std::size_t i = 0; i < e.size(); ++i) {
    if (e[i].type == type::array && e[i].elements.size() == 2) {
      each(e[i].elements[0].str, &e[i].elements[1]);
    } else {
      const resp3::value* score = i + 1 < e.size() ? &e[i + 1] : nullptr;
      ++i;
      each(e[i - 1].str, score);
    }
  }
}

/// What each answer answers, for the words of a failure (probe_commands' order).
constexpr std::string_view command_of[] = {
    "TYPE",   "HGETALL", "PTTL",   "PUBSUB",  "GET", "LRANGE", "ZRANGE", "HGETALL", "TIME",
    "PUBSUB", "GET",     "ZRANGE", "HGETALL", "GET", "PUBSUB", "PUBSUB", "ZRANGE",  "ZRANGE"};
static_assert(std::size(command_of) == answer_count, "a name for every answer");

/// The first of the answers `which` that is missing (protocol_error) or refused (Redis's words
/// and their errc); none when all are there.
failure first_failure(const std::vector<resp3::value>& answers,
                      std::initializer_list<answer> which) {
  for (const answer i : which) {
    if (i >= answers.size()) {
      return failure(errc::protocol_error, fmt::format("inspect: no answer to {}", command_of[i]));
    }
    if (answers[i].is_error()) {
      return failure(errc_of_reply(answers[i].str),
                     fmt::format("inspect: {}: {}", command_of[i], answers[i].str));
    }
  }
  return {};
}

std::vector<queued_waiter> read_queue(const resp3::value& list, const resp3::value& deadlines,
                                      const resp3::value& handoffs,
                                      std::optional<std::int64_t> now) {
  std::vector<queued_waiter> q;
  for (const auto& e : list.elements) {
    queued_waiter w;
    w.owner = e.str;
    for_each_scored(deadlines, [&](std::string_view member, const resp3::value* score) {
      if (member == w.owner && score != nullptr && now) {
        w.deadline_in = until_score(score_of(*score), *now);
      }
    });
    // A registration for the handoff by push is the waiter's wait; "g:<n>" marks a grant.
    const auto& h = handoffs.elements;
    for (std::size_t i = 0; i + 1 < h.size(); i += 2) {
      if (h[i].str == w.owner) w.by_push = !h[i + 1].str.starts_with("g:");
    }
    q.push_back(std::move(w));
  }
  return q;
}

/// A read-write lock's waiting writers: the queue's order (arrival), then marks without a place;
/// each write field shown as its owner's field, with when its mark lapses.
std::vector<queued_waiter> read_writers(const resp3::value& queue, const resp3::value& marks,
                                        std::optional<std::int64_t> now) {
  std::vector<queued_waiter> out;
  const auto waiter_of = [&](std::string_view field) {
    queued_waiter w;
    w.owner = std::string(field);
    if (w.owner.ends_with(write_field_suffix))
      w.owner.resize(w.owner.size() - write_field_suffix.size());
    for_each_scored(marks, [&](std::string_view member, const resp3::value* score) {
      if (member == field && score != nullptr && now) {
        w.deadline_in = until_score(score_of(*score), *now);
      }
    });
    return w;
  };
  std::vector<std::string_view> placed;
  for_each_scored(queue, [&](std::string_view member, const resp3::value*) {
    placed.push_back(member);
    out.push_back(waiter_of(member));
  });
  for_each_scored(marks, [&](std::string_view member, const resp3::value*) {
    if (std::find(placed.begin(), placed.end(), member) == placed.end()) {
      out.push_back(waiter_of(member));
    }
  });
  return out;
}

std::vector<permit_hold> read_holds(const resp3::value& zrange, const resp3::value& sizes,
                                    std::optional<std::int64_t> now) {
  std::vector<permit_hold> out;
  for_each_scored(zrange, [&](std::string_view member, const resp3::value* score) {
    permit_hold h;
    h.id = std::string(member);
    if (score != nullptr && now) {
      const double at = score_of(*score);
      if (at >= static_cast<double>(redisson_never_expires)) {
        h.never_expires = true;
      } else {
        h.expires_in = until_score(at, *now);
      }
    }
    for (std::size_t k = 0; k + 1 < sizes.elements.size(); k += 2) {
      if (sizes.elements[k].str == member) {
        h.permits = to_int(sizes.elements[k + 1].str).value_or(1);
      }
    }
    // A permit id is 16 bytes on the wire; Redisson and rlock show it in hex.
    if (h.id.size() == permit_id_size) h.id = permit_id_hex(h.id);
    out.push_back(std::move(h));
  });
  return out;
}

/// A counter key (an integer string): a semaphore's, or a latch's while it has waiters and no
/// holds or total (the key alone cannot tell them apart).
failure read_counter(const std::vector<resp3::value>& answers, std::int64_t value,
                     lock_info& info) {
  if (auto f = first_failure(answers, {server_time, holds, hold_sizes, semaphore_total,
                                       semaphore_subscribers, latch_subscribers})) {
    return f;
  }
  const auto& total = answers[semaphore_total];
  info.permits = read_holds(answers[holds], answers[hold_sizes], server_now(answers[server_time]));
  const auto latch_waiters = numsub(answers[latch_subscribers]);
  if (info.permits.empty() && total.is_null() && latch_waiters && *latch_waiters > 0) {
    info.kind = key_kind::count_down_latch;
    info.count = value;
    info.subscribers = latch_waiters;
    info.channel = name_of(&append_latch_channel, info.key);
    return {};
  }
  info.kind = key_kind::semaphore;
  info.available = value;
  if (!total.is_null()) info.total = to_int(total.str);
  info.subscribers = numsub(answers[semaphore_subscribers]);
  info.channel = name_of(&append_semaphore_channel, info.key);
  return {};
}

/// A hash (or no key): a lock of the hash kinds, or a hash that is no lock's.
failure read_hash(const std::vector<resp3::value>& answers, lock_info& info) {
  if (auto f = first_failure(
          answers, {hash, pttl, lock_subscribers, token_counter_value, fair_queue, fair_deadlines,
                    fair_handoffs, server_time, rw_subscribers, writer_queue, writer_marks})) {
    return f;
  }
  auto owners = lock_holders(answers[hash], &info.mode);
  if (!owners) {
    info.kind = key_kind::other;
    info.key_type = "hash";
    info.mode.reset();
    return {};
  }
  info.holders = std::move(*owners);
  // PTTL -2: the key went between HGETALL and PTTL (a pipeline is not atomic): free.
  const std::int64_t ttl = answers[pttl].integer;
  if (ttl == -2) {
    info.holders.clear();
    info.mode.reset();
  } else if (!info.holders.empty() && ttl >= 0) {
    info.ttl = milliseconds(ttl);
  }
  info.subscribers = numsub(answers[lock_subscribers]);
  const auto& token = answers[token_counter_value];
  if (!token.is_null()) info.token = to_int(token.str);
  info.queue = read_queue(answers[fair_queue], answers[fair_deadlines], answers[fair_handoffs],
                          server_now(answers[server_time]));
  info.writers =
      read_writers(answers[writer_queue], answers[writer_marks], server_now(answers[server_time]));
  // Writers waiting for a free lock: a read-write lock, and why it stays free.
  if (info.mode || !info.writers.empty()) {
    info.kind = key_kind::read_write;
    info.subscribers = numsub(answers[rw_subscribers]);
    info.channel = name_of(&append_rwlock_channel, info.key);
  } else if (info.token) {
    info.kind = key_kind::fenced;
  } else if (!info.queue.empty()) {
    info.kind = key_kind::fair;
  } else {
    info.kind = info.holders.empty() ? key_kind::absent : key_kind::reentrant;
  }
  return {};
}

}  // namespace

std::vector<probe_command> probe_commands(std::string_view key, bool sharded) {
  const std::string numsub_of = sharded ? "SHARDNUMSUB" : "NUMSUB";
  const std::string k(key);
  std::vector<probe_command> cmds(answer_count);
  cmds[key_type] = {"TYPE", k};
  cmds[hash] = {"HGETALL", k};
  cmds[pttl] = {"PTTL", k};
  cmds[lock_subscribers] = {"PUBSUB", numsub_of, unlock_channel(key)};
  cmds[token_counter_value] = {"GET", token_counter(key)};
  cmds[fair_queue] = {"LRANGE", tagged(fair_queue_prefix, key), "0", "-1"};
  cmds[fair_deadlines] = {"ZRANGE", tagged(fair_timeout_prefix, key), "0", "-1", "WITHSCORES"};
  cmds[fair_handoffs] = {"HGETALL", tagged(fair_handoff_prefix, key)};
  cmds[server_time] = {"TIME"};
  cmds[rw_subscribers] = {"PUBSUB", numsub_of, name_of(&append_rwlock_channel, key)};
  cmds[counter] = {"GET", k};
  cmds[holds] = {"ZRANGE", name_of(&append_semaphore_holds, key), "0", "-1", "WITHSCORES"};
  cmds[hold_sizes] = {"HGETALL", tagged(semaphore_sizes_prefix, key)};
  cmds[semaphore_total] = {"GET", tagged(semaphore_total_prefix, key)};
  cmds[semaphore_subscribers] = {"PUBSUB", numsub_of, name_of(&append_semaphore_channel, key)};
  cmds[latch_subscribers] = {"PUBSUB", numsub_of, name_of(&append_latch_channel, key)};
  cmds[writer_queue] = {"ZRANGE", name_of(&append_writer_queue, key), "0", "-1", "WITHSCORES"};
  cmds[writer_marks] = {"ZRANGE", name_of(&append_writer_marks, key), "0", "-1", "WITHSCORES"};
  return cmds;
}

failure read_probe(const std::vector<resp3::value>& answers, lock_info& info) {
  info.channel = unlock_channel(info.key);
  info.queue_key = tagged(fair_queue_prefix, info.key);
  if (auto f = first_failure(answers, {key_type})) return f;
  const std::string& type_name = answers[key_type].str;
  if (type_name == "hash" || type_name == "none") return read_hash(answers, info);
  if (type_name == "string") {
    // GET refuses no string: only its text can tell a counter from other text.
    if (auto f = first_failure(answers, {counter})) return f;
    if (const auto n = to_int(answers[counter].str)) return read_counter(answers, *n, info);
  }
  info.kind = key_kind::other;
  info.key_type = type_name;
  return {};
}

std::optional<std::vector<lock_holder>> lock_holders(const resp3::value& hgetall,
                                                     std::optional<hold_role>* mode) {
  // RESP3 answers a map; RESP2 (or a proxy) a flat array: both alternate field and value.
  if (hgetall.type != type::map && hgetall.type != type::array) return std::nullopt;
  const auto& e = hgetall.elements;
  if (e.size() % 2 != 0) return std::nullopt;
  std::optional<hold_role> found_mode;
  for (std::size_t i = 0; i < e.size(); i += 2) {
    if (e[i].str != "mode") continue;
    if (e[i + 1].str == "read") {
      found_mode = hold_role::read;
    } else if (e[i + 1].str == "write") {
      found_mode = hold_role::write;
    } else {
      return std::nullopt;
    }
  }
  std::vector<lock_holder> hs;
  for (std::size_t i = 0; i < e.size(); i += 2) {
    std::string_view field = e[i].str;
    if (field == "mode") continue;
    hold_role role = hold_role::exclusive;
    if (found_mode) {
      role = hold_role::read;
      if (field.ends_with(write_field_suffix)) {
        field.remove_suffix(write_field_suffix.size());
        role = hold_role::write;
      }
    }
    const auto count = to_int(e[i + 1].str);
    if (!is_owner_field(field) || !count || *count <= 0) return std::nullopt;
    hs.push_back({std::string(field), *count, role});
  }
  if (mode != nullptr) *mode = found_mode;
  return hs;
}

}  // namespace rlock::detail
