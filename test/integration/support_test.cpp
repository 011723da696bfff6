// Tests of the test support itself: the redis-server fixture, the raw client and `run`.

#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <signal.h>
#include <stdexcept>
#include <string>

namespace rlock::test {
namespace support_test {

namespace asio = boost::asio;
namespace resp3 = detail::resp3;
using namespace std::chrono_literals;

TEST(RedisServer, SharedServerIsStartedOnceAndAnswers) {
  redis_server& server = shared_server();
  EXPECT_EQ(&server, &shared_server());
  EXPECT_EQ(server.host(), "127.0.0.1");
  EXPECT_NE(server.port(), 0);

  raw_client client(server.port());
  const resp3::value pong = client.command({"PING"});
  EXPECT_EQ(pong.type, resp3::type::simple_string);
  EXPECT_EQ(pong.str, "PONG");
}

TEST(RedisServer, TwoServersGetDifferentPortsAndStopCleanly) {
  pid_t first_pid = -1;
  std::string first_log;
  {
    redis_server a;
    redis_server b;
    EXPECT_NE(a.port(), b.port());
    EXPECT_NE(a.pid(), b.pid());

    // Each is a separate server: a key set on one is absent on the other.
    raw_client on_a(a.port());
    raw_client on_b(b.port());
    const std::string key = unique_prefix() + "k";
    EXPECT_EQ(on_a.command({"SET", key, "a"}).str, "OK");
    EXPECT_TRUE(on_b.command({"GET", key}).is_null());

    first_pid = a.pid();
    first_log = a.log_path();
    EXPECT_TRUE(std::filesystem::exists(first_log));
  }
  // The destructor reaped the process and removed its directory.
  EXPECT_EQ(::kill(first_pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(first_log).parent_path()));
}

TEST(RawClient, SetGetDel) {
  raw_client client(shared_server().port());
  const std::string key = unique_prefix() + "key";

  const resp3::value ok = client.command({"SET", key, "value"});
  EXPECT_EQ(ok.type, resp3::type::simple_string);
  EXPECT_EQ(ok.str, "OK");

  const resp3::value got = client.command({"GET", key});
  EXPECT_EQ(got.type, resp3::type::blob_string);
  EXPECT_EQ(got.str, "value");

  EXPECT_EQ(client.command_int({"DEL", key}), 1);
  EXPECT_TRUE(client.command({"GET", key}).is_null());
  EXPECT_THROW(client.command_int({"GET", key}), std::runtime_error);
}

TEST(RawClient, ErrorReplyIsReturnedNotThrown) {
  raw_client client(shared_server().port());
  const resp3::value err = client.command({"NO-SUCH-COMMAND"});
  EXPECT_TRUE(err.is_error()) << describe(err);
  EXPECT_NE(err.str.find("ERR"), std::string::npos) << err.str;
  EXPECT_THROW(client.command_int({"NO-SUCH-COMMAND"}), std::runtime_error);
  // The connection is still usable afterwards.
  EXPECT_EQ(client.command({"PING"}).str, "PONG");
}

TEST(RawClient, SubscribePublishAndReadPush) {
  const std::string channel = unique_prefix() + "channel";
  raw_client subscriber(shared_server().port());
  raw_client publisher(shared_server().port());

  subscriber.send({"SUBSCRIBE", channel});
  const resp3::value confirm = subscriber.read_push(5s);
  ASSERT_EQ(confirm.type, resp3::type::push) << describe(confirm);
  ASSERT_EQ(confirm.elements.size(), 3u) << describe(confirm);
  EXPECT_EQ(confirm.elements[0].str, "subscribe");
  EXPECT_EQ(confirm.elements[1].str, channel);
  EXPECT_EQ(confirm.elements[2].integer, 1);

  EXPECT_EQ(publisher.command_int({"PUBLISH", channel, "hello"}), 1);
  const resp3::value message = subscriber.read_push(5s);
  ASSERT_EQ(message.elements.size(), 3u) << describe(message);
  EXPECT_EQ(message.elements[0].str, "message");
  EXPECT_EQ(message.elements[1].str, channel);
  EXPECT_EQ(message.elements[2].str, "hello");

  // A push that arrives before a command's reply is queued, not returned as the reply: the
  // server queues the message on the subscriber before it reads the PING sent after PUBLISH.
  EXPECT_EQ(publisher.command_int({"PUBLISH", channel, "queued"}), 1);
  EXPECT_EQ(subscriber.command({"PING"}).str, "PONG");
  const resp3::value queued = subscriber.read_push(0ms);
  ASSERT_EQ(queued.elements.size(), 3u) << describe(queued);
  EXPECT_EQ(queued.elements[2].str, "queued");
}

TEST(RawClient, ReadPushTimesOut) {
  raw_client client(shared_server().port());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(client.read_push(100ms), std::runtime_error);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 90ms);
  EXPECT_LT(waited, 5s);
  // The client is still usable after a timeout with no partial reply.
  EXPECT_EQ(client.command({"PING"}).str, "PONG");
}

TEST(UniquePrefix, NamesTheTestAndDiffersPerCall) {
  const std::string a = unique_prefix();
  const std::string b = unique_prefix();
  EXPECT_EQ(a.rfind("UniquePrefix.NamesTheTestAndDiffersPerCall:", 0), 0u) << a;
  EXPECT_EQ(a.back(), ':');
  EXPECT_NE(a, b);
}

TEST(Run, RunsToCompletionAndReturnsWithBackgroundWorkPending) {
  asio::io_context ioc;
  // Work that outlives the coroutine, like a client's reader: run must not wait for it.
  asio::steady_timer background(ioc, std::chrono::hours(1));
  background.async_wait([](boost::system::error_code) {});

  bool finished = false;
  run(ioc, [&]() -> asio::awaitable<void> {
    asio::steady_timer t(co_await asio::this_coro::executor, 10ms);
    co_await t.async_wait(asio::use_awaitable);
    finished = true;
  });
  EXPECT_TRUE(finished);

  // The io_context is reusable, and a value-returning awaitable is accepted.
  int value = 0;
  run(ioc, [&]() -> asio::awaitable<int> {
    value = 42;
    co_return value;
  });
  EXPECT_EQ(value, 42);
}

TEST(Run, RethrowsTheCoroutinesException) {
  asio::io_context ioc;
  EXPECT_THROW(run(ioc,
                   []() -> asio::awaitable<void> {
                     throw std::logic_error("from the coroutine");
                     co_return;
                   }),
               std::logic_error);
}

TEST(Run, FailsTheTestOnTimeout) {
  asio::io_context ioc;
  const auto start = std::chrono::steady_clock::now();
  auto hang = [&] {
    try {
      run(
          ioc,
          []() -> asio::awaitable<void> {
            asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::hours(1));
            co_await t.async_wait(asio::use_awaitable);
          },
          50ms);
    } catch (const run_timeout&) {
    }
  };
  EXPECT_NONFATAL_FAILURE(hang(), "did not finish within 50 ms");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

}  // namespace support_test
}  // namespace rlock::test
