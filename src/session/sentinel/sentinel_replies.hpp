#pragma once

#include "resp3/value.hpp"
#include "rlock/config.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace rlock::detail {

// What Sentinel and a data node say about who the master is, decoded without I/O
// (https://redis.io/docs/reference/sentinel-clients/).

/// The answer to `SENTINEL get-master-addr-by-name <name>`: `[host, port]`; nothing, with the
/// reason in `why`, for a null (the sentinel does not know the name), an error reply or any
/// other shape.
std::optional<config::endpoint> master_address(const resp3::value& reply, std::string& why);

/// Whether the answer to `ROLE` says "master"; otherwise `why` names the role it says.
bool says_master(const resp3::value& reply, std::string& why);

/// A `+switch-master` event: "<name> <old-ip> <old-port> <new-ip> <new-port>".
struct master_switch {
  std::string name;
  config::endpoint to;
};
std::optional<master_switch> parse_switch_master(std::string_view payload);

}  // namespace rlock::detail
