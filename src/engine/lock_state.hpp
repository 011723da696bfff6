#pragma once

#include "engine/lock_kind.hpp"
#include "names/names.hpp"
#include "resp3/value.hpp"
#include "rlock/detail/failure.hpp"
#include "rlock/log.hpp"
#include "rlock/wake_reason.hpp"
#include "session/command.hpp"
#include "session/node/multiplexer.hpp"
#include "watchdog/watchdog.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace rlock::detail {

class engine_context;
class owner_table;

/// The failure of a round trip of a lock operation `what` ("lock 'x'", "PTTL"): Redis's text for
/// an error reply, the bound for a timeout, the session's last error for a lost connection.
failure failure_of(const engine_context& c, std::error_code ec, const resp3::value& reply,
                   std::string_view what);

/// One owner of one lock, shared by the handles of that owner. Kept small (bench S5 holds
/// 100 000 of them): the channel is derived when needed, the name is a view into the key, and
/// the lost() timer exists only while someone awaits it. Mutable members are touched on the
/// client's executor only.
struct lock_state final : std::enable_shared_from_this<lock_state>, watchdog::lease {
  lock_state(std::shared_ptr<engine_context> c, std::string_view name, std::uint64_t owner,
             const lock_kind& kind, bool registered);
  ~lock_state();

  /// Bookkeeping after the acquire script, sent at `sent`, took (or re-entered) the lock. A
  /// nonzero `claim`: the server holds it only that long until a renewal runs (a handoff by
  /// push; watchdog::add).
  void on_acquired(std::chrono::milliseconds lease, bool renew,
                   std::chrono::steady_clock::time_point sent,
                   std::chrono::milliseconds claim = {});
  /// What before_release changed, for release_not_sent to undo.
  struct release_undo {
    std::uint64_t holds = 0;
    bool watched = false;
    std::chrono::steady_clock::time_point confirmed{};
    std::chrono::milliseconds claim{};  // still a claim (watchdog::add): not renewed since
  };
  /// Bookkeeping before a release is sent: stop renewing before the final release goes out,
  /// so a released lock is never renewed.
  release_undo before_release();
  /// The release was never sent (it timed out while the session was down): undo
  /// before_release.
  void release_not_sent(const release_undo& undo);
  struct release_outcome {
    failure error;  // to report: errc::not_owner if it was not held
    /// The server still counts holds of this owner that no caller here has (an acquire that
    /// ran after it was reconciled as not run, see maybe_orphaned): give them back.
    bool orphaned = false;
    /// Answered "released" or "not held", but this owner was granted a hold after the release
    /// began (`grants` moved): that hold stands if it ran after the release, so nothing was
    /// reset; the server is asked whether it still counts one (verify_hold).
    bool verify = false;
  };
  /// Bookkeeping after the release script's reply (sent at `sent`, begun when `grants` was
  /// `grants_at_start`).
  release_outcome on_released(const resp3::value& reply, std::chrono::steady_clock::time_point sent,
                              std::uint32_t grants_at_start);
  /// Stops renewal and tells lost() waiters; local bookkeeping only.
  void reset(bool lost);

  std::string_view name() const noexcept;
  /// The client's executor: every mutable member is touched on it.
  const boost::asio::any_io_executor& executor() const noexcept;
  /// The send time of the latest acquire or renewal of this hold known to have run, while the
  /// watchdog renews it (epoch: not renewed).
  std::chrono::steady_clock::time_point renewal_confirmed() const noexcept;
  /// Logs `lock '<name>' (owner <client>:<owner>)` and then `text` through config::log; formats
  /// nothing without a logger.
  template <typename... Args>
  void log(log_level level, fmt::format_string<Args...> text, Args&&... args) const {
    if (logging()) log_line(level, fmt::format(text, std::forward<Args>(args)...));
  }
  /// Where this owner's waiters listen: the lock's channel, or (fair kinds) their own.
  std::string channel() const {
    std::string c;
    kind.channel(key(), c);
    if (kind.waiting == wait_mode::queue) {
      c.push_back(':');
      c.append(field());
    }
    return c;
  }
  /// What the lock kind sees of it.
  lock_identity identity() const noexcept { return {key(), field(), permits}; }

  std::string_view lease_key() const noexcept override { return key(); }
  std::string_view lease_field() const noexcept override { return field(); }
  script renewal_script() const noexcept override { return kind.renew; }
  void on_lease_lost(std::string_view why) override;
  void on_watchdog_stopped() override { reset(false); }
  bool checked_when_changed() const noexcept override { return !kind.shared_key; }

  // Ordered by size: a lock_state is per owner (bench S5 holds 100 000, S6 one per waiter).
  const std::shared_ptr<engine_context> ctx;  // the client, as the engine sees it
  const lock_kind& kind;                      // what the engine runs (lock_kind.hpp)
  const std::uint64_t owner;
  /// The fencing token of this owner's latest acquisition (fenced locks; 0 before the first).
  /// Read from any thread.
  std::atomic<std::int64_t> token{0};
  std::uint64_t local_holds = 0;  // acquisitions not yet released, as far as we know
  /// The holds the server counts for this owner as of the latest answer: moved by answers only
  /// (a release lowers it when its answer comes, not when it is sent), so that an HGET asked
  /// to reconcile a lost acquire is compared with the count at the point where it ran.
  std::uint64_t server_holds = 0;
  /// When local_holds went from 0 to 1: the start of the hold the metrics time.
  std::chrono::steady_clock::time_point granted_at{};
  std::chrono::milliseconds lease{0};  // of the latest acquire: a nested release re-arms it
  /// Local handoffs in a row that led to this owner's current hold (0: acquired by an attempt),
  /// and when the first of them was made: config::local_handoff bounds both.
  std::chrono::steady_clock::time_point streak_since{};
  std::unique_ptr<boost::asio::steady_timer> lost_signal;  // cancelled to wake lost() waiters
  std::uint32_t handoff_streak = 0;
  /// How this owner's latest acquisition came about (a wake_reason, in one byte). Read from any
  /// thread.
  std::atomic<std::uint8_t> last_wake{static_cast<std::uint8_t>(wake_reason::immediate)};
  std::uint8_t orphan_releases = 0;  // give-backs of orphaned holds since the last acquire
  /// Holds granted so far (on_acquired): a release's answer tells about the holds granted
  /// before it began, and must not undo one granted since.
  std::uint32_t grants = 0;
  const bool registered;  // listed in the client's owner table (explicit owner ids)
  /// A semaphore hold's size (set once, before its acquisition starts); 1 for locks.
  std::uint32_t permits = 1;
  /// Reported lost since its latest hold began (reset(true)); read by a multi-lock from its
  /// caller's thread.
  std::atomic<bool> lost{false};
  /// An acquire of this owner was reconciled as not run (it may still run late), or the client
  /// moved to another node (a failover may have lost releases). Until the server says the lock
  /// is released or not held, a "still held" answer to the final unlock means orphaned holds,
  /// not holds of another handle of this owner.
  bool maybe_orphaned = false;
  bool watched = false;  // the latest acquisition is kept by the watchdog

  /// The Redis key: key prefix + name.
  std::string_view key() const noexcept { return std::string_view(names_).substr(0, key_size_); }
  /// `<client uuid>:<owner>`, this owner's hash field (a semaphore hold's: its 16-byte permit
  /// id, lock_kind::permit_id_field).
  std::string_view field() const noexcept { return std::string_view(names_).substr(key_size_); }
  /// The field as people read it (in messages, and permit::id()): a permit id in hex.
  std::string shown_field() const;

  /// Redis's (or the transport's) text of this owner's latest failed operation: what the
  /// async_* forms' error codes cannot carry. Kept by the client beside the state (failures are
  /// rare; a held lock should cost no bytes for them). Read from any thread.
  void set_last_error(const failure& e);
  std::string last_error() const;

  /// What this owner's acquisitions in progress pass their kind beyond the lease
  /// (lock_kind::takes_argument: an election candidate's value), or none: kept by the client
  /// beside the state, not in it. Set before the acquisition starts, cleared when it ends; the
  /// client's executor only.
  void set_argument(std::string value);
  void clear_argument();
  const std::string* argument() const;

  /// Asks the server about this lock: `question` is a query (the session asks it again after a
  /// reconnect), answered or failed by `deadline` (none: command_timeout from now). The
  /// request's id, for a withdraw. `answered` may own this state.
  multiplexer::id_type ask(command question, reply_handler answered,
                           std::chrono::steady_clock::time_point deadline = {}) const;

 private:
  /// Renewed by the watchdog from here on (it holds the state), its lease confirmed at
  /// `confirmed`; a nonzero `claim`: held only that long until a renewal runs.
  void renew_from(std::chrono::steady_clock::time_point confirmed,
                  std::chrono::milliseconds claim = {});
  /// The hold's time, counted as it ends.
  void count_hold_ended() const;
  bool logging() const noexcept;
  void log_line(log_level level, std::string_view text) const;
  /// The client's table beside the states: the owners' last errors and arguments.
  owner_table& owners() const noexcept;

  // The key, then the field: one string and one heap block for both.
  const std::uint32_t key_size_;
  const std::string names_;
};

}  // namespace rlock::detail
