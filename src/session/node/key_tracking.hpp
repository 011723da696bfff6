#pragma once

// Server-assisted key tracking (`CLIENT TRACKING ON OPTOUT NOLOOP`), which tells a holder at
// push speed that another client changed its lock's key: when a server can be asked for it, and
// what its invalidation pushes say. Sans I/O.
#include "resp3/value.hpp"

#include <charconv>
#include <string_view>
#include <vector>

namespace rlock::detail {

/// The handshake's command: every key this connection reads is tracked (OPTOUT), and its own
/// writes invalidate nothing for it (NOLOOP).
inline constexpr std::string_view tracking_command[] = {"CLIENT", "TRACKING", "ON", "OPTOUT",
                                                        "NOLOOP"};

/// Whether a server of `version` (HELLO's "7.0.15") keeps NOLOOP inside scripts: 7.0.5 and later.
/// Before, a script's own writes were another client's for tracking, so every acquisition and
/// renewal would invalidate the caller's own keys (and a check renews, which writes again).
/// Valkey answers its own version (8.x): later still. Anything unreadable: no.
inline bool tracking_supported(std::string_view version) noexcept {
  int parts[3] = {0, 0, 0};
  const char* p = version.data();
  const char* const end = version.data() + version.size();
  for (int i = 0; i < 3; ++i) {
    const auto [next, ec] = std::from_chars(p, end, parts[i]);
    if (ec != std::errc{}) return false;
    p = next;
    if (i < 2) {
      if (p == end || *p != '.') return false;
      ++p;
    }
  }
  if (parts[0] != 7) return parts[0] > 7;
  if (parts[1] != 0) return parts[1] > 0;
  return parts[2] >= 5;
}

/// An invalidation push, `["invalidate", [key...]]`, or `["invalidate", nil]` (a FLUSHALL, a
/// FLUSHDB, the tracking table's own eviction of everything): the keys it names, or all.
struct invalidation {
  bool is_one = false;                 // the push is an invalidation
  bool all = false;                    // every key this connection read
  std::vector<std::string_view> keys;  // views into the push
};

inline invalidation read_invalidation(const resp3::value& push) {
  invalidation out;
  if (push.elements.size() != 2 || push.elements[0].str != "invalidate") return out;
  out.is_one = true;
  const auto& keys = push.elements[1];
  if (keys.is_null()) {
    out.all = true;
    return out;
  }
  for (const auto& k : keys.elements) out.keys.push_back(k.str);
  return out;
}

}  // namespace rlock::detail
