#pragma once

#include "rlock/export.hpp"
#include "rlock/log.hpp"
#include "rlock/rw_priority.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace rlock {

/// Where and how to reach Redis, and the lock defaults. Plain data: copy and edit freely.
struct RLOCK_EXPORT config {
  /// Redis host name or address, and port, of a standalone server (ignored with sentinels or
  /// cluster nodes).
  std::string host = "127.0.0.1";
  /// The port of `host`.
  std::uint16_t port = 6379;

  /// A host and port.
  struct endpoint {
    /// Host name or address.
    std::string host;
    /// Port; by default Sentinel's.
    std::uint16_t port = 26379;
  };

  /// Redis Sentinel: with `nodes` set, the client finds the master by asking the sentinels
  /// (`SENTINEL get-master-addr-by-name`, each in turn until one answers), checks with `ROLE`
  /// that the node is the master (else asks again), and does so again on every reconnection.
  /// It also listens on a sentinel for `+switch-master` and moves to the new master at once.
  /// `username`, `password` and `tls` above are the data nodes'; the sentinels are reached with
  /// the credentials below and the same TLS settings.
  struct sentinel_settings {
    /// The sentinels, asked in turn; empty: Sentinel is off.
    std::vector<endpoint> nodes;
    /// The name the sentinels monitor the master under (`sentinel monitor <name> ...`).
    std::string master_name;
    /// The sentinels' own ACL user and password (`sentinel sentinel-user/-pass`, `requirepass`
    /// in sentinel.conf); empty: none.
    std::string username;
    /// The sentinels' password (see username).
    std::string password;
  };
  /// Redis Sentinel; off while `sentinel.nodes` is empty.
  sentinel_settings sentinel;

  /// Redis Cluster: with `nodes` set, the client learns the slot map from the first seed that
  /// answers `CLUSTER SHARDS`, keeps one connection per master it uses (opened on first use,
  /// kept alive, reconnected like a standalone one), sends each command to the master owning
  /// its key's hash slot, and follows `-MOVED`/`-ASK` redirects and `-TRYAGAIN`/`-CLUSTERDOWN`
  /// retries inside the operation's bound. `host` and `port` are then ignored.
  struct cluster_settings {
    /// Seed nodes as `redis://[[user]:password@]host:port` or `rediss://…` URLs (any node of
    /// the cluster, masters or replicas; all of one scheme). Credentials in a URL apply to
    /// every node unless `username`/`password` are set; `rediss://` turns TLS on.
    std::vector<std::string> nodes;
    /// The slot map is read again at this interval (±10 % jitter), besides after every
    /// `-MOVED` and every lost connection; zero: only then. One refresh runs at a time.
    std::chrono::milliseconds refresh_interval{30'000};
  };
  /// Redis Cluster; off while `cluster.nodes` is empty.
  cluster_settings cluster;

  /// How waiters hear unlocks. `automatic`: sharded pub/sub (`SSUBSCRIBE`, scripts `SPUBLISH`)
  /// in Cluster mode on Redis 7 or later, as Redisson does; classic `SUBSCRIBE`/`PUBLISH`
  /// otherwise. A Redisson client sharing the locks must use the same kind.
  enum class pubsub_mode {
    automatic,  ///< sharded in Cluster mode on Redis 7 or later, classic otherwise
    classic,    ///< `SUBSCRIBE` / `PUBLISH`
    sharded     ///< `SSUBSCRIBE` / `SPUBLISH`; Cluster mode only (else errc::invalid_argument)
  };
  /// How waiters hear unlocks (see pubsub_mode).
  pubsub_mode pubsub = pubsub_mode::automatic;

  /// ACL user and password sent with `HELLO 3 AUTH`; with an empty username and a password,
  /// the user is "default" (a `requirepass` server).
  std::string username;
  /// The password sent with `username` (see there).
  std::string password;

  /// Logical database selected after the handshake.
  int database = 0;

  /// TLS (Asio's SSL stream over OpenSSL). Off by default; a `rediss://` URL turns it on.
  struct tls_settings {
    /// Whether connections use TLS.
    bool enabled = false;
    /// The CAs that sign the server's certificate, a PEM file and/or a directory of hashed PEM
    /// files (`openssl rehash`); both empty: the system's default trust store.
    std::string ca_file;
    /// The directory of hashed PEM files (see ca_file).
    std::string ca_dir;
    /// A client certificate and its private key (PEM), for servers that require one
    /// (`tls-auth-clients yes`: mutual TLS). Both or neither.
    std::string cert_file;
    /// The private key of cert_file (see there).
    std::string key_file;
    /// The name sent for SNI and checked against the server's certificate (its DNS or IP
    /// subject alternative names); empty: `host`.
    std::string server_name;
    /// Whether the server's certificate is verified (chain to a trusted CA, name). Turning it
    /// off accepts any server, a man in the middle included: only for tests; it is logged at
    /// every connection.
    bool verify_peer = true;
  };
  /// TLS; off by default.
  tls_settings tls;

  /// Sent with `HELLO 3 ... SETNAME` on every connection, so operators can tell this client's
  /// connections apart in `CLIENT LIST`. Empty: no name. Must not contain spaces or newlines.
  std::string client_name;

  /// Lease of locks taken without an explicit lease; the watchdog renews them every third of it.
  /// Redisson's default is 30 s (lockWatchdogTimeout). From 100 ms to 2^31 - 1 ms: a client
  /// made with another value throws errc::invalid_argument.
  std::chrono::milliseconds watchdog_timeout{30'000};

  /// Tells a holder at push speed that another client changed its lock (an operator's DEL or
  /// force_unlock, an overwrite, a FLUSHALL): every connection sends `CLIENT TRACKING ON OPTOUT
  /// NOLOOP` in its handshake, the server pushes an invalidation when another client writes a
  /// key this one read, and a held lock's key invalidated is checked at once (one renewal)
  /// instead of at the watchdog's next round; lost() completes if it is gone. A (re)connection
  /// checks every hold once. Only where Redis is 7.0.5 or later (NOLOOP inside scripts); an
  /// older server, or one that refuses CLIENT TRACKING (an ACL), keeps the watchdog's rounds
  /// alone (one warning is logged). Holds with an explicit lease are not renewed and are not
  /// checked. Off by default: the server then tracks every key the client's scripts read, which
  /// costs it a tracking-table update per read and per write (measured in bench S5: 22.5 µs per
  /// renewed key against 3.6 µs; a fair handoff and a multi-lock slower too). Turn it on for an
  /// election's client, and wherever a holder must stop at once when its lock is taken away.
  bool track_holds = false;

  /// Prepended to every lock name to form its Redis key (and thus its channel). Off by default,
  /// as in Redisson: a Java service and a C++ service share a lock only if both use the same key.
  std::string key_prefix;

  /// Bound on every Redis round trip; a command without a reply by then fails with errc::timeout.
  std::chrono::milliseconds command_timeout{5'000};

  /// Bound on resolving, connecting and the handshake, on every connection attempt.
  std::chrono::milliseconds connect_timeout{5'000};

  /// What to do when the connection is lost. By default the client reconnects with exponential
  /// backoff and full jitter (delay n is uniform in [0, min(backoff_cap, backoff_initial * 2^n)])
  /// until it is closed, redoes the handshake, reloads the scripts and resubscribes.
  struct reconnect_policy {
    /// false: never reconnect; after a loss every operation fails with errc::connection_lost.
    bool enabled = true;
    /// The bound of the first delay (`backoff_initial` above).
    std::chrono::milliseconds backoff_initial{50};
    /// The bound no delay exceeds (`backoff_cap` above).
    std::chrono::milliseconds backoff_cap{2'000};
  };
  /// What to do when the connection is lost (see reconnect_policy).
  reconnect_policy reconnect;

  /// When nothing has been read for this long, a PING is sent; if nothing has been read for
  /// another interval after it, the connection is taken for dead and replaced. Catches half-open
  /// TCP connections long before a lease runs out. Zero turns the health check off.
  std::chrono::milliseconds health_check_interval{2'000};

  /// While the client is disconnected, fail operations at once with errc::connection_lost
  /// instead of letting them wait (within their own bounds) for the reconnection.
  bool fail_fast = false;

  /// Where the client logs reconnects, lost locks, failed renewals, slow acquisitions and
  /// protocol errors (rlock/log.hpp); unset: silent. rlock::stderr_logger() is ready to use.
  logger log;

  /// Replica-synced writes (Redisson's checkLockSyncedSlaves): with `replicas` > 0, every
  /// acquisition, renewal and release is followed on its connection by `WAIT replicas timeout`.
  /// An acquisition fewer replicas acknowledged is given back and fails with
  /// errc::replicas_not_synced; an unsynced renewal counts as failed (retried; the lock is
  /// reported lost at its lease's end); an unsynced release is still a release (logged). `WAIT`
  /// blocks the connection it runs on, so `timeout` adds to every lock operation's latency while
  /// a replica lags; it must be positive and below command_timeout. Narrows, does not close,
  /// the failover window: docs/guide/replica-sync.md.
  struct replica_sync {
    /// How many replicas must acknowledge each write (`WAIT`'s first argument); 0: off.
    int replicas = 0;
    /// How long `WAIT` waits for them; positive and below command_timeout.
    std::chrono::milliseconds timeout{200};
  };
  /// Replica-synced writes (see replica_sync); off by default.
  replica_sync sync_replicas;

  /// Handoff between coroutines of this client. When a final unlock finds a coroutine of the same
  /// client waiting for that lock, one script hands the hold from the releasing owner to the
  /// waiting one (the lock stays a valid Redisson lock throughout), instead of release, publish,
  /// wake-up and a new acquire: one round trip instead of three. Other processes hear no unlock
  /// meanwhile, so the streak is bounded: after `max_streak` consecutive local handoffs of a
  /// lock, or `max_time` after the first of them, the next unlock releases and publishes. The
  /// defaults keep another process's waiter from waiting more than about 20 ms (plus one hold)
  /// longer than it would with plain unlocks, while a lock passed around inside one process
  /// (workers of one service) goes without pub/sub 7 times out of 8. `max_streak` 0 turns it
  /// off. A transfer whose answer is lost is settled by asking the server, never assumed
  /// (docs/guide/semantics.md, "Handoff between coroutines of one client"). Only kinds without
  /// tokens hand off (a fenced acquisition must take a new token).
  struct handoff_bound {
    /// Consecutive local handoffs of a lock after which the next unlock releases and
    /// publishes; 0: no local handoff.
    std::uint32_t max_streak = 8;
    /// How long after the first local handoff of a streak the next unlock releases and
    /// publishes.
    std::chrono::milliseconds max_time{20};
  };
  /// Handoff between coroutines of this client (see handoff_bound); on by default.
  handoff_bound local_handoff;

  /// Acquire attempts without a bound (lock(), and its retries) in flight at once; more wait
  /// their turn in FIFO order, in the client, costing no request. Redis runs attempts one at a
  /// time, so a burst (a fleet of 100 000 lock() calls at start) gains nothing from having them
  /// all in flight, and would hold a record, the command's bytes and a handler for each, and a
  /// write buffer of tens of megabytes. 4 096 in flight keeps a link of 20 ms round trips at
  /// 200 000 attempts a second. try_lock with a wait is never held back (its bound must hold).
  /// Zero: no limit.
  std::size_t max_attempts_in_flight = 4'096;

  /// Fair locks (client::get_fair_lock): FIFO across processes through a queue on the server.
  struct fair_lock_policy {
    /// How long past its expected turn a waiter keeps its place in the queue (Redisson's
    /// fairLockWaitTimeout, default 5 minutes). Every rlock waiter queues with it, whatever its
    /// try_lock's wait (which bounds the caller): the queue's deadlines are each the one ahead
    /// plus an allowance, and a take moves them all back by the taker's, so waiters with
    /// different allowances drop live waiters as stale. Set Redisson's fairLockWaitTimeout alike
    /// on a lock Java services share (their try_lock(wait) queues with its wait, which rlock
    /// cannot change). rlock's waiters come back while they wait, each time moving their
    /// deadline on, so a live waiter is never dropped; this bounds how long a waiter that died
    /// (or a Redisson waiter that gave up silently) holds up the queue once it is its turn.
    /// Positive, at most 2^31 - 1 ms.
    std::chrono::milliseconds wait_timeout{60'000};
    /// rlock's handoff by push: a release that finds an rlock waiter at the head of the queue
    /// makes it the holder inside the release script and tells it on its channel, so it holds
    /// the lock when the push arrives, with no acquire round trip (Redisson waiters on the same
    /// lock get Redisson's protocol). false: every waiter acquires by itself after the push, as
    /// in Redisson. Off under sync_replicas (the grant would skip the replicas' check).
    bool handoff_by_push = true;
    /// A handoff by push to a waiter whose lease the watchdog renews gives it the lock on the
    /// server for this long only; the waiter renews at once on taking the push (its holder
    /// believes no longer than this until that renewal is answered). So a waiter that died at
    /// the head of the queue holds the lock this long, not a whole watchdog lease, before the
    /// next waiter takes it (Redisson issue #6150's rlock form). A waiter with its own lease is
    /// given that lease, which nothing renews. Positive; what is used is at most the watchdog's
    /// lease and at least four times the watchdog's margin (watchdog_timeout / 100 + 5 ms).
    std::chrono::milliseconds handoff_claim{2'000};
  };
  /// Fair locks' settings (see fair_lock_policy).
  fair_lock_policy fair_lock;

  /// Read-write locks (client::get_read_write_lock).
  struct read_write_lock_policy {
    /// Whom a read-write lock lets in first, unless the lock names its own
    /// (client::get_read_write_lock's `priority`): writers, so that readers that keep arriving
    /// never starve a writer.
    rw_priority priority = rw_priority::writers;
    /// rw_priority::writers: how long a waiting writer's mark lives after its latest attempt. A
    /// waiting writer comes back every half of it (renewing its mark), so this bounds how long
    /// a writer that died, or was cut off, keeps readers out. A writer that gives up takes its
    /// mark back at once. At least 100 ms.
    std::chrono::milliseconds writer_mark_lease{10'000};
  };
  /// Read-write locks' settings (see read_write_lock_policy).
  read_write_lock_policy read_write_lock;

  /// Fenced locks (client::get_fenced_lock): the lifecycle of a lock's token counter
  /// `redisson_lock_token:{<key>}`.
  struct fenced_lock_policy {
    /// Zero (the default): the counter is kept forever and each token is the counter
    /// incremented, as Redisson keeps it (Redisson issue #6510: one key per name ever fenced).
    /// Required on a name a Redisson client also fences: Redisson's acquire increments a
    /// missing counter from 0, so a counter that expired would give it tokens that go back.
    ///
    /// Otherwise, at least 1 s: **clock-bounded tokens**. Each acquisition's token is the
    /// larger of the counter + 1 and the server's clock in microseconds (`TIME`), and the
    /// counter expires this long after the latest acquisition. Tokens still strictly increase
    /// across expiry as long as the server's clock (and a promoted replica's) does not step
    /// back by more than this: a counter that expired was last written this long ago, below
    /// the clock that seeds the next token. Every client fencing the name must set it.
    std::chrono::milliseconds token_idle_ttl{0};
  };
  /// Fenced locks' settings (see fenced_lock_policy).
  fenced_lock_policy fenced_lock;

  /// Spin locks (client::get_spin_lock): for deployments without pub/sub, a waiter polls.
  /// Redisson's RSpinLock exponential backoff: the first sleep is `initial`, each next one
  /// `multiplier` times the last plus a random 0..n ms (n: sleeps so far), at most `cap`; a
  /// release wakes nobody. Positive; `cap` at least `initial`.
  struct spin_backoff {
    /// The first sleep.
    std::chrono::milliseconds initial{1};
    /// The longest sleep.
    std::chrono::milliseconds cap{128};
    /// Each sleep is this many times the last (plus the jitter).
    std::uint32_t multiplier = 2;
  };
  /// Spin locks' backoff (see spin_backoff).
  spin_backoff spin_lock;

  /// An acquisition that waited this long or longer is logged (warning). Zero: never.
  std::chrono::milliseconds slow_acquire_threshold{1'000};

  /// Parses `redis://[[user]:password@]host[:port][/db]`, or `rediss://...` for TLS (with the
  /// system's trust store; set tls.ca_file etc. afterwards for a private CA); throws
  /// boost::system::system_error carrying errc::invalid_argument on anything else.
  static config from_url(const std::string& url);
};

}  // namespace rlock
