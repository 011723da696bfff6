#pragma once

#include "engine/lock_kind.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace rlock::detail {

class engine_context;
struct lock_state;

/// The owners of one client's locks: the states of owners named by the caller (explicit owner
/// ids, shared by every handle of that owner) and the text of each owner's latest failure.
/// Thread-safe.
class owner_table {
 public:
  /// The state of (name, owner), shared by every handle of that owner.
  std::shared_ptr<lock_state> state_for(const std::shared_ptr<engine_context>& ctx,
                                        std::string_view name, std::uint64_t owner,
                                        const lock_kind& kind);
  /// The state of a new owner of `name`, with a fresh id (or `id`, one a new owner got from
  /// this call: a read-write lock's second half). Not listed: nobody else can name it.
  static std::shared_ptr<lock_state> new_owner(const std::shared_ptr<engine_context>& ctx,
                                               std::string_view name, const lock_kind& kind,
                                               std::optional<std::uint64_t> id = std::nullopt);
  /// Drops a listed state that is gone.
  void forget(const lock_state& s);

  /// The text of an owner's latest failed operation (empty: none; setting empty forgets).
  void set_last_error(const lock_state* owner, std::string text);
  std::string last_error(const lock_state* owner);

  /// What an owner's acquisitions in progress pass their kind beyond the lease
  /// (lock_kind::takes_argument: an election candidate's value), kept here rather than in every
  /// state (S5 and S6 count a state's bytes). The client's executor only.
  void set_argument(const lock_state* owner, std::string value) {
    arguments_[owner] = std::move(value);
  }
  void clear_argument(const lock_state* owner) { arguments_.erase(owner); }
  /// The argument set, or none.
  const std::string* argument(const lock_state* owner) const {
    const auto it = arguments_.find(owner);
    return it == arguments_.end() ? nullptr : &it->second;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::weak_ptr<lock_state>> states_;
  std::unordered_map<const lock_state*, std::string> last_errors_;  // under mutex_
  std::atomic<bool> any_last_error_{false};
  std::unordered_map<const lock_state*, std::string> arguments_;  // executor only
};

/// A fresh owner id from the per-process counter (also used for blocking-facade threads).
std::uint64_t next_owner_id() noexcept;

}  // namespace rlock::detail
