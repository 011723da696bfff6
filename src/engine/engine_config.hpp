#pragma once

// The settings the engine and the kinds read, copied once from the client's validated config.
#include "rlock/config.hpp"

#include <chrono>
#include <string>

namespace rlock::detail {

/// The settings the engine reads, copied once from the client's validated config.
struct engine_config {
  std::chrono::milliseconds command_timeout{};
  std::chrono::milliseconds watchdog_timeout{};
  std::chrono::milliseconds slow_acquire_threshold{};
  config::replica_sync sync_replicas;
  config::handoff_bound local_handoff;
  config::fair_lock_policy fair_lock;
  config::spin_backoff spin_lock;
  config::read_write_lock_policy read_write_lock;
  config::fenced_lock_policy fenced_lock;
  std::string key_prefix;
  /// Which deployment the client talks to ("host:port", "sentinel <master>", "cluster <seed>"):
  /// a multi-lock orders its members within one.
  std::string deployment;

  static engine_config from(const config& c);
};

}  // namespace rlock::detail
