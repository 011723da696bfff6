// rlock::config's own functions: reading a Redis URL.
#include "rlock/config.hpp"

#include "rlock/error.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace rlock {

config config::from_url(const std::string& url) {
  auto bad = [&url](std::string_view why) {
    throw_error(errc::invalid_argument, fmt::format("bad Redis URL '{}': {}", url, why));
  };
  config c;
  std::string_view rest = url;
  if (rest.starts_with("redis://")) {
    rest.remove_prefix(8);
  } else if (rest.starts_with("rediss://")) {
    rest.remove_prefix(9);
    c.tls.enabled = true;
  } else {
    bad("it must start with redis:// or rediss://");
  }
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view auth = rest.substr(0, at);
    rest.remove_prefix(at + 1);
    if (auto colon = auth.find(':'); colon != std::string_view::npos) {
      c.username = std::string(auth.substr(0, colon));
      c.password = std::string(auth.substr(colon + 1));
    } else {
      c.password = std::string(auth);
    }
  }
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    std::string_view db = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    if (!db.empty()) {
      auto [p, ec] = std::from_chars(db.data(), db.data() + db.size(), c.database);
      if (ec != std::errc{} || p != db.data() + db.size() || c.database < 0) bad("bad database");
    }
  }
  if (auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    std::string_view port = rest.substr(colon + 1);
    unsigned value = 0;
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc{} || p != port.data() + port.size() || value == 0 || value > 65535) {
      bad("bad port");
    }
    c.port = static_cast<std::uint16_t>(value);
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) bad("no host");
  c.host = std::string(rest);
  return c;
}

}  // namespace rlock
