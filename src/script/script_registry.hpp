#pragma once

#include "resp3/value.hpp"
#include "script/script_batch.hpp"
#include "script/scripts.hpp"
#include "session/session.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace rlock::detail {

/// Runs the scripts of scripts.hpp with EVALSHA. Every connection's handshake loads them all
/// (`SCRIPT LOAD`; the server is the authority on the hash, so no SHA1 code is needed here), so a
/// restarted server has them before the first lock command; a NOSCRIPT reply (a `SCRIPT FLUSH`
/// meanwhile) is recovered by loading the script and retrying once (async_run), or by the
/// caller's next call, which a `SCRIPT LOAD` precedes (async_run_once).
///
/// With config::sync_replicas, the scripts that change a lock (acquire, renew, release) are
/// followed by `WAIT replicas timeout` in the same request: the multiplexer writes both at once
/// and answers with both replies, so the WAIT runs on the connection that ran the script, right
/// after it, and a retry on a new connection repeats the pair.
class script_registry {
 public:
  /// `ex`: the client's executor, where batches are sent (async_run_batched).
  script_registry(session& s, boost::asio::any_io_executor ex);

  /// Runs `s` on the connection of `keys[0]` and completes `handler` with (error, reply): no
  /// error and the reply; an error reply's code (server_error, permission_denied, ...) with the
  /// error reply itself, whose text is Redis's; or a transport error (timeout, connection_lost,
  /// operation_aborted) with an empty reply; errc::replicas_not_synced with the script's reply
  /// when the script ran but fewer replicas than asked acknowledged it. `keys` and `args`, and the
  /// bytes they view, must stay valid until then: a NOSCRIPT retry serializes them again. This is
  /// the hot path of every lock operation, so it is a plain callback (no coroutine frame per
  /// command) taken as it is: the caller's handler and the registry's reading of the answer are
  /// type-erased once, together, not once each.
  template <typename Handler>
  multiplexer::id_type async_run(script s, std::span<const std::string_view> keys,
                                 std::span<const std::string_view> args, request_options opts,
                                 Handler&& handler) {
    if (sha_[static_cast<std::size_t>(s)].empty()) {
      // Not connected yet (the handshake loads every script): load it with the request.
      reload_and_send(s, keys, args, opts, reply_handler(std::forward<Handler>(handler)));
      return 0;
    }
    return send(s, keys, args, opts, std::forward<Handler>(handler), true);
  }

  /// As async_run, for a caller that keeps no copy of its keys and arguments (an acquisition
  /// asleep between attempts keeps none: bench S6 counts its bytes per waiter): they are read
  /// in this call only, so nothing is sent again here. A NOSCRIPT answer (the server's script
  /// cache was flushed) reaches the handler as it is (see not_run), and the caller's next call
  /// goes right after a `SCRIPT LOAD` on its connection. Before the handshake has loaded the
  /// script there is no hash to call it by: the script is loaded, and the handler gets a
  /// NOSCRIPT reply to call again. `EVAL` is never used (docs/guide/tls-acl.md's ACL user may not
  /// run it).
  template <typename Handler>
  multiplexer::id_type async_run_once(script s, std::span<const std::string_view> keys,
                                      std::span<const std::string_view> args, request_options opts,
                                      Handler&& handler) {
    const auto i = static_cast<std::size_t>(s);
    const std::string_view route = keys.empty() ? std::string_view{} : keys.front();
    if (sha_[i].empty()) {
      load_then_call_again(s, route, opts.deadline, reply_handler(std::forward<Handler>(handler)));
      return 0;
    }
    if (evicted_[i]) {
      // Written before the call, on its connection; its outcome shows in the call's answer.
      load(s, route, opts.deadline, [](std::error_code, resp3::value&&) {});
    }
    const bool with_wait = synced(s);
    return session_.exec(call_of(s, keys, args), opts,
                         [this, s, with_wait, h = std::forward<Handler>(handler)](
                             std::error_code ec, resp3::value&& answer) mutable {
                           (void)settle(with_wait, false, ec, answer);
                           if (not_run(answer)) evicted_[static_cast<std::size_t>(s)] = true;
                           std::move(h)(ec, std::move(answer));
                         });
  }
  /// As async_run (`once` false) or async_run_once (`once` true), batched: the calls of `s` for
  /// keys of one group (group_of) made before the client's executor runs the handlers already
  /// queued when the first of them was made are run as one script call (script_batch.hpp), with the
  /// earliest of their deadlines; each handler gets what its call alone would have got (its reply,
  /// or the batch's failure), and its `written_at` the batch's write. A batch answered NOSCRIPT ran
  /// nothing: it is loaded and sent again, once. A call alone in its batch is an ordinary call.
  /// `keys` and `args` are copied. Returns 0: a batched call cannot be withdrawn. For a group's
  /// operations started together (a multi-lock's members): one command and one script on the server
  /// for all of them instead of one each.
  template <typename Handler>
  multiplexer::id_type async_run_batched(script s, std::span<const std::string_view> keys,
                                         std::span<const std::string_view> args,
                                         request_options opts, Handler&& handler, bool once) {
    add_to_batch(s, keys, args, opts, reply_handler(std::forward<Handler>(handler)), once);
    return 0;
  }

  /// Whether an answer of async_run_once says that the script did not run (NOSCRIPT): the
  /// caller may call again.
  static bool not_run(const resp3::value& answer) noexcept;

  /// Keys of one group may go into one script call (session::group_of: a cluster's hash slot).
  std::uint16_t group_of(std::string_view key) const noexcept { return session_.group_of(key); }

 private:
  /// What the session's answer to a script call means for its caller.
  enum class settled : std::uint8_t { deliver, reload };
  /// Reads the answer in place: the script's reply unwrapped from its WAIT's, an error reply as
  /// its code (with Redis's text), too few acknowledgements as replicas_not_synced; or NOSCRIPT
  /// (a SCRIPT FLUSH meanwhile): load it and send again, once.
  settled settle(bool with_wait, bool may_reload, std::error_code& ec, resp3::value& answer) const;
  /// `EVALSHA`, followed by `WAIT` when `s` changes a lock under config::sync_replicas.
  command call_of(script s, std::span<const std::string_view> keys,
                  std::span<const std::string_view> args) const;
  /// `SCRIPT LOAD` of `s` on the node of `route`, bounded by `deadline`: records its hash (and
  /// clears evicted_), then `then` gets no error, or the load's failure (Redis's text as an
  /// error reply). Every load after the handshake goes through here.
  void load(script s, std::string_view route, clock_type::time_point deadline, reply_handler then);
  /// The same, then `handler` gets the load's failure, or a NOSCRIPT reply: call again.
  void load_then_call_again(script s, std::string_view route, clock_type::time_point deadline,
                            reply_handler handler);

  template <typename Handler>
  multiplexer::id_type send(script s, std::span<const std::string_view> keys,
                            std::span<const std::string_view> args, request_options opts,
                            Handler&& handler, bool may_reload) {
    const bool with_wait = synced(s);
    return session_.exec(
        call_of(s, keys, args), opts,
        [this, s, keys, args, opts, may_reload, with_wait, h = std::forward<Handler>(handler)](
            std::error_code ec, resp3::value&& answer) mutable {
          if (settle(with_wait, may_reload, ec, answer) == settled::reload) {
            return reload_and_send(s, keys, args, opts, reply_handler(std::move(h)));
          }
          std::move(h)(ec, std::move(answer));
        });
  }
  void reload_and_send(script s, std::span<const std::string_view> keys,
                       std::span<const std::string_view> args, request_options opts,
                       reply_handler handler);

  /// Whether `s` is followed by WAIT (config::sync_replicas).
  bool synced(script s) const noexcept;

  /// Calls of one script and group waiting to be sent together (async_run_batched).
  struct batch {
    struct call {
      request_options opts;
      reply_handler handler;
    };
    script which{};
    std::uint16_t group = 0;
    bool once = false;
    bool reloaded = false;  // sent again after a NOSCRIPT (at most once)
    batch_arguments arguments;
    std::vector<call> calls;
    // The views a send reads, into `arguments` (made when the batch is sent).
    std::vector<std::string_view> keys, args;
    clock_type::time_point written{};
  };
  /// The batches of the current turn; the flush posted for them checks that the registry lives.
  struct pending_batches {
    std::vector<std::shared_ptr<batch>> batches;
  };
  void add_to_batch(script s, std::span<const std::string_view> keys,
                    std::span<const std::string_view> args, request_options opts,
                    reply_handler handler, bool once);
  void flush_batches();
  void send_batch(std::shared_ptr<batch> b);
  /// Sends a batch of two calls or more as one call of the batch script, loaded first if this
  /// server has not got it.
  void send_batch_script(std::shared_ptr<batch> b);
  /// Completes every call of `b` with its share of the batch's answer, or with its failure.
  static void deliver_batch(batch& b, std::error_code ec, resp3::value&& answer);
  /// The deadline hook of a batch whose calls all have one: each call's own.
  static void on_batch_deadline(void* context);

  session& session_;
  boost::asio::any_io_executor executor_;
  std::shared_ptr<pending_batches> pending_ = std::make_shared<pending_batches>();
  std::array<std::string, script_count> batch_sha_;  // the batch scripts loaded, by script
  std::array<bool, script_count> batch_evicted_{};   // answered NOSCRIPT since loaded
  std::array<std::string, script_count> sha_;
  std::array<bool, script_count> evicted_{};  // answered NOSCRIPT since it was last loaded
  std::string wait_command_;                  // `WAIT replicas timeout` encoded, or empty
  std::int64_t replicas_ = 0;
};

}  // namespace rlock::detail
