#pragma once

// The Lua rlock loads for each script: the table's source (scripts.hpp), and, for a script that
// takes or keeps a hold, a read of the held keys after it. A server tracks for a client the keys
// it read (CLIENT TRACKING), but forgets a key when that client itself writes it (NOLOOP only
// keeps the invalidation from being sent): an acquire or a renewal writes its key, so only a
// read after its last write leaves the key tracked, and a later write by another client pushes
// an invalidation (config::track_holds). The read costs no command on the wire.
#include "script/scripts.hpp"

#include <string_view>

namespace rlock::detail {

/// What `SCRIPT LOAD` sends for `s` (and what a batch of `s` wraps): an acquire reads KEYS[1]
/// after its body, a renewal every key it renewed; any other script is the table's source.
std::string_view loaded_source(script s);

}  // namespace rlock::detail
