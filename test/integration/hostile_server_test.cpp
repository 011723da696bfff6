// Hostile and broken servers, played by a stand-in server: every one gives connect() a distinct,
// clear error within connect_timeout, never a crash, a hang or a success. docs/guide/faults.md's
// table of hostile inputs lists these cases.
#include "resp3/parser.hpp"
#include "rlock/rlock.hpp"
#include "script/scripts.hpp"
#include "support/fake_server.hpp"
#include "support/lock_env.hpp"
#include "support/run.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace hostile_server_test {

namespace asio = boost::asio;
using rlock::test::fake_server;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

/// The outcome of connect() against `port`: its error and text, and how long it took.
struct attempt_result {
  std::error_code ec;
  std::string what;
  clock_type::duration took{};
};

attempt_result connect_to(std::string host, std::uint16_t port,
                          std::chrono::milliseconds connect_timeout = 1000ms,
                          std::string password = {}) {
  asio::io_context io;
  rlock::config cfg;
  cfg.host = std::move(host);
  cfg.port = port;
  cfg.password = std::move(password);
  cfg.connect_timeout = connect_timeout;
  rlock::client redis(io.get_executor(), cfg);
  attempt_result r;
  rlock::test::run(
      io,
      [&]() -> asio::awaitable<void> {
        const auto start = clock_type::now();
        try {
          co_await redis.connect();
        } catch (const boost::system::system_error& e) {
          r.ec = e.code();
          r.what = e.what();
        }
        r.took = clock_type::now() - start;
        co_await redis.close();
      },
      10s);
  return r;
}

/// A stand-in that reads the client's HELLO and answers it with `answer`, then waits.
fake_server answering(std::string answer) {
  return fake_server([answer](fake_server::socket& s, fake_server& self) {
    if (fake_server::read_some(s).empty()) return;
    fake_server::write(s, answer);
    self.until_stopped();
  });
}

TEST(hostile_server, silent_server_times_out_within_connect_timeout) {
  fake_server silent([](fake_server::socket&, fake_server& self) { self.until_stopped(); });
  const auto r = connect_to("127.0.0.1", silent.port(), 300ms);
  EXPECT_EQ(r.ec, rlock::errc::timeout) << r.what;
  EXPECT_GE(r.took, 250ms);
  EXPECT_LT(r.took, 3s);
  EXPECT_NE(r.what.find("connect_timeout"), std::string::npos) << r.what;
}

TEST(hostile_server, garbage_is_a_protocol_error) {
  auto garbage = answering("HTTP/1.1 400 Bad Request\r\n\r\n");
  const auto r = connect_to("127.0.0.1", garbage.port());
  EXPECT_EQ(r.ec, rlock::errc::protocol_error) << r.what;
  EXPECT_LT(r.took, 900ms);  // at once, not at the deadline
}

TEST(hostile_server, a_half_gigabyte_bulk_header_is_rejected_before_its_body) {
  // Only the header is sent: an error now proves nothing was waited for, let alone buffered.
  auto huge = answering("$536870912\r\n");
  const auto r = connect_to("127.0.0.1", huge.port(), 5000ms);
  EXPECT_EQ(r.ec, rlock::errc::protocol_error) << r.what;
  EXPECT_LT(r.took, 2s);
}

/// A stand-in that answers every command the client sends, in order, with `answer(command)`
/// (nothing: no answer), as a real server does with a pipelined handshake; an answer "CLOSE"
/// closes the connection instead.
fake_server answering_each(std::function<std::string(const std::vector<std::string>&)> answer) {
  return fake_server([answer](fake_server::socket& s, fake_server& self) {
    rlock::detail::resp3::parser commands;
    for (int reads = 0; reads < 1000; ++reads) {
      auto more = fake_server::read_some(s);
      if (more.empty()) return;
      commands.feed(more);
      std::error_code ec;
      std::string out;
      while (auto c = commands.next(ec)) {
        std::vector<std::string> words;
        for (const auto& e : c->elements) words.push_back(e.str);
        auto reply = answer(words);
        if (reply == "CLOSE") {
          if (!out.empty()) fake_server::write(s, out);
          return;
        }
        out += reply;
      }
      if (ec) return;
      if (!out.empty()) fake_server::write(s, out);
    }
    self.until_stopped();
  });
}

/// How Redis 5 answers: no HELLO, every other command in RESP2 (a SHA for SCRIPT LOAD).
std::string redis5(const std::vector<std::string>& c) {
  if (!c.empty() && c[0] == "HELLO") {
    return "-ERR unknown command `HELLO`, with args beginning with: `3`, \r\n";
  }
  if (c.size() >= 2 && c[0] == "SCRIPT") return "$40\r\n" + std::string(40, 'a') + "\r\n";
  return "+OK\r\n";
}

TEST(hostile_server, redis_5_answering_the_whole_handshake_needs_redis_6_at_once) {
  // Redis 5 (or a proxy that does not pass HELLO on) refuses HELLO and answers every command
  // pipelined after it: the refusal must be the error, not the answers after it.
  auto old = answering_each(redis5);
  const auto r = connect_to("127.0.0.1", old.port(), 3000ms);
  EXPECT_EQ(r.ec, rlock::errc::unsupported_server) << r.what;
  EXPECT_NE(r.what.find("Redis 6"), std::string::npos) << r.what;
  EXPECT_NE(r.what.find("RESP3"), std::string::npos) << r.what;
  EXPECT_NE(r.what.find("unknown command `HELLO`"), std::string::npos) << r.what;  // its text
  EXPECT_LT(r.took, 2s);  // at once, not at the connect deadline
}

TEST(hostile_server, a_server_echoing_hellos_arguments_never_shows_the_password) {
  // Redis 5 (and 7 with HELLO renamed away) echoes the arguments of a command it does not know,
  // AUTH's password among them.
  auto old = answering_each([](const std::vector<std::string>& c) -> std::string {
    if (!c.empty() && c[0] == "HELLO") {
      std::string args;
      for (std::size_t i = 1; i < c.size(); ++i) args += "`" + c[i] + "`, ";
      return "-ERR unknown command `HELLO`, with args beginning with: " + args + "\r\n";
    }
    return redis5(c);
  });
  const auto r = connect_to("127.0.0.1", old.port(), 3000ms, "s3cret-pass");
  EXPECT_EQ(r.ec, rlock::errc::unsupported_server) << r.what;
  EXPECT_EQ(r.what.find("s3cret-pass"), std::string::npos) << r.what;
  EXPECT_NE(r.what.find("`AUTH`, `default`, `***`"), std::string::npos) << r.what;
}

TEST(hostile_server, hello_refused_by_acl_names_the_right_not_the_protocol) {
  auto acl = answering_each([](const std::vector<std::string>& c) -> std::string {
    if (!c.empty() && c[0] == "HELLO") {
      return "-NOPERM User rlock has no permissions to run the 'hello' command\r\n";
    }
    return redis5(c);
  });
  const auto r = connect_to("127.0.0.1", acl.port(), 3000ms);
  EXPECT_EQ(r.ec, rlock::errc::command_not_permitted) << r.what;
  EXPECT_NE(r.what.find("'hello'"), std::string::npos) << r.what;
  EXPECT_EQ(r.what.find("no request was waiting"), std::string::npos) << r.what;
  EXPECT_LT(r.took, 2s);
}

TEST(hostile_server, hello_answered_in_resp2_with_the_rest_is_unsupported_at_once) {
  // A server (or proxy) that takes HELLO but answers in RESP2: a flat array, not a map.
  auto resp2 = answering_each([](const std::vector<std::string>& c) -> std::string {
    if (!c.empty() && c[0] == "HELLO") {
      return "*4\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:2\r\n";
    }
    return redis5(c);
  });
  const auto r = connect_to("127.0.0.1", resp2.port(), 3000ms);
  EXPECT_EQ(r.ec, rlock::errc::unsupported_server) << r.what;
  EXPECT_NE(r.what.find("RESP3"), std::string::npos) << r.what;
  EXPECT_LT(r.took, 2s);
}

TEST(hostile_server, a_proxy_that_closes_after_hello_is_a_closed_handshake) {
  // Closed without an answer, and closed after answering HELLO alone: both say the server
  // closed during the handshake, at once.
  auto mute =
      answering_each([](const std::vector<std::string>&) -> std::string { return "CLOSE"; });
  const auto r = connect_to("127.0.0.1", mute.port(), 3000ms);
  EXPECT_EQ(r.ec, rlock::errc::handshake_closed) << r.what;
  EXPECT_NE(r.what.find("HELLO"), std::string::npos) << r.what;
  EXPECT_LT(r.took, 2s);

  auto half = answering_each([](const std::vector<std::string>& c) -> std::string {
    if (!c.empty() && c[0] == "HELLO") return "%1\r\n$6\r\nserver\r\n$5\r\nproxy\r\n";
    return "CLOSE";
  });
  const auto h = connect_to("127.0.0.1", half.port(), 3000ms);
  EXPECT_EQ(h.ec, rlock::errc::handshake_closed) << h.what;
  EXPECT_NE(h.what.find("answered HELLO, then closed"), std::string::npos) << h.what;
  EXPECT_LT(h.took, 2s);
}

TEST(hostile_server, a_server_without_resp3_needs_redis_6) {
  auto old = answering("-ERR unknown command 'HELLO'\r\n");
  const auto r = connect_to("127.0.0.1", old.port());
  EXPECT_EQ(r.ec, rlock::errc::unsupported_server) << r.what;
  EXPECT_NE(r.what.find("Redis 6"), std::string::npos) << r.what;
  EXPECT_NE(r.what.find("unknown command"), std::string::npos) << r.what;
}

TEST(hostile_server, a_resp2_answer_to_hello_is_unsupported) {
  auto resp2 = answering("*2\r\n$6\r\nserver\r\n$5\r\nredis\r\n");
  const auto r = connect_to("127.0.0.1", resp2.port());
  EXPECT_EQ(r.ec, rlock::errc::unsupported_server) << r.what;
}

TEST(hostile_server, wrong_password_is_auth_failed) {
  auto strict = answering("-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  const auto r = connect_to("127.0.0.1", strict.port(), 1000ms, "nope");
  EXPECT_EQ(r.ec, rlock::errc::auth_failed) << r.what;
  EXPECT_NE(r.what.find("WRONGPASS"), std::string::npos) << r.what;
}

TEST(hostile_server, closed_port_is_connect_failed) {
  std::uint16_t port = 0;
  {
    // A port that was just free, and nobody listens on now.
    fake_server gone([](fake_server::socket&, fake_server&) {});
    port = gone.port();
  }
  const auto r = connect_to("127.0.0.1", port);
  EXPECT_EQ(r.ec, rlock::errc::connect_failed) << r.what;
  EXPECT_LT(r.took, 900ms);
}

TEST(hostile_server, unresolvable_host_is_resolve_failed) {
  // .invalid never resolves (RFC 6761).
  const auto r = connect_to("rlock-test.invalid", 6379, 5000ms);
  EXPECT_EQ(r.ec, rlock::errc::resolve_failed) << r.what;
  EXPECT_NE(r.what.find("rlock-test.invalid"), std::string::npos) << r.what;
}

TEST(hostile_server, an_answer_nobody_asked_for_drops_the_connection) {
  // A well-formed handshake; then the first command gets its reply and one more.
  fake_server chatty([](fake_server::socket& s, fake_server& self) {
    // The whole handshake first, command by command (it comes in several reads, a script's
    // text split between them): HELLO and a SCRIPT LOAD per script (track_holds is off).
    rlock::detail::resp3::parser commands;
    std::size_t seen = 0;
    while (seen < 1 + rlock::detail::script_count) {
      auto more = fake_server::read_some(s);
      if (more.empty()) return;
      commands.feed(more);
      std::error_code ec;
      while (commands.next(ec)) ++seen;
      if (ec) return;
    }
    std::string handshake = "%1\r\n$6\r\nserver\r\n$5\r\nredis\r\n";
    for (std::size_t i = 0; i < rlock::detail::script_count; ++i) {
      handshake += "$40\r\n0123456789012345678901234567890123456789\r\n";  // one per SCRIPT LOAD
    }
    fake_server::write(s, handshake);
    if (fake_server::read_some(s).empty()) return;
    fake_server::write(s, ":0\r\n+UNASKED\r\n");
    self.until_stopped();
  });
  asio::io_context io;
  rlock::config cfg;
  cfg.port = chatty.port();
  cfg.reconnect.enabled = false;
  std::vector<std::pair<rlock::log_level, std::string>> lines;
  cfg.log = [&](rlock::log_level level, std::string_view line) {
    lines.emplace_back(level, std::string(line));
  };
  rlock::client redis(io.get_executor(), cfg);
  std::vector<rlock::connection_event> events;
  asio::steady_timer bell(io, clock_type::time_point::max());
  redis.on_state_change([&](const rlock::connection_event& e) {
    events.push_back(e);
    bell.cancel();
  });
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    EXPECT_FALSE(co_await redis.get_lock("x").is_locked());
    co_await rlock::test::wait_until(
        bell, [&] { return redis.state() == rlock::connection_state::disconnected; }, 5s);
    co_await redis.close();
  });
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[1].state, rlock::connection_state::disconnected);
  EXPECT_EQ(events[1].reason, rlock::errc::protocol_error);
  // Logged once, as an error.
  const auto errors = std::count_if(lines.begin(), lines.end(), [](const auto& l) {
    return l.first == rlock::log_level::error && l.second.find("disconnected") != std::string::npos;
  });
  EXPECT_EQ(errors, 1) << (lines.empty() ? "no log line" : lines.back().second);
}

}  // namespace hostile_server_test
