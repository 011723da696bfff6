#pragma once

#include "rlock/detail/completion.hpp"
#include "rlock/export.hpp"
#include "rlock/hold.hpp"
#include "rlock/lock_handle.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace rlock {

/// A Redisson-compatible fenced lock (Redisson's RFencedLock): a reentrant lock whose every
/// successful acquisition, re-entry included, also increments the counter
/// `redisson_lock_token:{<key>}` (a plain integer with no TTL) and returns its new value, the
/// **fencing token**. Tokens strictly increase across all owners of the lock, Java's included.
///
/// A lease-based lock cannot stop a holder that was paused (GC, SIGSTOP, a slow disk) past its
/// lease from acting as if it still held the lock: another owner may hold it by then. The token
/// lets the *resource* refuse such a holder: send it with every write, and have the resource
/// reject a token lower than the highest it has seen (Kleppmann, "How to do distributed
/// locking", 2016). examples/fenced_write.cpp shows such a resource.
///
/// Everything but the acquisitions is lock_handle's, shared with reentrant_lock, not copied:
/// unlock, the unlock channel and latch, the watchdog, lost(), the queries. It is not a
/// reentrant_lock (its acquisitions return tokens, and a handoff between owners would skip the
/// token): scoped holds are `basic_hold<fenced_lock>` and with_lock() takes it as its own kind
/// (read the token with token() or the hold's lock()->token()). Get one from
/// client::get_fenced_lock(). Acquisition completions carry the token; errors, bounds and
/// per-operation cancellation are those of reentrant_lock's lock() and try_lock().
class RLOCK_EXPORT fenced_lock : public lock_handle {
 public:
  /// What scoped() and try_scoped() return: a scoped hold of a fenced_lock.
  using hold_type = basic_hold<fenced_lock>;

  // --- lock -------------------------------------------------------------------------------
  /// @name lock
  ///@{

  /// reentrant_lock::lock(), completing with this acquisition's token.
  /// Completion: `void(error_code, std::int64_t)`.
  ///
  /// Per-operation cancellation: terminal, partial and total, as for reentrant_lock::lock():
  /// nothing left behind (an acquisition made meanwhile is given back; its token is spent).
  boost::asio::awaitable<std::int64_t> lock();
  boost::asio::awaitable<std::int64_t> lock(milliseconds lease);
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_lock(CompletionToken&& token = {}) {
    return async_lock(std::nullopt, std::forward<CompletionToken>(token));
  }
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_lock(std::optional<milliseconds> lease, CompletionToken&& token = {}) {
    return initiate<std::int64_t>(std::forward<CompletionToken>(token),
                                  [lease](const lock_handle& l, detail::handler<std::int64_t> h) {
                                    start_lock_token(l, lease, std::move(h));
                                  });
  }
  ///@}

  // --- try_lock ---------------------------------------------------------------------------
  /// @name try_lock
  ///@{

  /// reentrant_lock::try_lock(), completing with this acquisition's token, or none when not
  /// acquired. Completion: `void(error_code, std::optional<std::int64_t>)`.
  ///
  /// Per-operation cancellation: terminal, partial and total, as for reentrant_lock::try_lock().
  boost::asio::awaitable<std::optional<std::int64_t>> try_lock();
  boost::asio::awaitable<std::optional<std::int64_t>> try_lock(milliseconds wait);
  boost::asio::awaitable<std::optional<std::int64_t>> try_lock(milliseconds wait,
                                                               milliseconds lease);
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_lock(CompletionToken&& token = {}) {
    return async_try_lock(milliseconds::zero(), std::nullopt, std::forward<CompletionToken>(token));
  }
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_lock(milliseconds wait, CompletionToken&& token = {}) {
    return async_try_lock(wait, std::nullopt, std::forward<CompletionToken>(token));
  }
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_lock(milliseconds wait, std::optional<milliseconds> lease,
                      CompletionToken&& token = {}) {
    return initiate<std::optional<std::int64_t>>(
        std::forward<CompletionToken>(token),
        [wait, lease](const lock_handle& l, detail::handler<std::optional<std::int64_t>> h) {
          start_try_lock_token(l, wait, lease, std::move(h));
        });
  }
  ///@}

  // --- scoped, try_scoped -------------------------------------------------------------------
  /// @name scoped, try_scoped
  ///@{

  /// lock() and try_lock(wait) as scoped holds, as reentrant_lock::scoped() and try_scoped():
  /// the acquisition is fenced; read its token through the hold (`h.lock()->token()`).
  /// Completion: `void(error_code, basic_hold<fenced_lock>)`.
  ///
  /// Per-operation cancellation: as for lock() and try_lock().
  boost::asio::awaitable<hold_type> scoped();
  boost::asio::awaitable<hold_type> scoped(milliseconds lease);
  boost::asio::awaitable<hold_type> try_scoped(milliseconds wait);
  boost::asio::awaitable<hold_type> try_scoped(milliseconds wait, milliseconds lease);
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_scoped(CompletionToken&& token = {}) {
    return async_scoped(std::nullopt, std::forward<CompletionToken>(token));
  }
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_scoped(std::optional<milliseconds> lease, CompletionToken&& token = {}) {
    return initiate<hold_type>(std::forward<CompletionToken>(token),
                               [lease](const lock_handle& l, detail::handler<hold_type> h) {
                                 hold_type::start_scoped(fenced_lock(state_of(l)), std::nullopt,
                                                         lease, std::move(h));
                               });
  }
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_scoped(milliseconds wait, CompletionToken&& token = {}) {
    return async_try_scoped(wait, std::nullopt, std::forward<CompletionToken>(token));
  }
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_scoped(milliseconds wait, std::optional<milliseconds> lease,
                        CompletionToken&& token = {}) {
    return initiate<hold_type>(std::forward<CompletionToken>(token),
                               [wait, lease](const lock_handle& l, detail::handler<hold_type> h) {
                                 hold_type::start_scoped(fenced_lock(state_of(l)), wait, lease,
                                                         std::move(h));
                               });
  }
  ///@}

  // --- tokens -----------------------------------------------------------------------------
  /// The token of this owner's latest acquisition through any of its handles (0 before the
  /// first). Local, no round trip; may be called from any thread.
  std::int64_t token() const noexcept;
  /// @name current_token
  ///@{

  /// The counter's value on the server now (Redisson's getToken(): `GET
  /// redisson_lock_token:{<key>}`), 0 if no acquisition ever made one.
  /// Completion: `void(error_code, std::int64_t)`; errors: timeout (config::command_timeout),
  /// server_error, permission_denied, connection_lost.
  ///
  /// Per-operation cancellation: not supported (ignored): bounded by config::command_timeout.
  boost::asio::awaitable<std::int64_t> current_token();
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_current_token(CompletionToken&& token = {}) {
    return initiate<std::int64_t>(std::forward<CompletionToken>(token),
                                  [](const lock_handle& l, detail::handler<std::int64_t> h) {
                                    start_current_token(l, std::move(h));
                                  });
  }
  ///@}

  /// The Redis key of the token counter: `redisson_lock_token:{<key>}`.
  std::string token_key() const;

  /// A new owner of `name` on `c`: client::get<fenced_lock>(name).
  fenced_lock(client& c, std::string_view name);
  /// The owner `owner_id` of `name` on `c` (handles of one owner share its holds):
  /// client::get<fenced_lock>(name, owner_id).
  fenced_lock(client& c, std::string_view name, std::uint64_t owner_id);

 private:
  friend class client;
  friend class basic_hold<fenced_lock>;
  explicit fenced_lock(std::shared_ptr<detail::lock_state> state) noexcept
      : lock_handle(std::move(state)) {}

  // The acquisitions, each started once for every form (basic_hold's scoped forms too).
  static void start_lock(const lock_handle& l, std::optional<milliseconds> lease,
                         detail::handler<std::int64_t> h) {
    start_lock_token(l, lease, std::move(h));
  }
  static void start_try_lock(const lock_handle& l, milliseconds wait,
                             std::optional<milliseconds> lease,
                             detail::handler<std::optional<std::int64_t>> h) {
    start_try_lock_token(l, wait, lease, std::move(h));
  }
  boost::asio::awaitable<hold_type> scoped_awaitable(std::optional<milliseconds> wait,
                                                     std::optional<milliseconds> lease);

  static void start_lock_token(const lock_handle& l, std::optional<milliseconds> lease,
                               detail::handler<std::int64_t> h);
  static void start_try_lock_token(const lock_handle& l, milliseconds wait,
                                   std::optional<milliseconds> lease,
                                   detail::handler<std::optional<std::int64_t>> h);
  static void start_current_token(const lock_handle& l, detail::handler<std::int64_t> h);
};

}  // namespace rlock
