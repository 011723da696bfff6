// Redisson's RLock: the hash, its PTTL answer, the latched unlock, a local handoff.
#include "engine/define_kind.hpp"
#include "engine/probe_row.hpp"
#include "kinds/hash_lock.hpp"
#include "kinds/registry.hpp"

namespace rlock::detail {

using namespace hash_lock;

namespace {

// rlock::inspect: a hash with owners, and nothing more of its own.
bool reentrant_probe_claim(const probe_answers&, lock_info& info) { return !info.holders.empty(); }

constexpr probe_row reentrant_probe{
    .kind = key_kind::reentrant,
    .stored_as = "hash",
    .order = 30,  // the plain hash: after every kind whose keys extend it
    .claim = &reentrant_probe_claim,
};

}  // namespace

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
    .probe = &reentrant_probe,
});

}  // namespace rlock::detail
