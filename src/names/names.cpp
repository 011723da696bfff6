#include "names/names.hpp"

namespace rlock::detail {

namespace {

// Built by hand, not with fmt: every final unlock derives a channel and a latch.
void append_tagged(std::string& out, std::string_view prefix, std::string_view key,
                   std::string_view suffix = {}) {
  const bool has_tag = key.find('{') != std::string_view::npos;
  out.append(prefix);
  if (!has_tag) out.push_back('{');
  out.append(key);
  if (!has_tag) out.push_back('}');
  out.append(suffix);
}

std::string tagged(std::string_view prefix, std::string_view key, std::string_view suffix = {},
                   std::size_t room = 0) {
  std::string name;
  name.reserve(prefix.size() + key.size() + suffix.size() + 2 + room);
  append_tagged(name, prefix, key, suffix);
  return name;
}

constexpr std::string_view channel_prefix = "redisson_lock__channel:";
constexpr std::string_view latch_prefix = "redisson_unlock_latch:";

}  // namespace

std::string unlock_channel(std::string_view key) { return tagged(channel_prefix, key); }

void append_unlock_channel(std::string_view key, std::string& out) {
  append_tagged(out, channel_prefix, key);
}

std::string unlock_latch(std::string_view key, std::string_view request_id) {
  std::string latch = tagged(latch_prefix, key, ":", request_id.size());
  latch.append(request_id);
  return latch;
}

void append_unlock_latch(std::string_view key, std::string& out) {
  append_tagged(out, latch_prefix, key, ":");
}

std::string token_counter(std::string_view key) { return tagged("redisson_lock_token:", key); }

void append_tagged_name(std::string_view prefix, std::string_view key, std::string& out) {
  append_tagged(out, prefix, key);
}

void append_semaphore_channel(std::string_view key, std::string& out) {
  append_tagged(out, "redisson_sc:", key);
}

void append_rwlock_channel(std::string_view key, std::string& out) {
  append_tagged(out, "redisson_rwlock:", key);
}

void append_semaphore_holds(std::string_view key, std::string& out) {
  append_read_timeouts(key, {}, out);
  out.append(":timeout");
}

void append_latch_channel(std::string_view key, std::string& out) {
  out.append("redisson_countdownlatch__channel__{").append(key).push_back('}');
}

void append_read_timeouts(std::string_view key, std::string_view field, std::string& out) {
  append_tagged(out, {}, key);
  if (field.empty()) return;
  out.push_back(':');
  out.append(field);
  out.append(":rwlock_timeout");
}

void append_writer_marks(std::string_view key, std::string& out) {
  append_tagged(out, {}, key, ":rlock_writers");
}

void append_writer_queue(std::string_view key, std::string& out) {
  append_tagged(out, {}, key, ":rlock_writer_queue");
}

}  // namespace rlock::detail
