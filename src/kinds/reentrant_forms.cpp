// The reentrant lock's public constructors: a client's state of a new owner, or of the owner the
// caller names (an I/O source: it reaches the client through kind_access).
#include "engine/kind_access.hpp"
#include "kinds/registry.hpp"
#include "rlock/reentrant_lock.hpp"

namespace rlock {

reentrant_lock::reentrant_lock(client& c, std::string_view name)
    : reentrant_lock(detail::kind_access::new_owner(c, name, detail::reentrant_kind)) {}
reentrant_lock::reentrant_lock(client& c, std::string_view name, std::uint64_t owner_id)
    : reentrant_lock(detail::kind_access::state_for(c, name, owner_id, detail::reentrant_kind)) {}

}  // namespace rlock
