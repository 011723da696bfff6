#include "lock/names.hpp"

#include <algorithm>

namespace rlock::detail {

namespace {

// Built by hand, not with fmt: every final unlock derives a channel.
std::string tagged(std::string_view prefix, std::string_view key, std::string_view suffix = {},
                   std::size_t room = 0) {
  const bool has_tag = key.find('{') != std::string_view::npos;
  std::string name;
  name.reserve(prefix.size() + key.size() + suffix.size() + 2 + room);
  name.append(prefix);
  if (!has_tag) name.push_back('{');
  name.append(key);
  if (!has_tag) name.push_back('}');
  name.append(suffix);
  return name;
}

}  // namespace

std::string unlock_channel(std::string_view key) { return tagged("redisson_lock__channel:", key); }

std::string unlock_latch(std::string_view key, std::string_view request_id) {
  // Room for a request id of 32 hex digits, appended in place by the unlock.
  std::string latch =
      tagged("redisson_unlock_latch:", key, ":", std::max<std::size_t>(32, request_id.size()));
  latch.append(request_id);
  return latch;
}

std::string token_counter(std::string_view key) { return tagged("redisson_lock_token:", key); }

}  // namespace rlock::detail
