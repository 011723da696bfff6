// The count-down latch's public constructor (an I/O source: it reaches the client through
// kind_access).
#include "engine/kind_access.hpp"
#include "kinds/registry.hpp"
#include "rlock/count_down_latch.hpp"

namespace rlock {

count_down_latch::count_down_latch(client& c, std::string_view name)
    : state_(detail::kind_access::new_owner(c, name, detail::count_down_latch_kind)) {}

}  // namespace rlock
