// The read-write lock's public constructors (an I/O source: it reaches the client through
// kind_access).
#include "engine/kind_access.hpp"
#include "kinds/registry.hpp"
#include "rlock/config.hpp"
#include "rlock/error.hpp"
#include "rlock/read_write_lock.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <string_view>

// The public forms: the halves under the caller's priority (config::read_write_lock's by
// default), a new owner for both or the owner the caller names.
namespace rlock {

namespace {

const detail::lock_kind& read_half(rw_priority p) {
  return p == rw_priority::writers ? detail::read_kind_writers_first : detail::read_kind;
}
const detail::lock_kind& write_half(rw_priority p) {
  return p == rw_priority::writers ? detail::write_kind_writers_first : detail::write_kind;
}
/// A caller's priority, or a clear error.
rw_priority checked(rw_priority p) {
  if (!detail::is_rw_priority(p)) {
    throw_error(errc::invalid_argument,
                fmt::format("get_read_write_lock: {} is not an rw_priority", static_cast<int>(p)));
  }
  return p;
}
rw_priority configured(client& c) {
  return detail::kind_access::config_of(c).read_write_lock.priority;
}

}  // namespace

read_write_lock::read_write_lock(client& c, std::string_view name)
    : read_write_lock(c, name, configured(c)) {}
read_write_lock::read_write_lock(client& c, std::string_view name, rw_priority priority)
    : read_(detail::kind_access::new_owner(c, name, read_half(checked(priority)))),
      write_(detail::kind_access::new_owner(c, name, write_half(priority), read_->owner)) {}
read_write_lock::read_write_lock(client& c, std::string_view name, std::uint64_t owner_id)
    : read_write_lock(c, name, owner_id, configured(c)) {}
read_write_lock::read_write_lock(client& c, std::string_view name, std::uint64_t owner_id,
                                 rw_priority priority)
    : read_(detail::kind_access::state_for(c, name, owner_id, read_half(checked(priority)))),
      write_(detail::kind_access::state_for(c, name, owner_id, write_half(priority))) {}

read_lock::read_lock(client& c, std::string_view name)
    : read_lock(detail::kind_access::new_owner(c, name, read_half(configured(c)))) {}
read_lock::read_lock(client& c, std::string_view name, std::uint64_t owner_id)
    : read_lock(detail::kind_access::state_for(c, name, owner_id, read_half(configured(c)))) {}
write_lock::write_lock(client& c, std::string_view name)
    : write_lock(detail::kind_access::new_owner(c, name, write_half(configured(c)))) {}
write_lock::write_lock(client& c, std::string_view name, std::uint64_t owner_id)
    : write_lock(detail::kind_access::state_for(c, name, owner_id, write_half(configured(c)))) {}

}  // namespace rlock
