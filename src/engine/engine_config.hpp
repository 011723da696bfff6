#pragma once

// The settings the engine and the kinds read, copied once from the client's validated config.
#include "rlock/config.hpp"

#include <string>

namespace rlock::detail {

/// The client's validated config, copied once, and what the engine derives from it. The engine
/// reads its own settings (command_timeout, watchdog_timeout, sync_replicas, ...) and each kind
/// its own section (config::fair_lock, config::spin_lock, ...), so a kind's new setting is a
/// member of config and of nothing here.
struct engine_config : config {
  /// Which deployment the client talks to ("host:port", "sentinel <master>", "cluster <seed>"):
  /// a multi-lock orders its members within one.
  std::string deployment;

  static engine_config from(const config& c);
};

}  // namespace rlock::detail
