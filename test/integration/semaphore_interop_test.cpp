// rlock's semaphores beside Redisson's, played with Redisson's own scripts (4.7.x, written out
// here from its source with the keys, arguments and channels it builds): RSemaphore's counter
// and channel, RPermitExpirableSemaphore's permits by id (16 bytes on the wire, 32 hex digits
// shown), a Redisson permit taken without a lease beside an rlock waiter, and Redisson's
// addPermits and release(n) beside rlock's total. Each case runs on one server and on a
// 3-master cluster (where Redisson publishes with `spublish`).
#include "rlock/rlock.hpp"
#include "support/deployment.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <string_view>

namespace semaphore_interop_test {

namespace asio = boost::asio;
namespace resp3 = rlock::detail::resp3;
using rlock::test::error_of;
using rlock::test::wait_until;
using namespace std::chrono_literals;

// RSemaphore.tryAcquireAsync(permits): KEYS = [name], ARGV = [permits]; 1 taken, 0 not enough.
constexpr std::string_view redisson_try_acquire = R"lua(
local value = redis.call('get', KEYS[1]);
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then
  local val = redis.call('decrby', KEYS[1], ARGV[1]);
  return 1;
end;
return 0;
)lua";
// RSemaphore.releaseAsync(permits): KEYS = [name, `redisson_sc:{name}`], ARGV = [permits,
// publish command].
constexpr std::string_view redisson_release = R"lua(
local value = redis.call('incrby', KEYS[1], ARGV[1]);
redis.call(ARGV[2], KEYS[2], value);
)lua";
// RSemaphore.addPermitsAsync(permits): KEYS = [name, `redisson_sc:{name}`], ARGV = [permits,
// publish command]. The counter only.
constexpr std::string_view redisson_add_permits = R"lua(
local value = redis.call('get', KEYS[1]);
if (value == false) then value = 0; end;
redis.call('set', KEYS[1], value + ARGV[1]);
redis.call(ARGV[2], KEYS[2], value + ARGV[1]);
)lua";
// RPermitExpirableSemaphore.tryAcquireAsync(ids, timeoutDate): KEYS = [name, `{name}:timeout`,
// `redisson_sc:{name}`], ARGV = [permits, timeoutDate (client clock; 922337203685477 without a
// lease), now, 922337203685477, publish command, id bytes...]. 'OK', ':<nearest expiry>', nil.
constexpr std::string_view redisson_permit_acquire = R"lua(
local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1]);
if #expiredIds > 0 then
  redis.call('zrem', KEYS[2], unpack(expiredIds));
  local value = redis.call('incrby', KEYS[1], #expiredIds);
  if tonumber(value) > 0 then redis.call(ARGV[5], KEYS[3], value); end;
end;
local value = redis.call('get', KEYS[1]);
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then
  redis.call('decrby', KEYS[1], ARGV[1]);
  for i = 6, #ARGV, 1 do redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]); end;
  local ttl = redis.call('pttl', KEYS[1]);
  if ttl > 0 then redis.call('pexpire', KEYS[2], ttl); end;
  return 'OK';
end;
local v = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES');
if v[1] ~= nil and v[2] ~= ARGV[4] then return ':' .. tostring(v[2]); end
return nil;
)lua";
// RPermitExpirableSemaphore.tryReleaseAsync(permitId): KEYS = [name, `redisson_sc:{name}`,
// `{name}:timeout`], ARGV = [id bytes, 1, now (client clock), publish command]; 1 released, 0
// not held or expired.
constexpr std::string_view redisson_try_release = R"lua(
local expire = redis.call('zscore', KEYS[3], ARGV[1]);
local removed = redis.call('zrem', KEYS[3], ARGV[1]);
if tonumber(removed) ~= 1 then return 0; end;
local value = redis.call('incrby', KEYS[1], ARGV[2]);
redis.call(ARGV[4], KEYS[2], value);
if tonumber(expire) <= tonumber(ARGV[3]) then return 0; end;
return 1;
)lua";

constexpr std::string_view never_expires = "922337203685477";  // nonExpirableTimeout

/// Netty's ByteBufUtil.decodeHexDump, which Redisson applies to a permit id before each script.
std::string decode_hex_dump(std::string_view hex) {
  std::string raw;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    raw.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return raw;
}

/// Redisson's generateId(): 16 random bytes as 32 lowercase hex digits.
std::string generate_id() {
  static std::mt19937_64 rng(std::random_device{}());
  static constexpr std::string_view digits = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 32; ++i) id.push_back(digits[rng() % 16]);
  return id;
}

std::int64_t epoch_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// A Redisson client of one semaphore, on the connection to the semaphore's node.
class redisson_semaphore {
 public:
  redisson_semaphore(std::uint16_t port, std::string key, std::string publish)
      : raw_(port),
        key_(std::move(key)),
        channel_("redisson_sc:{" + key_ + "}"),
        holds_("{" + key_ + "}:timeout"),
        publish_(std::move(publish)) {}

  bool try_acquire(int permits) {
    return raw_.command_int({"EVAL", redisson_try_acquire, "1", key_, std::to_string(permits)}) ==
           1;
  }
  void release(int permits) {
    raw_.command(
        {"EVAL", redisson_release, "2", key_, channel_, std::to_string(permits), publish_});
  }
  void add_permits(int permits) {
    raw_.command(
        {"EVAL", redisson_add_permits, "2", key_, channel_, std::to_string(permits), publish_});
  }
  /// RPermitExpirableSemaphore.tryAcquire(leaseTime) (none: never expires): the permit's id as
  /// Redisson shows it, or nothing.
  std::optional<std::string> try_acquire_permit(std::optional<std::chrono::milliseconds> lease) {
    const std::string id = generate_id();
    const std::string until =
        lease ? std::to_string(epoch_ms() + lease->count()) : std::string(never_expires);
    auto r =
        raw_.command({"EVAL", redisson_permit_acquire, "3", key_, holds_, channel_, "1", until,
                      std::to_string(epoch_ms()), never_expires, publish_, decode_hex_dump(id)});
    if (r.str == "OK") return id;
    return std::nullopt;
  }
  /// RPermitExpirableSemaphore.tryRelease(permitId).
  bool try_release(std::string_view id) {
    return raw_.command_int({"EVAL", redisson_try_release, "3", key_, channel_, holds_,
                             decode_hex_dump(id), "1", std::to_string(epoch_ms()), publish_}) == 1;
  }
  /// The server's count of EVALSHA calls (rlock's scripts; Redisson's side sends EVAL).
  std::int64_t evalsha_calls() { return raw_.calls_of("evalsha"); }
  /// Whether a waiter (ours) listens on the semaphore's channel.
  bool listened_to() {
    auto n = raw_.command(
        {"PUBSUB", publish_ == "publish" ? "NUMSUB" : "SHARDNUMSUB", std::string_view(channel_)});
    return n.elements.size() == 2u && n.elements[1].integer >= 1;
  }
  rlock::test::raw_client& raw() { return raw_; }
  const std::string& holds() const { return holds_; }

 private:
  rlock::test::raw_client raw_;
  std::string key_;
  std::string channel_;
  std::string holds_;
  std::string publish_;
};

using setup = rlock::test::deployment;
using rlock::test::a_cluster;
using rlock::test::one_server;

/// A waiter beside the test: `take()` (a try_acquire with a wait) runs on `io`, its permit
/// goes to `got` and `bell` rings when it is done. Completes once the waiter sleeps on its
/// channel (its two attempts answered, and `java` sees it subscribed); whether it did. An attempt
/// counts when it is sent: `sem.available()` asks on the same connection after the second, so
/// its answer comes after that attempt's (otherwise a release made now could let the attempt in
/// before it sleeps, on a loaded machine). Call it outside co_await and await what it returns:
/// g++ 12 destroys some temporaries of a co_await expression twice (the lambda passed here would
/// be one).
template <typename Semaphore, typename Take>
asio::awaitable<bool> park_waiter(asio::io_context& io, rlock::client& redis,
                                  redisson_semaphore& java, Semaphore sem, Take take,
                                  std::optional<rlock::permit>& got, asio::steady_timer& bell) {
  const auto attempts = redis.stats().acquire_attempts;
  asio::co_spawn(
      io,
      [take, &got, &bell]() mutable -> asio::awaitable<void> {
        auto taking = take();  // named: g++ 12 and temporaries inside co_await (with_lock.hpp)
        got = co_await std::move(taking);
        bell.cancel();
      },
      asio::detached);
  const bool sent = co_await rlock::test::poll_until(
      [&] { return redis.stats().acquire_attempts >= attempts + 2 && java.listened_to(); });
  (void)co_await sem.available();
  co_return sent;
}

/// Ids both ways: an rlock permit's id is Redisson's form (its 16 bytes in the zset, its sizes
/// keyed by the same bytes), Redisson's tryRelease of it gives it back; a Redisson permit's id,
/// as Redisson shows it (either case), is released by rlock.
void permit_ids_are_one_form_both_ways(const setup& where) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), where.cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto sem = redis.get_permit_expirable_semaphore("ids");
    const auto key = std::string(sem.key());
    redisson_semaphore java(where.node_of(key), key, where.publish);
    EXPECT_TRUE(co_await sem.try_set_permits(3));

    auto ours = co_await sem.acquire(30s);
    EXPECT_EQ(ours.id().size(), 32u) << ours.id();
    EXPECT_EQ(decode_hex_dump(ours.id()), ours.owner_field());
    EXPECT_FALSE(
        java.raw().command({"ZSCORE", java.holds(), decode_hex_dump(ours.id())}).is_null());
    EXPECT_TRUE(java.try_release(ours.id()));  // Redisson's tryRelease of our id
    EXPECT_EQ(co_await sem.available(), 3);
    EXPECT_EQ(co_await error_of(ours.unlock()), rlock::errc::not_owner);

    auto theirs = java.try_acquire_permit(30s);
    RLOCK_CO_ASSERT(theirs.has_value());
    EXPECT_EQ(co_await sem.available(), 2);
    EXPECT_TRUE(co_await sem.release(*theirs));  // rlock's release of Redisson's id
    EXPECT_EQ(co_await sem.available(), 3);
    EXPECT_FALSE(co_await sem.release(*theirs));  // once
    auto upper = java.try_acquire_permit(30s);
    RLOCK_CO_ASSERT(upper.has_value());
    std::string shouted = *upper;
    for (auto& c : shouted) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_TRUE(co_await sem.release(shouted));  // decodeHexDump takes either case
    EXPECT_EQ(co_await sem.available(), 3);

    // A hold of several permits: its size is kept under the same 16 bytes, and goes with it.
    auto counting = redis.get_semaphore("ids");
    auto two = co_await counting.acquire(2, 30s);
    const auto sizes = "rlock_semaphore_permits:{" + key + "}";
    EXPECT_EQ(java.raw().command({"HGET", sizes, decode_hex_dump(two.id())}).str, "2");
    EXPECT_TRUE(co_await sem.release(two.id()));
    EXPECT_EQ(co_await sem.available(), 3);
    EXPECT_EQ(java.raw().command_int({"HLEN", sizes}), 0);
    co_await redis.close();
  });
}

/// A Redisson permit taken without a lease scores 922337203685477: our waiter sleeps until a
/// release message (or its lease's cap), never retrying in a loop, and its release wakes it.
void a_never_expiring_redisson_permit_leaves_our_waiter_asleep(const setup& where) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), where.cfg);
  rlock::test::run(
      io,
      [&]() -> asio::awaitable<void> {
        co_await redis.connect();
        auto sem = redis.get_permit_expirable_semaphore("forever");
        const auto key = std::string(sem.key());
        redisson_semaphore java(where.node_of(key), key, where.publish);
        EXPECT_TRUE(co_await sem.try_set_permits(1));
        const auto permit = java.try_acquire_permit(std::nullopt);
        RLOCK_CO_ASSERT(permit.has_value());

        // Waiting 1.5 s: its first attempt, the retry once subscribed, and nothing more.
        auto before = java.evalsha_calls();
        EXPECT_FALSE(co_await sem.try_acquire(1500ms));
        const auto waiting = java.evalsha_calls() - before;
        EXPECT_LE(waiting, 4) << "EVALSHA calls while waiting 1.5 s";
        EXPECT_GE(waiting, 1);
        // With a lease of 300 ms it sleeps as long (the watchdog's lease caps a sleep, not its
        // own shorter one): a short lease does not turn a waiter into a poller.
        before = java.evalsha_calls();
        EXPECT_FALSE(co_await sem.try_acquire(1500ms, 300ms));
        EXPECT_LE(java.evalsha_calls() - before, 4) << "EVALSHA calls, 300 ms lease";

        // Redisson's release of its permit wakes our waiter, which takes it.
        std::optional<rlock::permit> got;
        asio::steady_timer bell(io);
        // Named, not a temporary inside co_await (g++ 12 destroys some of those twice).
        auto parked = park_waiter(
            io, redis, java, sem, [sem]() mutable { return sem.try_acquire(10s); }, got, bell);
        EXPECT_TRUE(co_await std::move(parked));
        EXPECT_TRUE(java.try_release(*permit));
        co_await wait_until(
            bell, [&] { return got.has_value(); }, 10s);
        RLOCK_CO_ASSERT(got.has_value());
        co_await got->unlock();
        co_await redis.close();
      },
      30s);
}

/// Redisson's addPermits and release(n) move the counter alone: rlock's total no longer adds up
/// and refuses nothing; an acquisition that fits the counter is taken. A total that adds up (all
/// writers rlock's) still refuses one that cannot fit.
void java_counter_moves_leave_room_for_an_acquisition_that_fits(const setup& where) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), where.cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto added = redis.get_semaphore("added");
    redisson_semaphore java(where.node_of(added.key()), std::string(added.key()), where.publish);
    EXPECT_TRUE(co_await added.try_set_permits(2));
    EXPECT_EQ(co_await error_of(added.try_acquire(4)), rlock::errc::invalid_argument);  // certain
    java.add_permits(3);
    auto four = co_await added.try_acquire(4);
    RLOCK_CO_ASSERT(four.has_value());
    co_await four->unlock();
    EXPECT_EQ(co_await added.available(), 5);

    auto released = redis.get_semaphore("released");
    redisson_semaphore java2(where.node_of(released.key()), std::string(released.key()),
                             where.publish);
    EXPECT_TRUE(co_await released.try_set_permits(2));
    java2.release(2);
    auto all = co_await released.try_acquire(4, 5s);
    RLOCK_CO_ASSERT(all.has_value());
    co_await all->unlock();

    // Redisson's RSemaphore takes two untracked: the total (2) no longer adds up (0 + 0): an
    // acquisition of 3 waits as in Redisson, and Redisson's release(3) lets it in.
    auto taken = redis.get_semaphore("taken");
    redisson_semaphore java3(where.node_of(taken.key()), std::string(taken.key()), where.publish);
    EXPECT_TRUE(co_await taken.try_set_permits(2));
    EXPECT_TRUE(java3.try_acquire(2));
    std::optional<rlock::permit> three;
    asio::steady_timer bell(io);
    // Asleep on its channel after its two attempts (not refused: it would have completed).
    auto parked = park_waiter(
        io, redis, java3, taken, [taken]() mutable { return taken.try_acquire(3, 10s); }, three,
        bell);
    EXPECT_TRUE(co_await std::move(parked));
    EXPECT_FALSE(three.has_value());
    java3.release(3);
    co_await wait_until(
        bell, [&] { return three.has_value(); }, 10s);
    RLOCK_CO_ASSERT(three.has_value());
    co_await three->unlock();
    co_await redis.close();
  });
}

/// RSemaphore's counter and channel, both ways: Redisson's release (the count on the channel)
/// wakes our waiter; ours publishes the count Redisson's waiters listen for.
void counter_and_channel_are_shared_both_ways(const setup& where) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), where.cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto sem = redis.get_semaphore("sem");
    const auto key = std::string(sem.key());
    redisson_semaphore java(where.node_of(key), key, where.publish);
    EXPECT_TRUE(co_await sem.try_set_permits(1));
    EXPECT_TRUE(java.try_acquire(1));
    EXPECT_FALSE(co_await sem.try_acquire());
    std::optional<rlock::permit> got;
    asio::steady_timer bell(io);
    auto parked = park_waiter(
        io, redis, java, sem, [sem]() mutable { return sem.try_acquire(1, 10s); }, got, bell);
    RLOCK_CO_ASSERT(co_await std::move(parked));
    java.release(1);
    co_await wait_until(
        bell, [&] { return got.has_value(); }, 10s);
    RLOCK_CO_ASSERT(got.has_value());
    EXPECT_EQ(got->last_wake(), rlock::wake_reason::notification);
    EXPECT_FALSE(java.try_acquire(1));  // ours now
    rlock::test::raw_client subscriber(where.node_of(key));
    const std::string channel = "redisson_sc:{" + key + "}";
    subscriber.send({where.publish == "publish" ? "SUBSCRIBE" : "SSUBSCRIBE", channel});
    auto confirm = subscriber.read_push(5s);
    EXPECT_EQ(confirm.elements.size(), 3u) << rlock::test::describe(confirm);
    co_await got->unlock();
    auto message = subscriber.read_push(5s);
    RLOCK_CO_ASSERT(message.elements.size() == 3u);
    EXPECT_EQ(message.elements[1].str, channel);
    EXPECT_EQ(message.elements[2].str, "1");  // the new count, Redisson's message
    EXPECT_TRUE(java.try_acquire(1));
    EXPECT_EQ(co_await sem.available(), 0);
    co_await redis.close();
  });
}

TEST(semaphore_interop, counter_and_channel_are_redissons_both_ways) {
  counter_and_channel_are_shared_both_ways(one_server());
}
TEST(semaphore_interop, cluster_counter_and_channel_are_redissons_both_ways) {
  counter_and_channel_are_shared_both_ways(a_cluster());
}
TEST(semaphore_interop, permit_ids_are_redissons_16_bytes_both_ways) {
  permit_ids_are_one_form_both_ways(one_server());
}
TEST(semaphore_interop, a_redisson_permit_without_lease_leaves_our_waiter_asleep) {
  a_never_expiring_redisson_permit_leaves_our_waiter_asleep(one_server());
}
TEST(semaphore_interop, java_add_permits_and_release_leave_room_for_an_acquisition_that_fits) {
  java_counter_moves_leave_room_for_an_acquisition_that_fits(one_server());
}
TEST(semaphore_interop, cluster_permit_ids_are_redissons_16_bytes_both_ways) {
  permit_ids_are_one_form_both_ways(a_cluster());
}
TEST(semaphore_interop, cluster_a_redisson_permit_without_lease_leaves_our_waiter_asleep) {
  a_never_expiring_redisson_permit_leaves_our_waiter_asleep(a_cluster());
}
TEST(semaphore_interop, cluster_java_add_permits_and_release_leave_room_for_an_acquisition) {
  java_counter_moves_leave_room_for_an_acquisition_that_fits(a_cluster());
}

}  // namespace semaphore_interop_test
