#pragma once

// The lock operations as callback operations on a lock_state, for reentrant_lock to start (the
// blocking facade calls reentrant_lock's public async_* forms). Each runs on the lock's client
// executor, is callable from any thread, and runs its handler on the handler's associated
// executor (default: the client's), never inside the call.
#include "engine/lock_state.hpp"
#include "rlock/detail/completion.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <system_error>

namespace rlock::detail {

class engine_context;

using void_handler = handler<>;
using bool_handler = handler<bool>;
using token_handler = handler<std::optional<std::int64_t>>;
/// Whether a single attempt took the lock, and if not the holder's TTL (-1: none to go by).
using attempt_handler = handler<bool, std::chrono::milliseconds>;

/// An acquisition that reports whether it got the lock (wait: none = forever, 0 = one attempt;
/// lease: none = watchdog). `batched`: its attempts run in one script call with the other
/// batched ones started in the same turn (script_registry::async_run_batched): a multi-lock's
/// attempt at every member at once.
void async_acquire(std::shared_ptr<lock_state> s, std::optional<std::chrono::milliseconds> wait,
                   std::optional<std::chrono::milliseconds> lease, bool_handler handler,
                   bool batched = false);
/// async_acquire of a fenced lock, reporting the acquisition's token (none: not acquired).
void async_acquire_token(std::shared_ptr<lock_state> s,
                         std::optional<std::chrono::milliseconds> wait,
                         std::optional<std::chrono::milliseconds> lease, token_handler handler);
/// One attempt (async_acquire with no wait) that also reports the holder's TTL when busy: a
/// quorum lock's vote on one node, whose waiter sleeps until a majority's holders could be gone.
void async_attempt(std::shared_ptr<lock_state> s, std::optional<std::chrono::milliseconds> lease,
                   attempt_handler handler);
/// async_acquire waiting until acquired, without a result to report.
void async_lock(std::shared_ptr<lock_state> s, std::optional<std::chrono::milliseconds> lease,
                void_handler handler);
/// Completes when the watchdog reports the lock lost (see reentrant_lock::lost()); cancellable
/// (terminal, partial, total) from any thread.
void async_lost(std::shared_ptr<lock_state> s, void_handler handler);
/// The release of one hold; `batched` as async_acquire's (a multi-lock's releases).
void async_release(std::shared_ptr<lock_state> s, void_handler handler, bool batched = false);
/// The release of a hold no caller has (an acquisition its caller was not given, a handoff that
/// found its waiter gone, a hold the server counts for nobody), counted as given back
/// (`after_handoff`: a handoff's too).
void async_give_back(std::shared_ptr<lock_state> s, void_handler handler,
                     bool after_handoff = false);

/// Fails every acquisition waiting for its turn to send an attempt (engine_context::attempts) with
/// `reason`: the client is closing.
void fail_waiting_attempts(engine_context& c, std::error_code reason);

}  // namespace rlock::detail
