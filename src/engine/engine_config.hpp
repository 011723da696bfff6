#pragma once

// The settings the engine and the kinds read, copied once from the client's validated config.
#include "rlock/config.hpp"

#include <chrono>
#include <string>

namespace rlock::detail {

/// The settings the engine reads, copied once from the client's validated config, and the
/// config itself for the kinds.
struct engine_config {
  std::chrono::milliseconds command_timeout{};
  std::chrono::milliseconds watchdog_timeout{};
  std::chrono::milliseconds slow_acquire_threshold{};
  config::replica_sync sync_replicas;
  config::handoff_bound local_handoff;
  std::string key_prefix;
  /// Which deployment the client talks to ("host:port", "sentinel <master>", "cluster <seed>"):
  /// a multi-lock orders its members within one.
  std::string deployment;
  /// The client's validated config, whole: each kind reads its own section of it
  /// (config::fair_lock, config::spin_lock, ...), so a kind's new setting is a member of config
  /// and of nothing here.
  config client;

  static engine_config from(const config& c);
};

}  // namespace rlock::detail
