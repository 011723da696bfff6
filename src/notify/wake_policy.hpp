#pragma once

#include <cstdint>
#include <string_view>

namespace rlock::detail {

/// Whom a message on a channel wakes among one client's waiters on it.
/// `grant`: the lock was handed to one acquisition by push (a fair lock's handoff): the waiter
/// whose ticket the message names holds it.
/// `some`: up to `ticket` waiters, oldest first (a semaphore's release: the permits now free).
enum class wake_policy : std::uint8_t { none, one, all, grant, some };

/// How a channel's owner reads its messages (the lock kind's, lock_kind::on_message): the wait
/// hub knows no payloads.
/// `ticket` is set for a grant.
using message_policy = wake_policy (*)(std::string_view payload, std::uint32_t& ticket) noexcept;

}  // namespace rlock::detail
