#include "script/loaded_source.hpp"

#include <array>
#include <cstddef>
#include <string>

namespace rlock::detail {

namespace {

/// The body runs as a function (its `return`s return from it, its locals stay its own), then
/// the read, then the body's answer.
std::string with_tracking_read(const script_row& row) {
  std::string_view read;
  switch (row.kind) {
    case command_kind::acquire:
      read = "redis.call('exists', KEYS[1])\n";
      break;
    case command_kind::renew:
      read = "for i = 1, #KEYS do redis.call('exists', KEYS[i]) end\n";
      break;
    default:
      return std::string(row.source);
  }
  std::string out = "local function rlock_body()\n";
  out.append(row.source);
  out.append("\nend\nlocal answer = rlock_body()\n");
  out.append(read);
  out.append("return answer\n");
  return out;
}

}  // namespace

std::string_view loaded_source(script s) {
  // Made once, before the first connection's handshake loads them (thread-safe).
  static const std::array<std::string, script_count> sources = [] {
    std::array<std::string, script_count> out;
    for (std::size_t i = 0; i < script_count; ++i) out[i] = with_tracking_read(script_table[i]);
    return out;
  }();
  return sources[static_cast<std::size_t>(s)];
}

}  // namespace rlock::detail
