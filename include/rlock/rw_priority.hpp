#pragma once

#include <cstdint>

namespace rlock {

/// Whom a read-write lock lets in first when readers and a writer both want it.
enum class rw_priority : std::uint8_t {
  /// rlock's default: while an rlock writer waits, readers that do not read already wait behind
  /// it, and it enters as soon as the current readers leave. The waiting writer marks the lock
  /// on the server (`{<key>}:rlock_writers`, in the lock's slot) with a lease of
  /// config::read_write_lock_policy::writer_mark_lease, so a writer that dies stops holding
  /// readers back within that lease. Redisson's readers do not know the mark.
  writers,
  /// Redisson's rule: a reader enters whenever no writer holds the lock, so readers that keep
  /// arriving can keep a writer out for as long as they arrive.
  readers,
};

namespace detail {
/// One of rw_priority's values (a cast of any number compiles).
constexpr bool is_rw_priority(rw_priority p) noexcept {
  return p == rw_priority::writers || p == rw_priority::readers;
}
}  // namespace detail

}  // namespace rlock
