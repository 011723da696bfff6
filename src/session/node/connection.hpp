#pragma once

#include "resp3/parser.hpp"
#include "resp3/value.hpp"
#include "rlock/config.hpp"
#include "rlock/connection_state.hpp"
#include "session/backoff.hpp"
#include "session/node/multiplexer.hpp"
#include "session/node/node_locator.hpp"
#include "session/node/subscription_set.hpp"
#include "session/node/transport.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace rlock::detail {

/// A step of the handshake after `HELLO 3` and `SELECT` (e.g. a `SCRIPT LOAD`): its command and
/// the check of its reply; a check that returns an error fails the connection attempt.
struct handshake_step {
  std::string command;
  std::function<std::error_code(resp3::value& reply, std::string& diagnostic)> check;
};

/// One connection to one Redis node, kept alive: it connects, does the handshake, writes the
/// multiplexer's requests, reads answers and pushes, checks health, and after a loss reconnects
/// with backoff, replays its subscriptions and writes again what is safe to write again. The
/// protocol logic lives in the sans-I/O multiplexer and subscription set; this class only decides
/// which Asio operation to start next.
///
/// Nothing reaches the server before the handshake is complete: requests made while connecting or
/// reconnecting wait in the queue, bounded by their own deadlines.
///
/// All member functions must be called on the connection's executor.
class connection : public std::enable_shared_from_this<connection> {
 public:
  /// Who hears about pushes and state changes (the client); called on the executor.
  struct listener {
    /// A message on a subscribed channel. `since`: when the latest request this connection had
    /// answered before the message was written (epoch: none yet). The server answers and
    /// pushes in the order it runs things, so it published the message after running that
    /// request: a lower bound on when the publishing script ran (a fair lock's handoff by push
    /// counts its lease from there).
    virtual void on_message(std::string_view channel, std::string_view payload,
                            std::chrono::steady_clock::time_point since) = 0;
    /// A channel became active (its SUBSCRIBE confirmed), first time or after a reconnect.
    virtual void on_subscribed(std::string_view channel) = 0;
    /// The server refused to subscribe a wanted channel (e.g. -NOPERM).
    virtual void on_refused(std::string_view channel, std::error_code ec,
                            std::string_view text) = 0;
    virtual void on_state(connection_state state, std::error_code reason,
                          const std::string& diagnostic) = 0;
    /// The server unsubscribed a wanted channel by itself (a sharded channel whose slot
    /// moved). Unless resubscribe_dropped(false), the connection subscribes it again itself.
    virtual void on_dropped(std::string_view channel) { static_cast<void>(channel); }
    /// Another client changed `keys`, which this connection read (config::track_holds); `all`:
    /// every key it read (a FLUSHALL, or a new connection: the server tracks nothing of the
    /// old one, and the keys may be gone after a failover or a restart).
    virtual void on_invalidate(std::span<const std::string_view> keys, bool all) {
      static_cast<void>(keys);
      static_cast<void>(all);
    }

   protected:
    ~listener() = default;
  };

  using connect_handler = boost::asio::any_completion_handler<void(std::error_code, std::string)>;

  connection(boost::asio::any_io_executor ex, config cfg);
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  ~connection();

  void set_listener(listener* l) noexcept { listener_ = l; }
  /// Adds a step to every handshake; call before connecting.
  void add_handshake_step(handshake_step step) { steps_.push_back(std::move(step)); }
  /// Asks `l` where to go before every attempt (Sentinel), instead of config's host and port;
  /// call before connecting. A node that answers `-READONLY` (a master demoted to replica) is
  /// then left at once, for the locator to find the new master.
  void set_locator(std::shared_ptr<node_locator> l) { locator_ = std::move(l); }
  /// Keeps retrying the first connection (with backoff) instead of failing connect(): for a
  /// connection nobody waits on (the `+switch-master` listener).
  void keep_trying() noexcept { keep_trying_ = true; }
  /// Channels are sharded (Redis Cluster 7): `SSUBSCRIBE`/`SUNSUBSCRIBE` instead of
  /// `SUBSCRIBE`/`UNSUBSCRIBE`; call before subscribing anything.
  void set_sharded(bool on) noexcept { sharded_ = on; }
  /// Whether a channel the server dropped by itself is subscribed again here (the default) or
  /// left to the listener (Cluster: its slot's new owner may be another node).
  void resubscribe_dropped(bool on) noexcept { resubscribe_dropped_ = on; }
  /// Sentinel announced a new master at `to`: the next attempt goes there first, and a
  /// connection to another node is left now (it reconnects through the locator).
  void move_to(const config::endpoint& to, std::string why);

  /// The first connection: completes with no error once the handshake is done, or with why not
  /// (errc::timeout after config::connect_timeout, resolve_failed, connect_failed, the TLS
  /// errors, handshake_closed, auth_failed, command_not_permitted, unsupported_server,
  /// server_error, protocol_error) and Redis's, OpenSSL's or the OS's words.
  /// From then on the connection reconnects by itself (config::reconnect).
  void async_connect(connect_handler handler);

  /// Queues a request (see multiplexer). Fails it, posted, with errc::connection_lost when not
  /// connected and not about to be (never connected, closed, reconnection off, fail_fast).
  /// Returns the id for withdraw(), or 0 if the request was failed at once.
  multiplexer::id_type exec(std::string payload, request_options opts, reply_handler handler);
  bool withdraw(multiplexer::id_type id, std::error_code reason);

  /// Wants / no longer wants `channel` (reference counting is the caller's).
  void subscribe(std::string_view channel);
  void unsubscribe(std::string_view channel);
  bool subscribed(std::string_view channel) const { return subs_.active(channel); }
  std::size_t subscriptions() const noexcept { return subs_.size(); }
  /// Requests queued or written and not answered yet.
  std::size_t outstanding() const noexcept { return mux_.queued() + mux_.written(); }

  /// Fails everything with `reason` and closes for good. Idempotent.
  void close(std::error_code reason);

  connection_state state() const noexcept { return state_; }
  bool connected() const noexcept { return state_ == connection_state::connected; }
  /// Why the connection was last lost or failed to connect (for error messages).
  const std::string& last_error() const noexcept { return last_error_; }
  const config& cfg() const noexcept { return cfg_; }
  /// The server's version as its `HELLO` said ("7.0.15"); empty before the first handshake.
  const std::string& server_version() const noexcept { return server_version_; }
  /// Whether the server tracks the keys this connection reads and pushes their invalidations
  /// (config::track_holds, on a server that keeps NOLOOP inside scripts).
  bool tracking() const noexcept { return tracking_; }
  /// Why tracking is off although config::track_holds asked for it (the server's refusal, or
  /// its version); empty otherwise.
  const std::string& tracking_refusal() const noexcept { return tracking_refusal_; }
  /// The node of the current (or latest) attempt.
  const std::string& host() const noexcept { return host_; }
  std::uint16_t port() const noexcept { return port_; }
  const boost::asio::any_io_executor& get_executor() const noexcept { return executor_; }

  struct counters {
    std::atomic<std::uint64_t> reconnects{0};
    /// session_stats::reconnected_at, in steady_clock ticks (0: never).
    std::atomic<std::chrono::steady_clock::rep> reconnected_at{0};
    std::chrono::steady_clock::time_point last_reconnect() const noexcept {
      return std::chrono::steady_clock::time_point(
          std::chrono::steady_clock::duration(reconnected_at.load(std::memory_order_relaxed)));
    }
    std::atomic<std::uint64_t> health_check_failures{0};
    std::atomic<std::uint64_t> retried_commands{0};
    std::atomic<std::uint64_t> writes{0};
  };
  const counters& stats() const noexcept { return counters_; }

 private:
  boost::asio::awaitable<void> attempt(std::uint64_t gen);
  void start_handshake(std::uint64_t gen);
  /// Checks the reply to handshake step `i` (0: HELLO, then SELECT if any, then the steps).
  std::error_code check_step(std::size_t i, resp3::value& reply, std::string& diagnostic);
  /// `text` with the configured password, wherever the server echoed it, as `***`.
  std::string without_password(std::string_view text) const;
  /// Reads and handles what the server sends on connection `gen`, until it fails or is
  /// replaced; on_read says whether to read again.
  void start_read(std::uint64_t gen);
  bool on_read(std::uint64_t gen, boost::system::error_code ec, std::size_t n);
  void on_ready(std::uint64_t gen);
  /// Ends the current connection (socket, attempt, health check, subscriptions' server state);
  /// what happens to the requests and the state is the caller's: lose() or close().
  void drop_socket();
  void lose(std::uint64_t gen, std::error_code ec, std::string diagnostic);
  void schedule_reconnect();
  void start_attempt();
  void start_write();
  void schedule_write();
  /// Marks the reader's handling of one batch of answers: the requests its handlers make are
  /// written when it ends.
  class batch_guard {
   public:
    explicit batch_guard(connection& c) noexcept : c_(c) { c_.reading_batch_ = true; }
    batch_guard(const batch_guard&) = delete;
    batch_guard& operator=(const batch_guard&) = delete;
    ~batch_guard();
    /// The batch is handled: write what it asked for.
    void write_now();

   private:
    connection& c_;
    bool handled_ = false;
  };
  void arm_deadline(clock_type::time_point d);
  void arm_health();
  void on_health_tick();
  /// How long a PING may go unanswered (with nothing else read) before the connection is dead.
  std::chrono::milliseconds ping_allowance() const noexcept;
  void send_subscription(std::string_view channel, bool on);
  void on_push(resp3::value& v);
  void tell_state(std::error_code reason, const std::string& diagnostic);
  void finish_connect(std::error_code ec, const std::string& diagnostic);

  boost::asio::any_io_executor executor_;
  config cfg_;
  listener* listener_ = nullptr;
  std::vector<handshake_step> steps_;
  std::shared_ptr<node_locator> locator_;
  std::string host_;  // where the current attempt goes: config's, or the locator's answer
  std::uint16_t port_ = 0;
  std::string ready_host_;  // the node of the last connection that became ready
  std::uint16_t ready_port_ = 0;
  bool keep_trying_ = false;
  bool sharded_ = false;
  bool resubscribe_dropped_ = true;
  std::string server_version_;
  int not_master_retries_ = 0;  // during connect(): Sentinel named a node that is not master
  boost::asio::ip::tcp::resolver resolver_;
  transport transport_;  // TCP, or TLS over it
  resp3::parser parser_;
  multiplexer mux_;
  subscription_set subs_;
  backoff backoff_;

  connection_state state_ = connection_state::disconnected;
  bool ever_connected_ = false;
  /// The server's id for the last connection that became ready (HELLO's "id"), and for the one
  /// being set up. A new connection's handshake kills the previous one first (CLIENT KILL ID):
  /// a request written to a connection we gave up can then never run after the new connection
  /// is ready, so retries, latched releases and acquire reconciliation see a final state.
  std::int64_t server_id_ = 0;
  std::int64_t handshake_id_ = 0;
  bool hello_answered_ = false;   // this attempt's HELLO was answered (a close after it says so)
  bool fencing_ = false;          // this handshake has the CLIENT KILL step (after HELLO)
  bool tracking_ = false;         // invalidations are pushed to this connection
  bool tracking_off_ = false;     // turned on by the handshake on a server too old: turn off
  std::string tracking_refusal_;  // why tracking is off though asked for
  std::size_t select_step_ = 0;   // the handshake's indexes (0: none)
  std::size_t tracking_step_ = 0;
  std::size_t steps_begin_ = 0;
  bool tls_handshaking_ = false;  // the attempt waits for the TLS handshake
  std::uint64_t gen_ = 1;  // the current connection attempt; callbacks of older ones do nothing
  std::string writing_;    // the bytes of the write in flight
  bool write_in_flight_ = false;
  static constexpr std::size_t kept_write_buffer = 64 * 1024;
  static constexpr std::size_t max_unwritten = 1024;  // requests (schedule_write)
  bool write_scheduled_ = false;                      // a start_write is posted (schedule_write)
  bool reading_batch_ = false;                        // the reader is handling a batch of answers
  bool write_after_batch_ = false;                    // a request was made meanwhile
  std::array<char, 16 * 1024> read_buffer_{};

  boost::asio::steady_timer deadline_timer_;  // the earliest request deadline
  clock_type::time_point deadline_armed_at_ = clock_type::time_point::max();
  boost::asio::steady_timer connect_timer_;    // bounds one attempt
  boost::asio::steady_timer reconnect_timer_;  // the backoff
  boost::asio::steady_timer health_timer_;
  clock_type::time_point last_read_{};
  clock_type::time_point ping_sent_{};
  bool ping_outstanding_ = false;

  std::vector<connect_handler> connect_waiters_;
  std::string last_error_;
  counters counters_;
};

}  // namespace rlock::detail
