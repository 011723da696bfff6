#pragma once

#include "output.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <rlock/config.hpp>
#include <string>
#include <vector>

namespace rlockctl {

/// Exit codes, the same for every command (docs/operations/rlockctl.md).
enum exit_code : int {
  exit_ok = 0,
  exit_not_acquired = 1,  // hold: not acquired within --wait (or interrupted while waiting)
  exit_error = 2,         // usage, connection or Redis error
  exit_lost = 3,          // hold: the lock was lost (or its lease ran out) while held
};

/// What every command gets: the client configuration built from --url and --prefix, and where
/// to write.
struct context {
  rlock::config cfg;
  output out;
  /// The Redis key of lock `name` (config::key_prefix + name), as the client forms it.
  std::string key(const std::string& name) const { return cfg.key_prefix + name; }
};

int run_status(const context& ctx, const std::vector<std::string>& names);
/// status over a quorum lock's nodes (`status --quorum URL ...`): each node's view, then
/// whether a majority is held by one owner.
int run_quorum_status(const context& ctx, const std::vector<std::string>& urls,
                      const std::vector<std::string>& names);

struct list_options {
  std::string pattern = "*";
  std::uint32_t page = 500;  // SCAN COUNT
  std::optional<std::uint64_t> limit;
};
int run_list(const context& ctx, const list_options& opts);

int run_unlock(const context& ctx, const std::string& name, bool force);

struct hold_options {
  std::string name;
  std::optional<std::chrono::milliseconds> lease;     // unset: the watchdog keeps it
  std::optional<std::chrono::milliseconds> wait;      // unset: wait as long as it takes
  std::optional<std::chrono::milliseconds> hold_for;  // unset: until Ctrl-C (or the lease ends)
  bool fenced = false;  // a fenced lock (RFencedLock): the acquisition's token is printed
  /// Otherwise the owned lock kind, by its word in RLOCK_OWNED_LOCK_KINDS (reentrant, fair,
  /// non-reentrant, non-reentrant-fair, spin, read, write).
  std::string kind = "reentrant";
};
int run_hold(const context& ctx, const hold_options& opts);

int run_watch(const context& ctx, const std::vector<std::string>& names);

/// Who leads each election (rlock::election::leader()), since when, and how many clients have
/// candidates waiting; with `watch`, then every change of leader or value until Ctrl-C.
int run_leader(const context& ctx, const std::vector<std::string>& names, bool watch);

struct bench_options {
  std::chrono::milliseconds duration{5'000};  // per scenario
  unsigned contenders = 4;
};
int run_bench(const context& ctx, const bench_options& opts);

}  // namespace rlockctl
