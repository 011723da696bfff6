#pragma once

#include "rlock/error.hpp"

#include <string_view>

namespace rlock::detail {

/// The rlock error an error reply stands for, from its leading word (Redis's error prefix).
inline errc errc_of_reply(std::string_view text) noexcept {
  if (text.starts_with("NOPERM")) return errc::permission_denied;
  // An ACL refusal inside a script (Redis 7): "ERR The user executing the script can't publish
  // to the channel ...", "... can't access at least one of the keys ...".
  if (text.find("The user executing the script can't") != std::string_view::npos) {
    return errc::permission_denied;
  }
  if (text.starts_with("WRONGPASS") || text.starts_with("NOAUTH")) return errc::auth_failed;
  return errc::server_error;
}

}  // namespace rlock::detail
