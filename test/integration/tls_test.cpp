// TLS against a real redis-server with --tls-port: certificates made at test time with the
// `openssl` command (a throwaway CA, a server and a client certificate, and a second CA that
// signs nothing the client trusts). Each misconfiguration fails fast, within connect_timeout,
// with its own error; a working connection locks, reconnects and resubscribes as over TCP.
#include "rlock/rlock.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"
#include "support/tls_files.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace tls_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

/// A server with TLS beside its plaintext port, signed by `ca`'s server certificate.
std::unique_ptr<rlock::test::redis_server> tls_server(const std::string& server_cert,
                                                      const std::string& auth_clients) {
  rlock::test::redis_server::options opts;
  opts.with_tls(rlock::test::tls_files::shared(), server_cert, auth_clients);
  return std::make_unique<rlock::test::redis_server>(opts);
}

rlock::test::redis_server& plain_tls_server() {
  static auto s = tls_server("server", "no");
  return *s;
}

rlock::config tls_config(std::uint16_t port) {
  auto cfg = rlock::test::make_config();
  cfg.port = port;
  cfg.tls.enabled = true;
  cfg.tls.ca_file = rlock::test::tls_files::shared().path("ca.crt");
  cfg.connect_timeout = 2s;
  return cfg;
}

/// connect() with `cfg`: its error (none on success) and how long it took.
struct attempt {
  std::error_code ec;
  std::string words;
  clock_type::duration took{};
};
attempt connect_with(const rlock::config& cfg) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), cfg);
  attempt out;
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    const auto start = clock_type::now();
    try {
      co_await redis.connect();
    } catch (const boost::system::system_error& e) {
      out.ec = e.code();
      out.words = e.what();
    }
    out.took = clock_type::now() - start;
    co_await redis.close();
  });
  return out;
}

TEST(tls, locks_over_tls_and_a_rediss_url_turns_it_on) {
  auto& server = plain_tls_server();
  asio::io_context io;
  auto cfg = rlock::config::from_url("rediss://127.0.0.1:" + std::to_string(server.tls_port()));
  EXPECT_TRUE(cfg.tls.enabled);
  cfg.tls.ca_file = rlock::test::tls_files::shared().path("ca.crt");
  cfg.key_prefix = rlock::test::unique_prefix();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto a = redis.get_lock("over-tls");
    auto b = redis.get_lock("over-tls");
    co_await a.lock();
    EXPECT_FALSE(co_await b.try_lock());
    co_await a.unlock();
    EXPECT_TRUE(co_await b.try_lock(1s));
    co_await b.unlock();
    co_await redis.close();
  });
  // A host name checked against the certificate's DNS name works as well as the IP.
  auto by_name = tls_config(server.tls_port());
  by_name.host = "localhost";
  EXPECT_FALSE(connect_with(by_name).ec);
}

/// Writes per lock+unlock pair when `concurrency` tasks lock and unlock their own keys
/// `rounds` times each on one connection (`cfg`): what batching saves, counted, not timed.
double writes_per_pair(const rlock::config& cfg, int concurrency, int rounds) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), cfg);
  double per_pair = 0;
  rlock::test::run(
      io,
      [&]() -> asio::awaitable<void> {
        co_await redis.connect();
        int done = 0;
        asio::steady_timer bell(io, clock_type::time_point::max());
        const auto before = redis.stats().writes;
        for (int t = 0; t < concurrency; ++t) {
          asio::co_spawn(
              io,
              [&, t]() -> asio::awaitable<void> {
                auto lock = redis.get_lock("batch-" + std::to_string(t));
                for (int i = 0; i < rounds; ++i) {
                  co_await lock.lock();
                  co_await lock.unlock();
                }
                if (++done == concurrency) bell.cancel();
              },
              asio::detached);
        }
        co_await rlock::test::wait_until(
            bell, [&] { return done == concurrency; }, 60s);
        EXPECT_EQ(done, concurrency);
        per_pair = static_cast<double>(redis.stats().writes - before) / (concurrency * rounds);
        co_await redis.close();
      },
      90s);
  return per_pair;
}

TEST(tls, requests_made_together_share_a_write_over_tls_as_over_tcp) {
  // Over TLS each write is a record, and Redis answers one record per event-loop turn: a
  // request written on its own splits every later batch (S2 over TLS once fell to a quarter of
  // plaintext that way, about 2 requests a write). 128 tasks: each batch of answers makes the
  // next batch of requests, which must go out together. A timing-free guard: writes per pair.
  auto& server = plain_tls_server();
  auto plain = rlock::test::make_config();
  plain.port = server.port();
  const double tcp = writes_per_pair(plain, 128, 20);
  const double tls = writes_per_pair(tls_config(server.tls_port()), 128, 20);
  RecordProperty("writes_per_pair_tcp", std::to_string(tcp));
  RecordProperty("writes_per_pair_tls", std::to_string(tls));
  EXPECT_GT(tcp, 0.0);
  EXPECT_LE(tcp, 0.25) << "plaintext: fewer than 4 pairs a write";
  EXPECT_LE(tls, 0.25) << "TLS: fewer than 4 pairs a write (tcp: " << tcp << ")";
}

TEST(tls, a_server_certificate_from_another_ca_is_untrusted) {
  auto server = tls_server("rogue-server", "no");
  const auto r = connect_with(tls_config(server->tls_port()));
  EXPECT_EQ(r.ec, rlock::errc::tls_certificate_untrusted) << r.words;
  EXPECT_NE(r.words.find("certificate"), std::string::npos) << r.words;
  EXPECT_LT(r.took, 2s);
  // Verification off accepts it (explicitly, and logged).
  auto cfg = tls_config(server->tls_port());
  cfg.tls.verify_peer = false;
  std::vector<std::string> lines;
  cfg.log = [&](rlock::log_level, std::string_view line) { lines.emplace_back(line); };
  EXPECT_FALSE(connect_with(cfg).ec);
  bool warned = false;
  for (const auto& l : lines) warned = warned || l.find("verification is OFF") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(tls, a_wrong_host_name_is_refused) {
  auto cfg = tls_config(plain_tls_server().tls_port());
  cfg.tls.server_name = "cache.example.org";
  const auto r = connect_with(cfg);
  EXPECT_EQ(r.ec, rlock::errc::tls_hostname_mismatch) << r.words;
  EXPECT_NE(r.words.find("cache.example.org"), std::string::npos) << r.words;
  EXPECT_LT(r.took, 2s);
}

TEST(tls, mutual_tls_needs_the_client_certificate) {
  auto server = tls_server("server", "yes");
  auto cfg = tls_config(server->tls_port());
  const auto without = connect_with(cfg);
  EXPECT_EQ(without.ec, rlock::errc::tls_client_rejected) << without.words;
  EXPECT_LT(without.took, 2s);
  cfg.tls.cert_file = rlock::test::tls_files::shared().path("client.crt");
  cfg.tls.key_file = rlock::test::tls_files::shared().path("client.key");
  const auto with = connect_with(cfg);
  EXPECT_FALSE(with.ec) << with.words;
  // A key without its certificate is a setting that cannot be used.
  cfg.tls.cert_file.clear();
  EXPECT_EQ(connect_with(cfg).ec, rlock::errc::tls_handshake_failed);
  cfg.tls.cert_file = rlock::test::tls_files::shared().path("no-such-file.crt");
  const auto missing = connect_with(cfg);
  EXPECT_EQ(missing.ec, rlock::errc::tls_handshake_failed);
  EXPECT_NE(missing.words.find("no-such-file.crt"), std::string::npos) << missing.words;
}

TEST(tls, a_plaintext_client_on_the_tls_port_is_told_so) {
  auto cfg = tls_config(plain_tls_server().tls_port());
  cfg.tls.enabled = false;
  const auto r = connect_with(cfg);
  EXPECT_EQ(r.ec, rlock::errc::handshake_closed) << r.words;
  EXPECT_NE(r.words.find("TLS port?"), std::string::npos) << r.words;
  EXPECT_LT(r.took, 2s);
}

TEST(tls, a_tls_client_on_a_plaintext_port_is_told_so) {
  // Redis reads the ClientHello as the start of an inline command and waits for its end: the
  // attempt ends at connect_timeout, and says why.
  auto cfg = tls_config(plain_tls_server().port());
  cfg.connect_timeout = 500ms;
  const auto r = connect_with(cfg);
  EXPECT_EQ(r.ec, rlock::errc::tls_handshake_failed) << r.words;
  EXPECT_NE(r.words.find("plaintext port?"), std::string::npos) << r.words;
  EXPECT_LT(r.took, 2s);  // a bound against hanging, not a measurement
}

TEST(tls, a_killed_tls_connection_reconnects_and_the_holder_keeps_its_lock) {
  auto& server = plain_tls_server();
  asio::io_context io;
  auto cfg = tls_config(server.tls_port());
  cfg.client_name = "tls-reconnect";
  cfg.reconnect.backoff_initial = 10ms;
  cfg.reconnect.backoff_cap = 100ms;
  cfg.local_handoff.max_streak = 0;  // the unlock must reach the waiter through its channel
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(server.port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto holder = redis.get_lock("kept");
    auto waiter = redis.get_lock("kept");
    co_await holder.lock();
    raw.command({"CLIENT", "KILL", "SKIPME", "yes"});
    co_await rlock::test::poll_until([&] { return redis.stats().reconnects > 0; });
    EXPECT_GE(redis.stats().reconnects, 1u);
    EXPECT_TRUE(co_await holder.is_held());
    // The waiter's channel is subscribed again over the new TLS connection: the unlock wakes it.
    bool got = false;
    bool done = false;
    const auto attempts = redis.stats().acquire_attempts;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          got = co_await waiter.try_lock(5s);
          done = true;
        },
        asio::detached);
    EXPECT_TRUE(co_await rlock::test::until_asleep(redis, waiter, attempts + 2));
    co_await holder.unlock();
    co_await rlock::test::poll_until([&] { return done; });
    EXPECT_TRUE(got);
    EXPECT_EQ(waiter.last_wake(), rlock::wake_reason::notification);
    co_await waiter.unlock();
    co_await redis.close();
  });
}

}  // namespace tls_test
