#pragma once

#include <cstdint>
#include <string_view>

namespace rlock::detail {

/// Whom a message on a channel wakes among one client's waiters on it.
enum class wake_policy : std::uint8_t { none, one, all };

/// How a channel's owner reads its messages (the lock kind's, lock_kind::on_message): the wait
/// hub knows no payloads.
using message_policy = wake_policy (*)(std::string_view payload) noexcept;

}  // namespace rlock::detail
