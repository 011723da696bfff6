// The fault proxy itself, between a raw client and a real redis-server: each fault does what it
// says, and heal() undoes it without losing or reordering a byte.
#include "chaos/fault_proxy.hpp"

#include "support/raw_client.hpp"
#include "support/redis_server.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace fault_proxy_test {

using rlock::test::direction;
using rlock::test::fault_proxy;
using namespace std::chrono_literals;
namespace asio = boost::asio;

rlock::test::redis_server& server() { return rlock::test::shared_server(); }

TEST(fault_proxy, forwards_both_ways) {
  fault_proxy proxy(server().port());
  rlock::test::raw_client c(proxy.port());
  EXPECT_EQ(c.command({"PING"}).str, "PONG");
  EXPECT_EQ(c.command({"ECHO", std::string(100'000, 'x')}).str.size(), 100'000u);
  EXPECT_EQ(proxy.accepted(), 1u);
  EXPECT_EQ(proxy.open_connections(), 1u);
  // Counted when the proxy's write completes, which may be after the client read the bytes.
  for (int i = 0; i < 2000 && proxy.delivered(direction::to_client) <= 100'000u; ++i) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_GT(proxy.delivered(direction::to_client), 100'000u);
  EXPECT_GT(proxy.delivered(direction::to_server), 100'000u);
}

TEST(fault_proxy, black_hole_holds_bytes_until_heal) {
  fault_proxy proxy(server().port());
  rlock::test::raw_client c(proxy.port());
  ASSERT_EQ(c.command({"PING"}).str, "PONG");
  proxy.black_hole();
  const auto before = proxy.delivered(direction::to_server);
  const auto read_before = proxy.received(direction::to_server);
  auto reply = std::async(std::launch::async, [&] { return c.command({"ECHO", "late"}).str; });
  EXPECT_EQ(reply.wait_for(300ms), std::future_status::timeout);  // nothing answers
  EXPECT_EQ(proxy.delivered(direction::to_server), before);       // nothing reached the server
  EXPECT_GT(proxy.received(direction::to_server), read_before);   // but the proxy holds it
  proxy.heal();
  EXPECT_EQ(reply.get(), "late");  // held, then delivered: TCP loses nothing
}

TEST(fault_proxy, dropping_one_direction_stalls_only_it) {
  fault_proxy proxy(server().port());
  rlock::test::raw_client c(proxy.port());
  rlock::test::raw_client observer(server().port());
  proxy.drop(direction::to_client);
  auto reply = std::async(std::launch::async, [&] { return c.command({"SET", "fp:k", "v"}).str; });
  EXPECT_EQ(reply.wait_for(300ms), std::future_status::timeout);
  // The command went through: only the answer is held.
  EXPECT_EQ(observer.command({"GET", "fp:k"}).str, "v");
  proxy.heal();
  EXPECT_EQ(reply.get(), "OK");
  observer.command({"DEL", "fp:k"});
}

TEST(fault_proxy, delay_applies_per_direction) {
  fault_proxy proxy(server().port());
  rlock::test::raw_client c(proxy.port());
  proxy.set_delay(direction::to_client, 200ms);
  auto reply = std::async(std::launch::async, [&] { return c.command({"PING"}).str; });
  EXPECT_EQ(reply.wait_for(50ms), std::future_status::timeout);
  EXPECT_EQ(reply.get(), "PONG");
}

TEST(fault_proxy, cut_all_closes_every_connection) {
  fault_proxy proxy(server().port());
  rlock::test::raw_client a(proxy.port());
  rlock::test::raw_client b(proxy.port());
  ASSERT_EQ(proxy.open_connections(), 2u);
  proxy.cut_all();
  EXPECT_EQ(proxy.open_connections(), 0u);
  EXPECT_THROW(a.command({"PING"}), std::exception);
  rlock::test::raw_client c(proxy.port());  // new connections still work
  EXPECT_EQ(c.command({"PING"}).str, "PONG");
}

TEST(fault_proxy, refuse_makes_connect_fail_until_heal) {
  fault_proxy proxy(server().port());
  rlock::test::raw_client open(proxy.port());
  proxy.refuse();
  EXPECT_THROW(rlock::test::raw_client(proxy.port()), std::exception);
  EXPECT_EQ(open.command({"PING"}).str, "PONG");  // connections already open are untouched
  EXPECT_EQ(proxy.accepted(), 1u);
  proxy.heal();
  rlock::test::raw_client c(proxy.port());
  EXPECT_EQ(c.command({"PING"}).str, "PONG");
}

TEST(fault_proxy, split_replies_arrive_one_byte_per_read) {
  fault_proxy proxy(server().port());
  proxy.split_replies(true);
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address("127.0.0.1"), proxy.port()});
  const std::string cmd = "*2\r\n$4\r\nECHO\r\n$10\r\n0123456789\r\n";
  asio::write(s, asio::buffer(cmd));
  const std::string expected = "$10\r\n0123456789\r\n";
  std::string got;
  for (int reads = 0; got.size() < expected.size() && reads < 1000; ++reads) {
    char buf[64];
    got.append(buf, s.read_some(asio::buffer(buf)));
  }
  EXPECT_EQ(got, expected);
  // One write per byte; how many reads the client needs is up to the kernel and the scheduler.
  // The proxy counts a write when it completes, which may be after the client read the byte.
  for (int i = 0; i < 2000 && proxy.delivered(direction::to_client) < expected.size(); ++i) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(proxy.writes(direction::to_client), expected.size());
  EXPECT_EQ(proxy.delivered(direction::to_client), expected.size());
}

}  // namespace fault_proxy_test
