// The non-reentrant lock's public constructors: a client's state of a new owner, or of the owner
// the caller names (an I/O source: it reaches the client through kind_access).
#include "engine/kind_access.hpp"
#include "kinds/registry.hpp"
#include "rlock/non_reentrant_lock.hpp"

namespace rlock {

non_reentrant_lock::non_reentrant_lock(client& c, std::string_view name)
    : non_reentrant_lock(detail::kind_access::new_owner(c, name, detail::non_reentrant_kind)) {}
non_reentrant_lock::non_reentrant_lock(client& c, std::string_view name, std::uint64_t owner_id)
    : non_reentrant_lock(
          detail::kind_access::state_for(c, name, owner_id, detail::non_reentrant_kind)) {}

}  // namespace rlock
