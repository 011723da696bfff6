// rlock::count_down_latch (Redisson's RCountDownLatch) against real servers: the count set once,
// counted down, waiters woken by the zero message and not by polling, cancellation leaving
// nothing subscribed, bad input and a key of another type refused with words, a count-down
// whose answer was lost counted once, the blocking facade in std::latch's shape, and Redisson's
// own scripts on the other side (4.x, written out here from its source with the keys, arguments
// and channel it builds), on one server and on a 3-master cluster (where Redisson publishes with
// `spublish`).
#include "chaos/fault_proxy.hpp"
#include "rlock/rlock.hpp"
#include "support/deployment.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <thread>

namespace count_down_latch_test {

namespace asio = boost::asio;
using rlock::test::error_of;
using rlock::test::poll_until;
using rlock::test::wait_until;
using namespace std::chrono_literals;

// RCountDownLatch.trySetCountAsync(count): KEYS = [name, channel], ARGV = [1 (NEW_COUNT_MESSAGE),
// count, publish command]; 1 set, 0 set already.
constexpr std::string_view redisson_try_set_count = R"lua(
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('set', KEYS[1], ARGV[2]);
  redis.call(ARGV[3], KEYS[2], ARGV[1]);
  return 1
else
  return 0
end
)lua";
// RCountDownLatch.countDownAsync(): KEYS = [name, channel], ARGV = [0 (ZERO_COUNT_MESSAGE),
// publish command].
constexpr std::string_view redisson_count_down = R"lua(
local v = redis.call('decr', KEYS[1]);
if v <= 0 then redis.call('del', KEYS[1]) end;
if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end;
)lua";
// RCountDownLatch.deleteAsync(): KEYS = [name, channel], ARGV = [1, publish command].
constexpr std::string_view redisson_delete = R"lua(
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[2], KEYS[2], ARGV[1]);
  return 1
else
  return 0
end
)lua";

/// A Redisson client of one latch, on the connection to the latch's node.
class redisson_latch {
 public:
  redisson_latch(std::uint16_t port, std::string key, std::string publish)
      : raw_(port),
        key_(std::move(key)),
        channel_("redisson_countdownlatch__channel__{" + key_ + "}"),
        publish_(std::move(publish)) {}

  bool try_set_count(int n) {
    return raw_.command_int({"EVAL", redisson_try_set_count, "2", key_, channel_, "1",
                             std::to_string(n), publish_}) == 1;
  }
  void count_down() {
    raw_.command({"EVAL", redisson_count_down, "2", key_, channel_, "0", publish_});
  }
  bool remove() {
    return raw_.command_int({"EVAL", redisson_delete, "2", key_, channel_, "1", publish_}) == 1;
  }
  /// getCount(): GET, nil as 0.
  std::int64_t count() {
    auto v = raw_.command({"GET", key_});
    return v.is_null() ? 0 : std::stoll(v.str);
  }
  /// Whether a waiter (ours) listens on the latch's channel.
  bool listened_to() {
    auto n = raw_.command(
        {"PUBSUB", publish_ == "publish" ? "NUMSUB" : "SHARDNUMSUB", std::string_view(channel_)});
    return n.elements.size() == 2u && n.elements[1].integer >= 1;
  }
  const std::string& channel() const { return channel_; }
  const std::string& publish() const { return publish_; }

 private:
  rlock::test::raw_client raw_;
  std::string key_;
  std::string channel_;
  std::string publish_;
};

using setup = rlock::test::deployment;
using rlock::test::a_cluster;
using rlock::test::one_server;

/// A waiter beside the test: `latch.wait()` on `io`; `done` is set and `bell` rung when it
/// returns. Completes once it is asleep on the channel (its two looks made: the first, and the
/// one once its channel is confirmed; `java` sees it subscribed); whether it is.
asio::awaitable<bool> park_waiter(asio::io_context& io, rlock::client& redis,
                                  rlock::count_down_latch latch, redisson_latch& java, bool& done,
                                  asio::steady_timer& bell) {
  const auto looks = redis.stats().acquire_attempts;
  asio::co_spawn(
      io,
      [latch, &done, &bell]() mutable -> asio::awaitable<void> {
        co_await latch.wait();
        done = true;
        bell.cancel();
      },
      asio::detached);
  co_return co_await poll_until(
      [&] { return redis.stats().acquire_attempts >= looks + 2 && java.listened_to(); });
}

/// The count set once, counted down by both sides, waiters of each side woken by the other's
/// last count-down; Redisson's messages ("1" for a new count, "0" at zero) heard from rlock.
void shared_both_ways(const setup& where) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), where.cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    rlock::count_down_latch latch(redis, "gate");
    const auto key = std::string(latch.key());
    EXPECT_EQ(latch.channel(), "redisson_countdownlatch__channel__{" + key + "}");
    redisson_latch java(where.node_of(key), key, where.publish);
    rlock::test::raw_client subscriber(where.node_of(key));
    subscriber.send({where.publish == "publish" ? "SUBSCRIBE" : "SSUBSCRIBE", java.channel()});
    (void)subscriber.read_push(5s);  // the confirmation

    // rlock sets, Redisson sees it and cannot set it again; the message is Redisson's "1".
    EXPECT_TRUE(co_await latch.try_set_count(2));
    EXPECT_FALSE(java.try_set_count(5));
    EXPECT_EQ(java.count(), 2);
    auto message = subscriber.read_push(5s);
    RLOCK_CO_ASSERT(message.elements.size() == 3u);
    EXPECT_EQ(message.elements[2].str, "1");

    // An rlock waiter, woken by Redisson's last count-down (its "0"), never by polling.
    bool done = false;
    asio::steady_timer bell(io, std::chrono::steady_clock::time_point::max());
    const auto notified = redis.stats().notified_wakeups;
    RLOCK_CO_ASSERT(co_await park_waiter(io, redis, latch, java, done, bell));
    java.count_down();
    EXPECT_EQ(co_await latch.count(), 1);
    EXPECT_FALSE(done);
    java.count_down();
    co_await wait_until(
        bell, [&] { return done; }, 5s);
    EXPECT_TRUE(done);
    EXPECT_GT(redis.stats().notified_wakeups, notified);
    EXPECT_EQ(co_await latch.count(), 0);
    message = subscriber.read_push(5s);
    RLOCK_CO_ASSERT(message.elements.size() == 3u);
    EXPECT_EQ(message.elements[2].str, "0");  // Redisson's own, heard by the subscriber too

    // Redisson sets, rlock counts down; Redisson's waiter would hear rlock's "0".
    EXPECT_TRUE(java.try_set_count(2));
    message = subscriber.read_push(5s);
    EXPECT_EQ(co_await latch.count(), 2);
    co_await latch.count_down();
    EXPECT_EQ(java.count(), 1);
    co_await latch.count_down();
    message = subscriber.read_push(5s);
    RLOCK_CO_ASSERT(message.elements.size() == 3u);
    EXPECT_EQ(message.elements[2].str, "0");  // ZERO_COUNT_MESSAGE
    EXPECT_EQ(java.count(), 0);
    EXPECT_TRUE(co_await latch.try_wait(0ms));

    // Deleted by either side: open, and the other sees it.
    EXPECT_TRUE(java.try_set_count(3));
    EXPECT_TRUE(co_await latch.remove());
    EXPECT_FALSE(java.remove());
    EXPECT_TRUE(co_await latch.try_set_count(3));
    EXPECT_TRUE(java.remove());
    EXPECT_FALSE(co_await latch.remove());
    EXPECT_EQ(co_await latch.count(), 0);
    co_await redis.close();
  });
}

TEST(count_down_latch, counts_down_once_per_call_and_opens_every_waiter) {
  asio::io_context io;
  const auto cfg = rlock::test::make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    rlock::count_down_latch latch(redis, "start");
    const auto key = std::string(latch.key());
    redisson_latch java(cfg.port, key, "publish");
    EXPECT_EQ(co_await latch.count(), 0);
    EXPECT_TRUE(co_await latch.try_wait(0ms));  // no count: open
    EXPECT_TRUE(co_await latch.try_set_count(2));
    EXPECT_FALSE(co_await latch.try_set_count(7));
    EXPECT_EQ(raw.command({"GET", key}).str, "2");
    EXPECT_FALSE(co_await latch.try_wait(0ms));
    EXPECT_FALSE(co_await latch.try_wait(50ms));

    // Two waiters of this client (and their looks): both woken by one message.
    bool first = false;
    bool second = false;
    asio::steady_timer bell(io, std::chrono::steady_clock::time_point::max());
    RLOCK_CO_ASSERT(co_await park_waiter(io, redis, latch, java, first, bell));
    rlock::count_down_latch same(redis, "start");  // another handle of the same latch
    RLOCK_CO_ASSERT(co_await park_waiter(io, redis, same, java, second, bell));
    const auto attempts = redis.stats().acquire_attempts;
    co_await latch.count_down();
    EXPECT_EQ(co_await latch.count(), 1);
    EXPECT_FALSE(first || second);
    co_await latch.count_down();
    co_await wait_until(
        bell, [&] { return first && second; }, 5s);
    EXPECT_TRUE(first && second);
    // One look each after the message: woken, not polling.
    EXPECT_LE(redis.stats().acquire_attempts - attempts, 2u);
    EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);  // gone at zero, as in Redisson
    EXPECT_TRUE(co_await poll_until([&] { return !java.listened_to(); }));  // nobody listens

    // Counting down an open latch changes nothing.
    co_await latch.count_down();
    EXPECT_EQ(co_await latch.count(), 0);
    EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
    co_await redis.close();
  });
}

TEST(count_down_latch, a_cancelled_wait_leaves_nothing_subscribed) {
  asio::io_context io;
  const auto cfg = rlock::test::make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    rlock::count_down_latch latch(redis, "cancel");
    redisson_latch java(cfg.port, std::string(latch.key()), "publish");
    EXPECT_TRUE(co_await latch.try_set_count(1));
    asio::cancellation_signal cancel;
    boost::system::error_code got;
    bool done = false;
    asio::steady_timer bell(io, std::chrono::steady_clock::time_point::max());
    latch.async_wait(asio::bind_cancellation_slot(cancel.slot(), [&](boost::system::error_code ec) {
      got = ec;
      done = true;
      bell.cancel();
    }));
    RLOCK_CO_ASSERT(co_await poll_until([&] { return java.listened_to(); }));
    cancel.emit(asio::cancellation_type::terminal);
    co_await wait_until(
        bell, [&] { return done; }, 5s);
    EXPECT_EQ(got, boost::asio::error::operation_aborted);
    EXPECT_TRUE(co_await poll_until([&] { return !java.listened_to(); }));
    EXPECT_EQ(co_await latch.count(), 1);  // a wait changes nothing
    co_await redis.close();
  });
}

TEST(count_down_latch, bad_input_and_a_key_of_another_kind_are_refused_with_words) {
  asio::io_context io;
  const auto cfg = rlock::test::make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    rlock::count_down_latch latch(redis, "bad");
    const auto key = std::string(latch.key());
    EXPECT_EQ(co_await error_of(latch.try_wait(-1ms)), rlock::errc::invalid_argument);
    EXPECT_EQ(co_await error_of(latch.try_set_count(std::numeric_limits<std::uint64_t>::max())),
              rlock::errc::invalid_argument);
    EXPECT_NE(latch.last_error().find("2^63"), std::string::npos) << latch.last_error();

    raw.command({"SET", key, "many"});  // a string that is no count
    EXPECT_EQ(co_await error_of(latch.wait()), rlock::errc::server_error);
    EXPECT_NE(latch.last_error().find("NOT_A_COUNT"), std::string::npos) << latch.last_error();
    EXPECT_EQ(co_await error_of(latch.count()), rlock::errc::protocol_error);
    EXPECT_NE(latch.last_error().find("must hold an integer"), std::string::npos)
        << latch.last_error();
    EXPECT_EQ(co_await error_of(latch.count_down()), rlock::errc::server_error);
    EXPECT_EQ(raw.command({"GET", key}).str, "many");  // left as it was

    raw.command({"DEL", key});
    raw.command({"HSET", key, "field", "1"});  // a lock's hash, say
    EXPECT_EQ(co_await error_of(latch.try_wait(1s)), rlock::errc::server_error);
    EXPECT_NE(latch.last_error().find("WRONGTYPE"), std::string::npos) << latch.last_error();
    EXPECT_EQ(co_await error_of(latch.count()), rlock::errc::server_error);
    co_await redis.close();
  });
}

/// A count-down whose answer is lost with its connection (the script ran) is written again on
/// the next one and answered from the first run: the count moves once.
TEST(count_down_latch, a_count_down_whose_answer_was_lost_counts_once) {
  asio::io_context io;
  auto cfg = rlock::test::make_config();
  rlock::test::fault_proxy proxy(cfg.port);
  rlock::test::raw_client raw(cfg.port);
  cfg.port = proxy.port();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    rlock::count_down_latch latch(redis, "once");
    const auto key = std::string(latch.key());
    EXPECT_TRUE(co_await latch.try_set_count(3));
    proxy.drop(rlock::test::direction::to_client);
    boost::system::error_code got = rlock::errc::timeout;
    bool done = false;
    asio::steady_timer bell(io, std::chrono::steady_clock::time_point::max());
    latch.async_count_down([&](boost::system::error_code ec) {
      got = ec;
      done = true;
      bell.cancel();
    });
    // It ran on the server; its answer is held, then lost with the connection.
    RLOCK_CO_ASSERT(co_await poll_until([&] { return raw.command({"GET", key}).str == "2"; }));
    proxy.cut_all();
    proxy.heal();
    co_await wait_until(
        bell, [&] { return done; }, 10s);
    EXPECT_TRUE(done);
    EXPECT_FALSE(got) << got.message() << ": " << latch.last_error();
    EXPECT_EQ(raw.command({"GET", key}).str, "2");  // counted once
    EXPECT_EQ(co_await latch.count(), 2);
    co_await redis.close();
  });
}

TEST(count_down_latch, blocking_facade_in_std_latch_shape) {
  auto cfg = rlock::test::make_config();
  rlock::blocking::client c(cfg);
  rlock::blocking::count_down_latch latch(c, "threads");
  EXPECT_TRUE(latch.try_wait());
  EXPECT_TRUE(latch.try_set_count(2));
  EXPECT_FALSE(latch.try_set_count(2));
  EXPECT_EQ(latch.count(), 2);
  EXPECT_FALSE(latch.try_wait_for(20ms));
  std::atomic<bool> through{false};
  std::thread other([&] {
    rlock::blocking::count_down_latch mine(c, "threads");
    mine.arrive_and_wait();  // 2 -> 1, then waits for the main thread's
    through = true;
  });
  // The other thread's count-down, seen from here; then the last one opens it for both.
  for (int i = 0; i < 2'500 && latch.count() != 1; ++i) std::this_thread::sleep_for(2ms);
  EXPECT_EQ(latch.count(), 1);
  EXPECT_FALSE(through);
  latch.count_down();
  latch.wait();
  other.join();
  EXPECT_TRUE(through);
  EXPECT_TRUE(latch.try_wait());
  EXPECT_TRUE(latch.try_wait_until(std::chrono::steady_clock::now() + 10ms));
  EXPECT_FALSE(latch.remove());
  EXPECT_EQ(rlock::test::thrown_by([&] { (void)latch.try_set_count(~0ull); }),
            rlock::errc::invalid_argument);
}

TEST(count_down_latch, shared_with_redisson_both_ways) { shared_both_ways(one_server()); }
TEST(count_down_latch, cluster_shared_with_redisson_both_ways) { shared_both_ways(a_cluster()); }

}  // namespace count_down_latch_test
