// The fair locks' public constructors: a client's state of a new owner, or of the owner the
// caller names (an I/O source: it reaches the client through kind_access).
#include "engine/kind_access.hpp"
#include "kinds/registry.hpp"
#include "rlock/fair_lock.hpp"

namespace rlock {

fair_lock::fair_lock(client& c, std::string_view name)
    : fair_lock(detail::kind_access::new_owner(c, name, detail::fair_kind)) {}
fair_lock::fair_lock(client& c, std::string_view name, std::uint64_t owner_id)
    : fair_lock(detail::kind_access::state_for(c, name, owner_id, detail::fair_kind)) {}

non_reentrant_fair_lock::non_reentrant_fair_lock(client& c, std::string_view name)
    : non_reentrant_fair_lock(
          detail::kind_access::new_owner(c, name, detail::non_reentrant_fair_kind)) {}
non_reentrant_fair_lock::non_reentrant_fair_lock(client& c, std::string_view name,
                                                 std::uint64_t owner_id)
    : non_reentrant_fair_lock(
          detail::kind_access::state_for(c, name, owner_id, detail::non_reentrant_fair_kind)) {}

}  // namespace rlock
