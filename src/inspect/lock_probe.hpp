#pragma once

// Reading a lock's keys, sans I/O: the commands that read every key a lock of any kind may have,
// and the decoding of their answers into a lock_info (the kind the keys prove, the holders, the
// queue, the permits). The I/O (src/inspect/inspect.cpp) pipelines the commands on the key's node.
#include "engine/probe_row.hpp"
#include "resp3/value.hpp"
#include "rlock/detail/failure.hpp"
#include "rlock/inspect.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::detail {

/// TYPE, HGETALL, PTTL of the key, TIME and the key's GET (probe_common's order), then each
/// registered kind's own commands (lock_kind::probe: its row, in the kind's own file), all in the
/// key's slot. `sharded`: count subscribers of sharded channels (Cluster on Redis 7). Answers
/// that do not apply to the key's type are errors nobody reads.
std::vector<probe_command> probe_commands(std::string_view key, bool sharded);

/// Decodes the answers to probe_commands(info.key) into `info` (its name and key set by the
/// caller): the rows of the key's type read their answers, and the first in their order that
/// claims the keys names the kind. A refusal of a command that applies is the failure (Redis's
/// words, and its errc); so is a missing answer (protocol_error).
failure read_probe(const std::vector<resp3::value>& answers, lock_info& info);

/// The owners a lock's hash records, or none when the hash is not a lock's (a field not
/// `<text>:<digits>`, a count not a positive integer). An absent key gives an empty list. A
/// read-write lock's hash (`mode` = read | write) gives readers and writer (`<field>:write`,
/// owner without the suffix) and its mode in `mode`.
std::optional<std::vector<lock_holder>> lock_holders(const resp3::value& hgetall,
                                                     std::optional<hold_role>* mode = nullptr);

}  // namespace rlock::detail
