#include "rlock/lock_info.hpp"

namespace rlock {

std::string_view to_string(key_kind k) noexcept {
  switch (k) {
    case key_kind::absent:
      return "absent";
    case key_kind::reentrant:
      return "reentrant";
    case key_kind::fair:
      return "fair";
    case key_kind::fenced:
      return "fenced";
    case key_kind::read_write:
      return "read-write";
    case key_kind::semaphore:
      return "semaphore";
    case key_kind::count_down_latch:
      return "count-down-latch";
    case key_kind::other:
      return "other";
  }
  return "unknown";
}

}  // namespace rlock
