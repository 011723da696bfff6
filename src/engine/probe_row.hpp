#pragma once

// A kind's part of the lock probe (rlock::inspect), sans I/O: the keys it reads beside the ones
// every lock has, how it reads their answers into a lock_info, and whether the keys as read are
// its own. A kind that rlock::inspect should tell apart sets `lock_kind::probe` to its row, in its
// own file; the probe (src/inspect/lock_probe.cpp) asks every registered row and knows no kind.
#include "resp3/value.hpp"
#include "rlock/detail/failure.hpp"
#include "rlock/lock_info.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::detail {

using probe_command = std::vector<std::string>;

/// What the probe asks of every key, first, in this order.
enum class probe_common : std::size_t { key_type, hash, pttl, server_time, value, count };

/// The answers a row reads: its own (in the order of its commands), the common ones, the
/// server's clock in ms (TIME's answer, if it reads as one), and the subscribers of the kind's
/// channel (lock_kind::channel: the probe asks every registered kind's).
struct probe_answers {
  std::span<const resp3::value> own;
  std::span<const resp3::value> common;
  std::optional<std::int64_t> now;
  std::optional<std::int64_t> subscribers;
  /// The common answer `which`.
  const resp3::value& operator[](probe_common which) const noexcept {
    return common[static_cast<std::size_t>(which)];
  }
};

/// One kind's reading of its keys.
struct probe_row {
  /// What the keys are when this row claims them.
  key_kind kind = key_kind::other;
  /// Redis's TYPE of the key of this kind: "hash" (read for "none" too: a free lock can have
  /// waiters) or "string" (an integer counter).
  std::string_view stored_as;
  /// Rows of one type are asked to claim in this order (lower first); the first that claims
  /// names the kind, so a kind whose keys extend another's (fenced: a reentrant hash and a token
  /// counter) comes before it.
  int order = 0;
  /// How many commands `commands` adds (0: none; its channel's subscribers are the probe's).
  std::size_t command_count = 0;
  /// Its commands, all on names in the key's slot: `numsub` is the subscriber count's
  /// subcommand (NUMSUB, or SHARDNUMSUB under Cluster on Redis 7).
  void (*commands)(std::string_view key, std::string_view numsub,
                   std::vector<probe_command>& out) = nullptr;
  /// Reads its answers into `info` (the probe has checked that each is there and no refusal);
  /// null: nothing of its own. Every row of the key's type reads before any claims.
  void (*read)(const probe_answers& answers, lock_info& info) = nullptr;
  /// Whether the keys as read are this kind's; if so, sets what is the kind's alone (its
  /// counter). The probe then names the kind and, from its descriptor, its channel and that
  /// channel's subscribers.
  bool (*claim)(const probe_answers& answers, lock_info& info) = nullptr;
};

// --- reading helpers the rows share -------------------------------------------------------------

/// A refused answer (Redis's words and their errc) or a missing one (protocol_error), named by
/// the command that was asked; none otherwise.
failure probe_failure(std::span<const resp3::value> answers, std::size_t i,
                      std::string_view command);
/// An integer in text, if the whole text is one.
std::optional<std::int64_t> probe_int(std::string_view s);
/// PUBSUB NUMSUB's count: [channel, count] as an array (or a map in some proxies).
std::optional<std::int64_t> probe_numsub(const resp3::value& v);
/// The server's clock in ms from TIME's answer, if it reads as one.
std::optional<std::int64_t> probe_server_now(const resp3::value& time);
/// From `now` until a zset score (ms on the server's clock), if the score is a time: computed in
/// double, so a score of 2^63, inf or nan reads as no time rather than as an overflow.
std::optional<std::chrono::milliseconds> probe_until(const resp3::value& score, std::int64_t now);
/// A zset score as a double (RESP3's double, or RESP2's text).
double probe_score(const resp3::value& v);
/// Calls `each(member, score or null)` for a ZRANGE … WITHSCORES answer: RESP3 nests
/// [member, score] pairs, RESP2 alternates them.
template <typename Each>
void probe_each_scored(const resp3::value& z, Each each) {
  const auto& e = z.elements;
  for (std::size_t i = 0; i < e.size(); ++i) {
    if (e[i].type == resp3::type::array && e[i].elements.size() == 2) {
      each(e[i].elements[0].str, &e[i].elements[1]);
    } else {
      const resp3::value* score = i + 1 < e.size() ? &e[i + 1] : nullptr;
      ++i;
      each(e[i - 1].str, score);
    }
  }
}
/// A name built by `append` from the key, as a string.
std::string probe_name(void (*append)(std::string_view, std::string&), std::string_view key);
/// `<prefix>{<key>}`, as a string.
std::string probe_tagged(std::string_view prefix, std::string_view key);

}  // namespace rlock::detail
