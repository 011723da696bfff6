#pragma once

#include "rlock/error.hpp"

#include <string_view>

namespace rlock::detail {

/// The rlock error an error reply stands for, from its leading word (Redis's error prefix) and,
/// for ACL refusals, what was refused. It knows no lock semantics.
inline errc errc_of_reply(std::string_view text) noexcept {
  // An ACL refusal: "NOPERM ..." for a command sent, and inside a script "ERR The user executing
  // the script can't ..." (Redis 7.0) or a script error carrying "-NOPERM ...".
  const bool acl = text.find("NOPERM") != std::string_view::npos ||
                   text.find("The user executing the script can't") != std::string_view::npos;
  if (acl) {
    if (text.find("keys") != std::string_view::npos) return errc::key_not_permitted;
    if (text.find("channel") != std::string_view::npos) return errc::permission_denied;
    if (text.find("command") != std::string_view::npos) return errc::command_not_permitted;
    return errc::permission_denied;
  }
  // A lock kind's own refusals (NON_REENTRANT_REACQUIRE, ...) are the kind's to name
  // (lock_kind::refusals): here they are server errors.
  if (text.starts_with("WRONGPASS") || text.starts_with("NOAUTH")) return errc::auth_failed;
  return errc::server_error;
}

}  // namespace rlock::detail
