// Redisson's RReadWriteLock: its read half (shared, a timeout key per read hold) and its write
// half (exclusive, field `<owner field>:write`).
#include "kinds/hash_lock.hpp"

#include <string>

namespace rlock::detail {

namespace {

using namespace hash_lock;

/// A write acquisition by an owner that holds the read lock would wait for itself.
constexpr std::string_view upgrade_refusal =
    "WRITE_AFTER_READ the owner holds this lock's read half; its write half would wait for "
    "itself (release the read holds first)";
constexpr refusal upgrade_refusals[] = {{"WRITE_AFTER_READ", errc::upgrade_refused}};

/// The read half's derived names in `scratch`: the owner's hold timeouts, then its write field.
void read_names(const lock_identity& s, std::string& names, std::size_t& timeouts_end) {
  names.clear();
  names.reserve(2 * s.key.size() + 2 * s.field.size() + 24);
  append_read_timeouts(s.key, s.field, names);
  timeouts_end = names.size();
  names.append(s.field).append(write_field_suffix);
}

void read_acquire(const lock_identity& s, const acquire_inputs& in, acquire_script_call& call) {
  call.which = script::acquire_read;
  std::size_t timeouts_end = 0;
  read_names(s, call.scratch, timeouts_end);
  const std::string_view names(call.scratch);
  call.keys[0] = s.key;
  call.keys[1] = names.substr(0, timeouts_end);
  call.key_count = 2;
  call.args = {in.lease_ms, s.field, names.substr(timeouts_end)};
  call.arg_count = 3;
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

void read_force(const lock_identity& s, std::string_view channel, std::string_view publish,
                release_script_call& call) {
  call.which = script::force_unlock_read_write;
  call.keys[0] = s.key;
  call.keys[1] = channel;
  call.key_count = 2;
  call.args = {"read", "0", publish};
  call.arg_count = 3;
}

void write_force(const lock_identity& s, std::string_view channel, std::string_view publish,
                 release_script_call& call) {
  read_force(s, channel, publish, call);
  call.args[0] = "write";
  call.args[1] = "1";
}

}  // namespace

const lock_kind read_kind{
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
};

const lock_kind write_kind{
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
};

}  // namespace rlock::detail
