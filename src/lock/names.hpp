#pragma once

#include <string>
#include <string_view>

namespace rlock::detail {

/// Redisson's names around a lock key. Each puts the key in braces (a Cluster hash tag, so the
/// name lands in the key's slot) unless the key already contains '{' and carries its own tag.

/// The unlock channel: `redisson_lock__channel:{<key>}`.
std::string unlock_channel(std::string_view key);
/// Appends it to `out` (an unlock builds its channel and latch in one buffer).
void append_unlock_channel(std::string_view key, std::string& out);

/// The unlock latch (3.24.1+): `redisson_unlock_latch:{<key>}:<request id>`. It keeps a
/// release's first answer, so a retried release returns it. With an empty id: the prefix, with
/// room for a 32-digit id appended in place.
std::string unlock_latch(std::string_view key, std::string_view request_id);
/// Appends the latch's prefix, `redisson_unlock_latch:{<key>}:`, to `out`.
void append_unlock_latch(std::string_view key, std::string& out);

/// The fenced lock's token counter (RFencedLock): `redisson_lock_token:{<key>}`, an integer with
/// no TTL, incremented by every successful acquisition.
std::string token_counter(std::string_view key);

}  // namespace rlock::detail
