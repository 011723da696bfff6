// Redisson's RNonReentrantLock: RLock, refusing a re-acquire by its holder.
#include "engine/define_kind.hpp"
#include "kinds/hash_lock.hpp"
#include "kinds/registry.hpp"

namespace rlock::detail {

namespace {

using namespace hash_lock;

void non_reentrant_acquire(const lock_identity& s, const acquire_inputs& in,
                           acquire_script_call& call) {
  reentrant_acquire(s, in, call);
  call.which = script::acquire_non_reentrant;
  call.args[2] = reentry_refusal;
  call.arg_count = 3;
}

}  // namespace

constinit const lock_kind non_reentrant_kind = define_kind({
    .name = "non-reentrant",
    .acquire_call = &non_reentrant_acquire,
    .decode = &reentrant_decode,
    .reconcile_question = &reentrant_question,
    .judge = &reentrant_judge,
    .release_call = &release_call,
    .transfer_call = &transfer_call,  // the new owner holds it once, as its acquire would
    .force_call = &force_call,
    .leave_call = nullptr,
    .renew = script::renew,
    .channel = &append_unlock_channel,
    .waiting = wait_mode::lock_channel,
    .on_message = &on_unlock_message,
    .refusals = reentry_refusals,
});

}  // namespace rlock::detail
