// ACL users against a real server: the least-privilege line the docs recommend for a service
// that locks under a key prefix lets rlock do everything it does, and nothing outside the
// prefix; each missing right fails with its own error and Redis's words.
#include "rlock/rlock.hpp"
#include "support/acl_users.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace acl_test {

namespace asio = boost::asio;
using rlock::test::error_of;
using namespace std::chrono_literals;

using rlock::test::least_privilege_rules;
using rlock::test::set_user;

rlock::config as_user(const std::string& user, const std::string& prefix) {
  auto cfg = rlock::test::make_config();
  cfg.username = user;
  cfg.password = "pw";
  cfg.key_prefix = prefix;
  cfg.client_name = user;
  cfg.watchdog_timeout = 900ms;  // renewals every 300 ms
  cfg.track_holds = true;        // client|tracking is on the line: holders told by push
  cfg.reconnect.backoff_initial = 10ms;
  cfg.reconnect.backoff_cap = 100ms;
  return cfg;
}

/// connect() as `cfg`: its error and words (none on success).
std::pair<std::error_code, std::string> connect_as(const rlock::config& cfg) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), cfg);
  std::pair<std::error_code, std::string> out;
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    try {
      co_await redis.connect();
    } catch (const boost::system::system_error& e) {
      out = {e.code(), e.what()};
    }
    co_await redis.close();
  });
  return out;
}

TEST(acl, the_least_privilege_line_does_everything_rlock_does_and_nothing_outside_its_prefix) {
  rlock::test::raw_client admin(rlock::test::shared_server().port());
  const std::string prefix = "acl-" + rlock::test::unique_prefix();
  set_user(admin, "svc", least_privilege_rules(prefix));
  asio::io_context io;
  rlock::client a(io.get_executor(), as_user("svc", prefix));
  rlock::client b(io.get_executor(), as_user("svc", prefix));
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();  // HELLO AUTH SETNAME, SCRIPT LOAD of every script
    co_await b.connect();
    auto mine = a.get_lock("orders:1");
    auto theirs = b.get_lock("orders:1");
    co_await mine.lock();  // EVALSHA acquire (exists, hexists, hincrby, pexpire)
    EXPECT_TRUE(co_await mine.is_held());
    EXPECT_TRUE(co_await theirs.is_locked());
    EXPECT_EQ(co_await mine.hold_count(), 1);
    EXPECT_GT((co_await mine.remaining_ttl()).count(), 0);
    // A waiter subscribes to the channel; the watchdog renews meanwhile.
    bool got = false;
    bool done = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          got = co_await theirs.try_lock(5s);
          done = true;
        },
        asio::detached);
    co_await rlock::test::poll_until(
        [&] { return b.metrics().waiters > 0 && a.metrics().renewal_calls >= 2; });
    EXPECT_GE(a.metrics().renewal_calls, 2u);
    EXPECT_EQ(a.metrics().renewal_failures, 0u);
    // A reconnection: its handshake fences the old connection (CLIENT KILL ID).
    const auto attempts = b.stats().acquire_attempts;
    admin.command({"CLIENT", "KILL", "USER", "svc", "SKIPME", "yes"});
    // Back, resubscribed, and its waiter's retry after the resubscription made; the query after
    // it is answered after that retry, so the waiter sleeps again before the unlock below.
    co_await rlock::test::poll_until([&] {
      return a.stats().reconnects > 0 && b.stats().reconnects > 0 &&
             b.stats().acquire_attempts > attempts;
    });
    (void)co_await theirs.is_locked();
    EXPECT_TRUE(co_await mine.is_held());
    co_await mine.unlock();  // latched release (get, hexists, del, publish, set); latch DEL
    co_await rlock::test::poll_until([&] { return done; });
    EXPECT_TRUE(got);
    EXPECT_EQ(theirs.last_wake(), rlock::wake_reason::notification);
    EXPECT_TRUE(co_await mine.force_unlock());
    // Its holder (b) is told by the server's invalidation (client|tracking), not by a round.
    EXPECT_TRUE(co_await rlock::test::poll_until([&] { return b.stats().hold_checks >= 1; }));
    // A fenced lock: its token counter (incr, get).
    auto fenced = a.get_fenced_lock("orders:2");
    const auto token = co_await fenced.lock(5s);
    EXPECT_EQ(co_await fenced.current_token(), token);
    co_await fenced.unlock();
    co_await a.close();
    co_await b.close();
  });
  // The same user, locks outside its prefix: refused, with their own error and Redis's words.
  asio::io_context io2;
  rlock::client other(io2.get_executor(), as_user("svc", "billing:"));
  rlock::test::run(io2, [&]() -> asio::awaitable<void> {
    co_await other.connect();
    auto outside = other.get_lock("x");
    try {
      co_await outside.lock();
      ADD_FAILURE() << "a key outside the prefix was taken";
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), rlock::errc::key_not_permitted) << e.what();
      EXPECT_NE(std::string(e.what()).find("NOPERM"), std::string::npos) << e.what();
    }
    co_await other.close();
  });
  EXPECT_EQ(admin.command_int({"EXISTS", prefix + "orders:1", prefix + "orders:2", "billing:x"}),
            0);  // nothing left behind
  admin.command({"ACL", "DELUSER", "svc"});
}

TEST(acl, fair_locks_need_their_queue_keys_and_list_and_set_commands_and_nothing_more) {
  rlock::test::raw_client admin(rlock::test::shared_server().port());
  const std::string prefix = "acl-fair-" + rlock::test::unique_prefix();
  set_user(admin, "svc-fair",
           least_privilege_rules(prefix) + " " + rlock::test::fair_lock_rules(prefix));
  asio::io_context io;
  rlock::client a(io.get_executor(), as_user("svc-fair", prefix));
  rlock::client b(io.get_executor(), as_user("svc-fair", prefix));
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto holder = a.get_fair_lock("queue:1");
    auto waiter = b.get_fair_lock("queue:1");
    co_await holder.lock();
    bool got = false;
    bool done = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          got = co_await waiter.try_lock(5s);
          done = true;
        },
        asio::detached);
    co_await rlock::test::until_asleep(b, waiter, 1);  // queued and registered
    co_await holder.unlock();                          // handed over by push
    co_await rlock::test::poll_until([&] { return done; });
    EXPECT_TRUE(got) << "waiter: " << waiter.last_error() << "; holder: " << holder.last_error();
    EXPECT_EQ(waiter.last_wake(), rlock::wake_reason::handoff);
    co_await waiter.unlock();
    // One that gives up leaves the queue (lrange, zincrby, zrem, lrem).
    co_await holder.lock();
    EXPECT_FALSE(co_await waiter.try_lock(50ms));
    EXPECT_TRUE(co_await holder.force_unlock());
    // A spin lock needs nothing the reentrant lock does not.
    auto spin = a.get_spin_lock("spin:1");
    co_await spin.lock();
    co_await spin.unlock();
    co_await a.close();
    co_await b.close();
  });
  admin.command({"ACL", "DELUSER", "svc-fair"});
}

TEST(acl, read_write_locks_and_multi_locks_need_their_hold_keys_channel_and_hash_commands) {
  rlock::test::raw_client admin(rlock::test::shared_server().port());
  const std::string prefix = "acl-rw-" + rlock::test::unique_prefix();
  set_user(admin, "svc-rw",
           least_privilege_rules(prefix) + " " + rlock::test::read_write_lock_rules(prefix));
  asio::io_context io;
  rlock::client a(io.get_executor(), as_user("svc-rw", prefix));
  rlock::client b(io.get_executor(), as_user("svc-rw", prefix));
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto writer = a.get_read_write_lock("doc:1");
    auto reader = b.get_read_write_lock("doc:1");
    co_await writer.write_lock().lock();
    co_await writer.read_lock().lock();  // a downgrade: the write unlock reads the hold keys
    bool got = false;
    bool done = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          got = co_await reader.write_lock().try_lock(5s);
          done = true;
        },
        asio::detached);
    co_await rlock::test::poll_until([&] { return b.stats().acquire_attempts >= 2; });
    co_await writer.write_lock().unlock();
    co_await writer.read_lock().unlock();  // the last read hold: wakes the waiting writer
    co_await rlock::test::poll_until([&] { return done; });
    EXPECT_TRUE(got) << "reader: " << reader.write_lock().last_error()
                     << "; writer: " << writer.read_lock().last_error();
    co_await reader.write_lock().unlock();
    // Readers share; a forced unlock of the read half.
    co_await writer.read_lock().lock();
    co_await reader.read_lock().lock();
    EXPECT_TRUE(co_await reader.read_lock().force_unlock());
    // A multi-lock needs nothing its members do not.
    rlock::multi_lock both({a.get_lock("m:1"), a.get_read_write_lock("m:2").write_lock()});
    co_await both.lock();
    co_await both.unlock();
    co_await a.close();
    co_await b.close();
  });
  admin.command({"ACL", "DELUSER", "svc-rw"});
}

TEST(acl, semaphores_need_their_holds_total_channel_and_counter_commands) {
  rlock::test::raw_client admin(rlock::test::shared_server().port());
  const std::string prefix = "acl-sem-" + rlock::test::unique_prefix();
  set_user(admin, "svc-sem",
           least_privilege_rules(prefix) + " " + rlock::test::semaphore_rules(prefix));
  asio::io_context io;
  rlock::client a(io.get_executor(), as_user("svc-sem", prefix));
  rlock::client b(io.get_executor(), as_user("svc-sem", prefix));
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto sem = a.get_semaphore("pool:1");
    EXPECT_TRUE(co_await sem.try_set_permits(1));
    auto held = co_await sem.acquire(1);
    std::optional<rlock::permit> got;
    bool done = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          got = co_await b.get_semaphore("pool:1").try_acquire(1, 5s);
          done = true;
        },
        asio::detached);
    co_await rlock::test::poll_until([&] { return b.stats().acquire_attempts >= 2; });
    co_await held.unlock();  // wakes the waiter on redisson_sc:{...}
    co_await rlock::test::poll_until([&] { return done; });
    RLOCK_CO_ASSERT(got.has_value());
    co_await got->unlock();
    co_await sem.release(1);
    EXPECT_EQ(co_await sem.add_permits(-1), 1);
    EXPECT_EQ(co_await sem.drain(), 1);
    auto expiring = a.get_permit_expirable_semaphore("pool:2");
    EXPECT_TRUE(co_await expiring.try_set_permits(1));
    auto p = co_await expiring.acquire(5s);
    EXPECT_TRUE(co_await expiring.release(p.id()));
    co_await a.close();
    co_await b.close();
  });
  admin.command({"ACL", "DELUSER", "svc-sem"});
}

TEST(acl, clocked_fenced_tokens_need_time_and_nothing_else) {
  rlock::test::raw_client admin(rlock::test::shared_server().port());
  const std::string prefix = "acl-fenced-" + rlock::test::unique_prefix();
  set_user(admin, "svc-fenced-notime", least_privilege_rules(prefix));
  set_user(admin, "svc-fenced", least_privilege_rules(prefix) + " +time");
  asio::io_context io;
  auto notime_cfg = as_user("svc-fenced-notime", prefix);
  notime_cfg.fenced_lock.token_idle_ttl = std::chrono::hours(1);
  auto cfg = as_user("svc-fenced", prefix);
  cfg.fenced_lock.token_idle_ttl = std::chrono::hours(1);
  rlock::client notime(io.get_executor(), notime_cfg);
  rlock::client a(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await notime.connect();
    co_await a.connect();
    // Without +time the clocked acquire is refused in Redis's words, and nothing is held.
    auto refused = notime.get_fenced_lock("orders:1");
    try {
      (void)co_await refused.lock(5s);
      ADD_FAILURE() << "a clocked token without +time";
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), rlock::errc::command_not_permitted) << e.what();
    }
    EXPECT_FALSE(co_await refused.is_locked());
    auto fenced = a.get_fenced_lock("orders:1");
    const auto token = co_await fenced.lock(5s);
    EXPECT_EQ(co_await fenced.current_token(), token);
    co_await fenced.unlock();
    co_await notime.close();
    co_await a.close();
  });
  admin.command({"ACL", "DELUSER", "svc-fenced-notime"});
  admin.command({"ACL", "DELUSER", "svc-fenced"});
}

/// Three servers of its own, each with a user who has the line and the fenced quorum lock's
/// counter (`svc-q`) and one who has the line alone (`svc-q-plain`).
TEST(acl, quorum_locks_refused_by_a_majority_fail_at_once_and_fenced_ones_need_their_counter) {
  const std::string prefix = "acl-quorum-" + rlock::test::unique_prefix();
  std::vector<std::unique_ptr<rlock::test::redis_server>> servers;
  for (int i = 0; i < 3; ++i) {
    servers.push_back(std::make_unique<rlock::test::redis_server>());
    rlock::test::raw_client admin(servers.back()->port());
    set_user(admin, "svc-q",
             least_privilege_rules(prefix) + " " + rlock::test::quorum_token_rules(prefix));
    set_user(admin, "svc-q-plain", least_privilege_rules(prefix));
  }
  asio::io_context io;
  std::vector<std::unique_ptr<rlock::client>> full, plain, outside;
  auto make = [&](std::vector<std::unique_ptr<rlock::client>>& to, const std::string& user,
                  const std::string& key_prefix) {
    std::vector<std::reference_wrapper<rlock::client>> refs;
    for (const auto& s : servers) {
      auto cfg = as_user(user, key_prefix);
      cfg.port = s->port();
      to.push_back(std::make_unique<rlock::client>(io.get_executor(), cfg));
      refs.emplace_back(*to.back());
    }
    return refs;
  };
  const auto full_nodes = make(full, "svc-q", prefix);
  const auto plain_nodes = make(plain, "svc-q-plain", prefix);
  const auto outside_nodes = make(outside, "svc-q", "elsewhere:");  // keys outside its patterns
  rlock::quorum_options fenced;
  fenced.fenced = true;
  // Given back, not left to expire: gone well within the 900 ms lease.
  auto nothing_left = [&](const std::string& name) -> asio::awaitable<void> {
    const bool gone = co_await rlock::test::poll_until(
        [&] {
          for (const auto& s : servers) {
            rlock::test::raw_client raw(s->port());
            if (raw.command_int({"EXISTS", prefix + name}) != 0) return false;
          }
          return true;
        },
        400ms);
    EXPECT_TRUE(gone) << name;
  };
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    for (auto* group : {&full, &plain, &outside}) {
      for (auto& c : *group) co_await c->connect();
    }
    // Unfenced, the line is all it needs.
    rlock::quorum_lock unfenced(plain_nodes, "orders:1");
    co_await unfenced.lock();
    co_await unfenced.unlock();
    // Fenced without the counter's key: lock() fails at once in Redis's words (no retry makes a
    // majority), and the hold it took went back.
    rlock::quorum_lock no_counter(plain_nodes, "orders:2", fenced);
    try {
      co_await no_counter.lock();
      ADD_FAILURE() << "a fenced quorum lock without its counter's rights";
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), rlock::errc::key_not_permitted) << e.what();
      EXPECT_NE(std::string(e.what()).find("rlock_quorum_token:"), std::string::npos) << e.what();
    }
    co_await nothing_left("orders:2");
    // With it, the token is raised on every node.
    rlock::quorum_lock with_counter(full_nodes, "orders:2", fenced);
    co_await with_counter.lock();
    EXPECT_GT(with_counter.token(), 0);
    co_await with_counter.unlock();
    co_await nothing_left("orders:2");
    // A name outside the user's keys: refused on every node, so lock() fails at once too.
    rlock::quorum_lock refused(outside_nodes, "orders:3");
    try {
      co_await refused.lock();
      ADD_FAILURE() << "a quorum lock on keys outside the user's patterns";
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), rlock::errc::key_not_permitted) << e.what();
      EXPECT_NE(std::string(e.what()).find("NOPERM"), std::string::npos) << e.what();
    }
    for (auto* group : {&full, &plain, &outside}) {
      for (auto& c : *group) co_await c->close();
    }
  });
}

TEST(acl, each_missing_right_has_its_own_error) {
  rlock::test::raw_client admin(rlock::test::shared_server().port());
  const std::string prefix = "acl2-" + rlock::test::unique_prefix();
  const std::string full = least_privilege_rules(prefix);

  // A wrong password.
  set_user(admin, "svc-pw", full);
  auto wrong = as_user("svc-pw", prefix);
  wrong.password = "not-it";
  const auto [pw_ec, pw_words] = connect_as(wrong);
  EXPECT_EQ(pw_ec, rlock::errc::auth_failed) << pw_words;
  EXPECT_NE(pw_words.find("WRONGPASS"), std::string::npos) << pw_words;

  // No right to load scripts: the handshake says so.
  set_user(admin, "svc-noload", full + " -script|load");
  const auto [load_ec, load_words] = connect_as(as_user("svc-noload", prefix));
  EXPECT_EQ(load_ec, rlock::errc::command_not_permitted) << load_words;
  EXPECT_NE(load_words.find("NOPERM"), std::string::npos) << load_words;

  // No right to run them: the first lock says so.
  set_user(admin, "svc-noeval", full + " -evalsha");
  asio::io_context io;
  rlock::client noeval(io.get_executor(), as_user("svc-noeval", prefix));
  rlock::client nochannel_client(io.get_executor(), [&] {
    set_user(admin, "svc-nochan", full + " resetchannels");
    return as_user("svc-nochan", prefix);
  }());
  rlock::client holder(io.get_executor(), as_user("svc-pw", prefix));
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await noeval.connect();
    auto l = noeval.get_lock("x");
    try {
      co_await l.lock();
      ADD_FAILURE() << "locked without evalsha";
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), rlock::errc::command_not_permitted) << e.what();
      EXPECT_NE(std::string(e.what()).find("evalsha"), std::string::npos) << e.what();
    }
    // No right on the unlock channel: a waiter cannot wait (the previous issue's error).
    co_await holder.connect();
    co_await nochannel_client.connect();
    auto held = holder.get_lock("busy");
    co_await held.lock(5s);
    auto waiter = nochannel_client.get_lock("busy");
    EXPECT_EQ(co_await error_of(waiter.try_lock(2s)), rlock::errc::permission_denied);
    co_await held.unlock();
    co_await noeval.close();
    co_await nochannel_client.close();
    co_await holder.close();
  });
  for (const char* u : {"svc-pw", "svc-noload", "svc-noeval", "svc-nochan"}) {
    admin.command({"ACL", "DELUSER", u});
  }
}

}  // namespace acl_test
