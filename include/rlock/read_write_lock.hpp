#pragma once

#include "rlock/basic_owned_lock.hpp"
#include "rlock/export.hpp"
#include "rlock/rw_priority.hpp"

#include <cstdint>
#include <memory>
#include <string_view>

namespace rlock {

/// The read half of a read_write_lock: held by any number of owners at once while no other
/// owner holds the write half. A reentrant hold of its owner, with lease, watchdog, unlock and
/// lost() as for reentrant_lock; each read hold carries its own lease on the server (Redisson's
/// `{<key>}:<owner field>:rwlock_timeout:<n>` keys) and the lock lives as long as the longest.
/// The writer of the lock may take it too (a downgrade: it then keeps reading after its write
/// unlock). Get it from read_write_lock::read_lock().
class RLOCK_EXPORT read_lock : public basic_owned_lock<read_lock> {
 public:
  /// A new owner of `name` on `c`: client::get<read_lock>(name).
  read_lock(client& c, std::string_view name);
  /// The owner `owner_id` of `name` on `c` (handles of one owner share its holds):
  /// client::get<read_lock>(name, owner_id).
  read_lock(client& c, std::string_view name, std::uint64_t owner_id);

 private:
  friend class read_write_lock;
  friend class basic_owned_lock<read_lock>;
  friend class basic_hold<read_lock>;
  explicit read_lock(std::shared_ptr<detail::lock_state> state) noexcept
      : basic_owned_lock(std::move(state)) {}
};

/// The write half of a read_write_lock: exclusive against every other owner's reads and writes,
/// reentrant for its owner. An owner that holds the read half and asks for the write half fails
/// at once with errc::upgrade_refused: it would wait for its own reads (Redisson's client waits
/// forever there). Get it from read_write_lock::write_lock().
class RLOCK_EXPORT write_lock : public basic_owned_lock<write_lock> {
 public:
  /// A new owner of `name` on `c`: client::get<write_lock>(name).
  write_lock(client& c, std::string_view name);
  /// The owner `owner_id` of `name` on `c` (handles of one owner share its holds):
  /// client::get<write_lock>(name, owner_id).
  write_lock(client& c, std::string_view name, std::uint64_t owner_id);

 private:
  friend class read_write_lock;
  friend class basic_owned_lock<write_lock>;
  friend class basic_hold<write_lock>;
  explicit write_lock(std::shared_ptr<detail::lock_state> state) noexcept
      : basic_owned_lock(std::move(state)) {}
};

/// A Redisson-compatible read-write lock (Redisson's RReadWriteLock): one hash `<key>` with
/// field `mode` = `read` | `write`, the owner's read holds under its field and its write holds
/// under `<owner field>:write`; both halves publish on `redisson_rwlock:{<key>}`, a write unlock
/// waking every waiter (readers share what it frees) and the last read unlock one. Both halves
/// have the same owner, so a writer may downgrade (take the read half, then release the write
/// half) and a reader is refused an upgrade. Java and C++ owners share one lock.
///
/// A handle: copies name the same owner. Get one from client::get_read_write_lock().
class RLOCK_EXPORT read_write_lock {
 public:
  /// The read half, owned by this lock's owner.
  rlock::read_lock read_lock() const noexcept { return rlock::read_lock(read_); }
  /// The write half, owned by this lock's owner.
  rlock::write_lock write_lock() const noexcept { return rlock::write_lock(write_); }
  /// The lock's name (without the client's key prefix).
  std::string_view name() const noexcept { return read_lock().name(); }

  /// A new owner of `name` on `c`, with config::read_write_lock's priority:
  /// client::get<read_write_lock>(name).
  read_write_lock(client& c, std::string_view name);
  /// A new owner of `name` on `c`, with `priority` (errc::invalid_argument if it is not one).
  read_write_lock(client& c, std::string_view name, rw_priority priority);
  /// The owner `owner_id` of `name` on `c`, with config::read_write_lock's priority:
  /// client::get<read_write_lock>(name, owner_id).
  read_write_lock(client& c, std::string_view name, std::uint64_t owner_id);
  /// The owner `owner_id` of `name` on `c`, with `priority`.
  read_write_lock(client& c, std::string_view name, std::uint64_t owner_id, rw_priority priority);

 private:
  friend class client;
  read_write_lock(std::shared_ptr<detail::lock_state> read,
                  std::shared_ptr<detail::lock_state> write) noexcept
      : read_(std::move(read)), write_(std::move(write)) {}

  std::shared_ptr<detail::lock_state> read_;
  std::shared_ptr<detail::lock_state> write_;
};

}  // namespace rlock
