// The semaphore's public constructors (an I/O source: it reaches the client through
// kind_access).
#include "engine/kind_access.hpp"
#include "kinds/registry.hpp"
#include "rlock/semaphore.hpp"

namespace rlock {

semaphore::semaphore(client& c, std::string_view name)
    : semaphore(detail::kind_access::new_owner(c, name, detail::semaphore_kind)) {}

permit_expirable_semaphore::permit_expirable_semaphore(client& c, std::string_view name)
    : permit_expirable_semaphore(semaphore(c, name)) {}

}  // namespace rlock
