// Redisson's RReadWriteLock: its read half (shared, a timeout key per read hold) and its write
// half (exclusive, field `<owner field>:write`); each with Redisson's reader-first rule and with
// rlock's writers first (rw_priority): a waiting writer's mark in `{<key>}:rlock_writers` that
// readers respect, and its place in `{<key>}:rlock_writer_queue` that orders the writers, both
// taken back by the writer's leave when it gives up.
#include "engine/define_kind.hpp"
#include "engine/engine_config.hpp"
#include "engine/probe_row.hpp"
#include "kinds/hash_lock.hpp"
#include "kinds/registry.hpp"
#include "rlock/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

namespace rlock::detail {

namespace {

using namespace hash_lock;

/// A write acquisition by an owner that holds the read lock would wait for itself.
constexpr std::string_view upgrade_refusal =
    "WRITE_AFTER_READ the owner holds this lock's read half; its write half would wait for "
    "itself (release the read holds first)";
constexpr refusal upgrade_refusals[] = {{"WRITE_AFTER_READ", errc::upgrade_refused}};

/// The read acquire: KEYS = the lock, the owner's hold timeouts' prefix and, under
/// rw_priority::writers, the waiting writers' marks; ARGV = lease, field, write field. The
/// derived names share `scratch`, reserved once.
void read_call(const lock_identity& s, const acquire_inputs& in, bool writers_first,
               acquire_script_call& call) {
  auto& names = call.scratch;
  names.clear();
  names.reserve(3 * s.key.size() + 2 * s.field.size() + 48);
  append_read_timeouts(s.key, s.field, names);
  const std::size_t timeouts_end = names.size();
  names.append(s.field).append(write_field_suffix);
  const std::size_t write_field_end = names.size();
  if (writers_first) append_writer_marks(s.key, names);
  const std::string_view all(names);
  call.which = writers_first ? script::acquire_read_writers_first : script::acquire_read;
  call.keys = {s.key, all.substr(0, timeouts_end), all.substr(write_field_end)};
  call.key_count = writers_first ? 3 : 2;
  call.args = {in.lease_ms, s.field, all.substr(timeouts_end, write_field_end - timeouts_end)};
  call.arg_count = 3;
}

void read_acquire(const lock_identity& s, const acquire_inputs& in, acquire_script_call& call) {
  read_call(s, in, false, call);
}

/// Under rw_priority::writers: readers wait behind a waiting writer's mark.
void read_acquire_writers_first(const lock_identity& s, const acquire_inputs& in,
                                acquire_script_call& call) {
  read_call(s, in, true, call);
}

/// The owner's read field: its write field without `:write`.
std::string_view read_field_of(std::string_view write_field) noexcept {
  return write_field.substr(0, write_field.size() - write_field_suffix.size());
}

void write_acquire(const lock_identity& s, const acquire_inputs& in, acquire_script_call& call) {
  call.which = script::acquire_write;
  call.keys[0] = s.key;
  call.key_count = 1;
  call.args = {in.lease_ms, s.field, read_field_of(s.field), upgrade_refusal};
  call.arg_count = 4;
}

/// The waiting writers' marks, then their queue, into `names`; views of both.
std::pair<std::string_view, std::string_view> marks_and_queue(std::string_view key,
                                                              std::string& names) {
  names.clear();
  append_writer_marks(key, names);
  const std::size_t marks_end = names.size();
  append_writer_queue(key, names);
  const std::string_view all(names);
  return {all.substr(0, marks_end), all.substr(marks_end)};
}

/// Under rw_priority::writers: the write acquire, marking the lock while it waits and taking a
/// free lock only in its turn among the waiting writers.
void write_acquire_writers_first(const lock_identity& s, const acquire_inputs& in,
                                 acquire_script_call& call) {
  write_acquire(s, in, call);
  call.which = script::acquire_write_writers_first;
  const auto [marks, queue] = marks_and_queue(s.key, call.scratch);
  call.keys[1] = marks;
  call.keys[2] = queue;
  call.key_count = 3;
  call.args[4] = in.mark_ms;
  call.arg_count = 5;
}

/// A waiting writer marks the lock for config::read_write_lock's writer_mark_lease; a single
/// attempt waits for nothing and so marks nothing.
void writer_prepare(const attempt_facts& f, attempt_room& room, acquire_inputs& in) {
  if (!f.waits()) return;
  const auto mark = f.settings.read_write_lock.writer_mark_lease;
  room.numbers[0].assign(mark.count());
  in.mark_ms = room.numbers[0].view();
  in.trace_lasts = mark;
}

/// A waiting writer that gives up takes its mark and its place back (and tells those it held
/// back).
void write_leave(const lock_identity& s, const leave_inputs& in, release_script_call& call) {
  call.which = script::leave_write;
  const auto [marks, queue] = marks_and_queue(s.key, call.scratch);
  call.keys = {s.key, marks, in.channel, queue};
  call.key_count = 4;
  call.args = {s.field, in.attempt.publish};
  call.arg_count = 2;
}

void read_release(const lock_identity& s, const release_inputs& in, release_script_call& call) {
  call.which = script::release_read;
  auto& names = call.scratch;
  names.clear();
  names.reserve(2 * s.key.size() + s.field.size() + 24);
  append_read_timeouts(s.key, s.field, names);
  const std::size_t timeouts_end = names.size();
  append_read_timeouts(s.key, {}, names);
  const std::string_view all(names);
  call.keys = {s.key, in.channel, all.substr(0, timeouts_end), all.substr(timeouts_end), in.latch};
  call.key_count = 5;
  call.args = {"0", s.field, in.publish, in.latch_ttl};
  call.arg_count = 4;
}

void write_release(const lock_identity& s, const release_inputs& in, release_script_call& call) {
  call.which = script::release_write;
  call.scratch.clear();
  append_read_timeouts(s.key, {}, call.scratch);
  call.keys = {s.key, in.channel, in.latch, call.scratch};
  call.key_count = 4;
  call.args = {"1", in.lease_ms, s.field, in.publish, in.latch_ttl};
  call.arg_count = 5;
}

void read_force(const lock_identity& s, const release_inputs& in, release_script_call& call) {
  call.which = script::force_unlock_read_write;
  call.keys[0] = s.key;
  call.keys[1] = in.channel;
  call.keys[2] = in.latch;
  call.key_count = 3;
  call.args = {"read", "0", in.publish, in.latch_ttl};
  call.arg_count = 4;
}

void write_force(const lock_identity& s, const release_inputs& in, release_script_call& call) {
  read_force(s, in, call);
  call.args[0] = "write";
  call.args[1] = "1";
}

/// config::read_write_lock: a waiting writer comes back every half of its mark's lease, and the
/// priority is one of rw_priority's (a cast of any number compiles).
std::string read_write_settings_error(const config& c) {
  const auto& rw = c.read_write_lock;
  if (rw.writer_mark_lease.count() < 100) {
    return fmt::format(
        "read_write_lock.writer_mark_lease must be at least 100 ms (a waiting writer comes back "
        "every half of it), got {} ms",
        rw.writer_mark_lease.count());
  }
  if (!is_rw_priority(rw.priority)) {
    return fmt::format("read_write_lock.priority is not an rw_priority ({})",
                       static_cast<int>(rw.priority));
  }
  return {};
}

/// Redisson's halves (reader-first).
// rlock::inspect: a hash with a `mode` field (lock_holders reads it), or waiting writers of a
// free lock; the writers in the order a free lock goes to them (the queue's, then marks without
// a place, of an older rlock).
void read_write_probe_commands(std::string_view key, std::string_view,
                               std::vector<probe_command>& out) {
  out.push_back({"ZRANGE", probe_name(&append_writer_queue, key), "0", "-1", "WITHSCORES"});
  out.push_back({"ZRANGE", probe_name(&append_writer_marks, key), "0", "-1", "WITHSCORES"});
}

void read_write_probe_read(const probe_answers& a, lock_info& info) {
  const auto& marks = a.own[1];
  // Each write field shown as its owner's field, with when its mark lapses.
  const auto waiter_of = [&](std::string_view field) {
    queued_waiter w;
    w.owner = std::string(field);
    if (w.owner.ends_with(write_field_suffix)) {
      w.owner.resize(w.owner.size() - write_field_suffix.size());
    }
    probe_each_scored(marks, [&](std::string_view member, const resp3::value* score) {
      if (member == field && score != nullptr && a.now) w.deadline_in = probe_until(*score, *a.now);
    });
    return w;
  };
  std::vector<std::string_view> placed;
  probe_each_scored(a.own[0], [&](std::string_view member, const resp3::value*) {
    placed.push_back(member);
    info.writers.push_back(waiter_of(member));
  });
  probe_each_scored(marks, [&](std::string_view member, const resp3::value*) {
    if (std::find(placed.begin(), placed.end(), member) == placed.end()) {
      info.writers.push_back(waiter_of(member));
    }
  });
}

bool read_write_probe_claim(const probe_answers&, lock_info& info) {
  return info.mode || !info.writers.empty();
}

constexpr probe_row read_write_probe{
    .kind = key_kind::read_write,
    .stored_as = "hash",
    .order = 0,  // its mode or its writers tell it from every other hash
    .command_count = 2,
    .commands = &read_write_probe_commands,
    .read = &read_write_probe_read,
    .claim = &read_write_probe_claim,
};

constexpr lock_kind read_half{
    .name = "read",
    .acquire_call = &read_acquire,
    .decode = &reentrant_decode,
    .reconcile_question = &reentrant_question,  // the owner's read count
    .judge = &reentrant_judge,
    .release_call = &read_release,
    .transfer_call = nullptr,  // readers share: nothing to hand over
    .force_call = &read_force,
    .leave_call = nullptr,
    .renew = script::renew_read_write,
    .channel = &append_rwlock_channel,
    .waiting = wait_mode::lock_channel,
    .on_message = &on_unlock_message,  // "0" after the last reader: one; "1" after a writer: all
    .field_suffix = {},
    .settings_error = &read_write_settings_error,
    .shared_key = true,  // other readers' holds change the hash too
};

constexpr lock_kind write_half{
    .name = "write",
    .acquire_call = &write_acquire,
    .decode = &reentrant_decode,
    .reconcile_question = &reentrant_question,  // the owner's write count
    .judge = &reentrant_judge,
    .release_call = &write_release,
    .transfer_call = nullptr,
    .force_call = &write_force,
    .leave_call = nullptr,
    .renew = script::renew_read_write,
    .channel = &append_rwlock_channel,
    .waiting = wait_mode::lock_channel,
    .on_message = &on_unlock_message,
    .field_suffix = write_field_suffix,
    .refusals = upgrade_refusals,
    .settings_error = &read_write_settings_error,
    .probe = &read_write_probe,
};

}  // namespace

constinit const lock_kind read_kind = define_kind(read_half);
constinit const lock_kind write_kind = define_kind(write_half);

constinit const lock_kind read_kind_writers_first = define_kind([] {
  lock_kind k = read_half;
  k.name = "read (writers first)";
  k.acquire_call = &read_acquire_writers_first;
  return k;
}());

constinit const lock_kind write_kind_writers_first = define_kind([] {
  lock_kind k = write_half;
  k.name = "write (writers first)";
  k.acquire_call = &write_acquire_writers_first;
  k.leave_call = &write_leave;
  k.prepare_attempt = &writer_prepare;
  k.woken_first = true;
  return k;
}());

}  // namespace rlock::detail
