// The spin lock's public constructors: a client's state of a new owner, or of the owner the
// caller names (an I/O source: it reaches the client through kind_access).
#include "engine/kind_access.hpp"
#include "kinds/registry.hpp"
#include "rlock/spin_lock.hpp"

namespace rlock {

spin_lock::spin_lock(client& c, std::string_view name)
    : spin_lock(detail::kind_access::new_owner(c, name, detail::spin_kind)) {}
spin_lock::spin_lock(client& c, std::string_view name, std::uint64_t owner_id)
    : spin_lock(detail::kind_access::state_for(c, name, owner_id, detail::spin_kind)) {}

}  // namespace rlock
