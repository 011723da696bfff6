#pragma once

#include "session/node/multiplexer.hpp"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace rlock::detail {

/// What a command does, which fixes what the session may do when its answer never comes
/// (written, then the connection died): the fault model's table (docs/design/fault-model.md), in
/// one place. The deadline comes with the call, from the same table: an acquire's is its attempt's
/// bound, a renewal's the lease's belief deadline, the others' config::command_timeout
/// (engine/round_trip.hpp).
enum class command_kind : std::uint8_t {
  query,          // reads (HGET, GET, PTTL ...): written again after a reconnect
  acquire,        // may have taken the lock: never written again, the lock reconciles it
  renew,          // extends the owner's own lease: idempotent, written again
  release,        // latched (a retry returns the first answer): written again
  force_release,  // deletes the lock whoever holds it: the same effect twice, written again
  cleanup,        // deletes keys only this client wrote (unlock latches): written again
  load,           // SCRIPT LOAD: idempotent, written again
};

/// May a command of this kind be written again on a new connection after its answer was lost?
constexpr if_unknown unknown_policy(command_kind k) noexcept {
  return k == command_kind::acquire ? if_unknown::fail : if_unknown::retry;
}

/// A command as a value, built in one place: its kind, the key it is about (its route: the
/// connection, or the cluster node owning the key's slot) and its RESP encoding, possibly
/// followed by more commands that must run right after it on the same connection (a script and
/// its `WAIT`). Lock code builds commands, never RESP.
class command {
 public:
  /// `name keys... args...`; routed by the first key (none: any node).
  command(command_kind kind, std::string_view name, std::span<const std::string_view> keys,
          std::span<const std::string_view> args = {});
  command(command_kind kind, std::string_view name, std::initializer_list<std::string_view> keys,
          std::initializer_list<std::string_view> args = {})
      : command(kind, name, std::span<const std::string_view>(keys.begin(), keys.size()),
                std::span<const std::string_view>(args.begin(), args.size())) {}

  /// `EVALSHA sha numkeys keys... args...`.
  static command script(command_kind kind, std::string_view sha,
                        std::span<const std::string_view> keys,
                        std::span<const std::string_view> args);
  /// `name args...`, a command with no key, run on the node of `route` (SCRIPT LOAD, WAIT).
  static command about(command_kind kind, std::string_view route, std::string_view name,
                       std::initializer_list<std::string_view> args);
  /// A command already encoded (a tool's, or a fixed one), routed by `route`.
  static command encoded(command_kind kind, std::string_view route, std::string payload,
                         std::uint8_t answers = 1);

  /// Appends an encoded command to run right after this one on its connection; the reply is
  /// then an array of both answers (request_options::answers).
  void then(std::string_view encoded);

  command_kind kind() const noexcept { return kind_; }
  /// The key it is routed by (empty: any node). Valid while this command is, and its payload
  /// not taken.
  std::string_view route() const noexcept {
    if (!own_route_.empty()) return own_route_;
    return std::string_view(payload_).substr(route_at_, route_size_);
  }
  std::uint8_t answers() const noexcept { return answers_; }
  const std::string& payload() const noexcept { return payload_; }
  std::string take_payload() noexcept { return std::move(payload_); }

  /// The request options its kind fixes, within `deadline`; callers add their hooks.
  request_options options(clock_type::time_point deadline) const noexcept {
    request_options o;
    o.deadline = deadline;
    o.unknown = unknown_policy(kind_);
    o.answers = answers_;
    return o;
  }

 private:
  explicit command(command_kind kind) : kind_(kind) {}
  /// Writes the keys (the first is the route) and arguments at `p`, inside payload_.
  char* put_keys_and_args(char* p, std::span<const std::string_view> keys,
                          std::span<const std::string_view> args) noexcept;

  command_kind kind_;
  std::uint8_t answers_ = 1;
  std::size_t route_at_ = 0;
  std::size_t route_size_ = 0;
  std::string payload_;
  std::string own_route_;  // encoded(): the route is not inside the payload
};

}  // namespace rlock::detail
