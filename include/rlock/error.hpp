#pragma once

#include <string>
#include <system_error>

namespace rlock {

/// Errors reported by rlock, in the `rlock` error category.
enum class errc {
  /// The caller does not hold the lock it tried to unlock (Redisson's
  /// IllegalMonitorStateException).
  not_owner = 1,
  /// The watchdog found that a held lock is no longer ours (expired, deleted or force-unlocked).
  lock_lost,
  /// A command got no reply within `config::command_timeout`, or a connect took too long.
  timeout,
  /// An argument is out of range: empty lock name, non-positive lease, negative wait.
  invalid_argument,
  /// The server sent bytes that are not valid RESP3, or a reply of an unexpected shape.
  protocol_error,
  /// Redis answered with an error reply; its text travels beside the code.
  server_error,
  /// The connection to Redis was lost, or the client is not connected.
  connection_lost,
  /// A blocking call was made from a handler of the same blocking client, where it would wait
  /// for itself.
  would_deadlock,
};

/// The category of `rlock::errc`; its name is "rlock".
const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// A `std::system_error` carrying an rlock error and, where Redis sent one, its error text.
[[noreturn]] void throw_error(errc e, const std::string& what = {});

}  // namespace rlock

template <>
struct std::is_error_code_enum<rlock::errc> : std::true_type {};
