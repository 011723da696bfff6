// The fenced lock's public constructors (an I/O source: it reaches the client through
// kind_access).
#include "engine/kind_access.hpp"
#include "kinds/registry.hpp"
#include "rlock/fenced_lock.hpp"

namespace rlock {

fenced_lock::fenced_lock(client& c, std::string_view name)
    : fenced_lock(detail::kind_access::new_owner(c, name, detail::fenced_kind)) {}
fenced_lock::fenced_lock(client& c, std::string_view name, std::uint64_t owner_id)
    : fenced_lock(detail::kind_access::state_for(c, name, owner_id, detail::fenced_kind)) {}

}  // namespace rlock
