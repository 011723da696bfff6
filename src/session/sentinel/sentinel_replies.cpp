#include "session/sentinel/sentinel_replies.hpp"

#include <fmt/format.h>

#include <charconv>
#include <vector>

namespace rlock::detail {

namespace {

std::optional<std::uint16_t> port_of(std::string_view text) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value == 0 || value > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(value);
}

bool is_text(const resp3::value& v) {
  return v.type == resp3::type::blob_string || v.type == resp3::type::simple_string;
}

}  // namespace

std::optional<config::endpoint> master_address(const resp3::value& reply, std::string& why) {
  if (reply.is_null()) {
    why = "does not know that master name";
    return std::nullopt;
  }
  if (reply.is_error()) {
    why = reply.str;
    return std::nullopt;
  }
  if (reply.type == resp3::type::array && reply.elements.size() == 2 &&
      is_text(reply.elements[0]) && !reply.elements[0].str.empty() && is_text(reply.elements[1])) {
    if (auto port = port_of(reply.elements[1].str)) {
      return config::endpoint{reply.elements[0].str, *port};
    }
  }
  why = "answered SENTINEL get-master-addr-by-name with something other than [host, port]";
  return std::nullopt;
}

bool says_master(const resp3::value& reply, std::string& why) {
  if (reply.type == resp3::type::array && !reply.elements.empty() && is_text(reply.elements[0])) {
    if (reply.elements[0].str == "master") return true;
    why = fmt::format("ROLE says '{}'", reply.elements[0].str);
    return false;
  }
  why = reply.is_error() ? fmt::format("ROLE failed: {}", reply.str)
                         : std::string("ROLE answered with something other than a role");
  return false;
}

std::optional<master_switch> parse_switch_master(std::string_view payload) {
  std::vector<std::string_view> words;
  while (!payload.empty() && words.size() <= 5) {
    const auto space = payload.find(' ');
    const auto word = payload.substr(0, space);
    if (!word.empty()) words.push_back(word);
    if (space == std::string_view::npos) break;
    payload.remove_prefix(space + 1);
  }
  if (words.size() != 5) return std::nullopt;
  auto port = port_of(words[4]);
  if (!port) return std::nullopt;
  return master_switch{std::string(words[0]), config::endpoint{std::string(words[3]), *port}};
}

}  // namespace rlock::detail
