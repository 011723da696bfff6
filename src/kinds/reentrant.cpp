// Redisson's RLock: the hash, its PTTL answer, the latched unlock, a local handoff.
#include "engine/define_kind.hpp"
#include "kinds/hash_lock.hpp"
#include "kinds/registry.hpp"

namespace rlock::detail {

using namespace hash_lock;

constinit const lock_kind reentrant_kind = define_kind({
    .name = "reentrant",
    .acquire_call = &reentrant_acquire,
    .decode = &reentrant_decode,
    .reconcile_question = &reentrant_question,
    .judge = &reentrant_judge,
    .release_call = &release_call,
    .transfer_call = &transfer_call,
    .force_call = &force_call,
    .leave_call = nullptr,
    .renew = script::renew,
    .channel = &append_unlock_channel,
    .waiting = wait_mode::lock_channel,
    .on_message = &on_unlock_message,
});

}  // namespace rlock::detail
