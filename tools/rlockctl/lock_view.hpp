#pragma once

#include <boost/json/object.hpp>

#include <optional>
#include <rlock/inspect.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace rlockctl {

/// What rlockctl shows of a lock: what rlock::inspect read (its kind, holders, queue and
/// permits); the reading and the kind are the library's, the words and JSON are the tool's.
using lock_view = rlock::lock_info;

/// "free", "held" or "not-a-lock".
std::string_view status_name(const lock_view& v) noexcept;
/// The kind as the tool's text and JSON name it ("absent": a free lock of any kind).
inline std::string_view kind_name(const lock_view& v) noexcept { return rlock::to_string(v.kind); }

/// One line of `status` or `list`.
std::string describe(const lock_view& view);
boost::json::object to_json(const lock_view& view);

/// What happened to a lock between two views, read after `event` (a keyspace event such as
/// "hincrby", "expire", "del", "expired", or "unlock-message" for a message on its channel, which
/// the caller passes only when it does not see DEL events).
/// Nothing when the views tell nothing new.
struct lock_change {
  std::string kind;  // locked, re-entered, released-once, handed-over, released, expired, renewed
  std::string text;
};
std::optional<lock_change> describe_change(const lock_view& before, const lock_view& after,
                                           std::string_view event);

}  // namespace rlockctl
