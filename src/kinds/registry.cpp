#include "kinds/registry.hpp"

#include <array>

namespace rlock::detail {

std::span<const lock_kind* const> registered_kinds() noexcept {
  static constexpr std::array<const lock_kind*, 13> kinds{&reentrant_kind,
                                                          &fenced_kind,
                                                          &non_reentrant_kind,
                                                          &fair_kind,
                                                          &non_reentrant_fair_kind,
                                                          &spin_kind,
                                                          &read_kind,
                                                          &write_kind,
                                                          &read_kind_writers_first,
                                                          &write_kind_writers_first,
                                                          &semaphore_kind,
                                                          &count_down_latch_kind,
                                                          &election_kind};
  return kinds;
}

}  // namespace rlock::detail
