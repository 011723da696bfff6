// Redisson interop: a foreign Redisson client, played with raw_client and Redisson's own Lua
// scripts (quoted from Redisson's source, deliberately not rlock's scripts.hpp),
// and rlock must exclude each other and wake each other on unlock.
#include "engine/latch_sweeper.hpp"
#include "engine/lock_state.hpp"
#include "rlock/rlock.hpp"
#include "script/scripts.hpp"
#include "session/cluster/key_slot.hpp"
#include "support/cluster_topology.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/redisson_scripts.hpp"
#include "support/run.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <regex>
#include <string>
#include <string_view>
#include <system_error>

namespace interop_test {

namespace asio = boost::asio;
using rlock::test::make_config;
using rlock::test::wait_until;
namespace resp3 = rlock::detail::resp3;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// Redisson's scripts, verbatim from the wire document.

using rlock::test::redisson_acquire;
using rlock::test::redisson_fenced_acquire;
using rlock::test::redisson_release;

// Redisson >= 3.24.1: KEYS = [name, channel, latch], ARGV = ["0", lease_ms, owner_field,
// publish_command, latch_ttl_ms]
constexpr std::string_view redisson_latched_release = R"lua(
local val = redis.call('get', KEYS[3]);
if val ~= false then return tonumber(val); end;
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2]);
  redis.call('set', KEYS[3], 0, 'px', ARGV[5]);
  return 0;
else
  redis.call('del', KEYS[1]);
  redis.call(ARGV[4], KEYS[2], ARGV[1]);
  redis.call('set', KEYS[3], 1, 'px', ARGV[5]);
  return 1;
end;
)lua";

// KEYS = [name, channel], ARGV = ["0"]
constexpr std::string_view redisson_force_unlock = R"lua(
if (redis.call('del', KEYS[1]) == 1) then redis.call('publish', KEYS[2], ARGV[1]); return 1 else return 0 end
)lua";

// Redisson's RNonReentrantLock acquire (4.4.0; RedissonNonReentrantLock.tryLockInnerAsync), as
// read from its source and written out here: KEYS = [name], ARGV = [lease_ms, owner_field,
// "NON_REENTRANT_REACQUIRE"]. nil | error reply | pttl.
constexpr std::string_view redisson_non_reentrant_acquire = R"lua(
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then return redis.error_reply(ARGV[3]); end;
return redis.call('pttl', KEYS[1]);
)lua";

// Redisson's RFairLock (RedissonFairLock 4.7.x), as read from its source and written out here.
// Acquire, the form that returns a TTL: KEYS = [name, queue, timeouts], ARGV = [lease_ms,
// owner_field, wait_ms, now_ms] with `now` from the client's clock. nil = acquired, else the TTL
// to wait. Drops expired heads; takes the lock when free and the caller is first (or nobody
// waits), shifting the others' deadlines down by the wait; re-enters; otherwise joins the queue
// with deadline = previous waiter's (or the lock's PTTL) + wait + now.
constexpr std::string_view redisson_fair_acquire = R"lua(
while true do
  local head = redis.call('lindex', KEYS[2], 0);
  if head == false then break; end;
  local d = redis.call('zscore', KEYS[3], head);
  if d ~= false and tonumber(d) <= tonumber(ARGV[4]) then
    redis.call('zrem', KEYS[3], head); redis.call('lpop', KEYS[2]);
  else break; end;
end;
if redis.call('exists', KEYS[1]) == 0 and (redis.call('exists', KEYS[2]) == 0
    or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
  redis.call('lpop', KEYS[2]); redis.call('zrem', KEYS[3], ARGV[2]);
  local all = redis.call('zrange', KEYS[3], 0, -1);
  for i = 1, #all do redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), all[i]); end;
  redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if redis.call('zscore', KEYS[3], ARGV[2]) ~= false then
  return math.max(0, redis.call('pttl', KEYS[1]));
end;
local last = redis.call('lindex', KEYS[2], -1);
local ttl;
if last ~= false and last ~= ARGV[2] and redis.call('zscore', KEYS[3], last) ~= false then
  ttl = tonumber(redis.call('zscore', KEYS[3], last)) - tonumber(ARGV[4]);
else
  ttl = redis.call('pttl', KEYS[1]);
end;
if redis.call('zadd', KEYS[3], ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]), ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2]);
end;
return ttl;
)lua";
// Its latched unlock: KEYS = [name, queue, timeouts, channel, latch], ARGV = ["0", lease_ms,
// owner_field, now_ms, publish_command, latch_ttl_ms]. Tells the queue's head on
// `<channel>:<its owner field>`.
constexpr std::string_view redisson_fair_release = R"lua(
local val = redis.call('get', KEYS[5]);
if val ~= false then return tonumber(val); end;
while true do
  local head = redis.call('lindex', KEYS[2], 0);
  if head == false then break; end;
  local d = redis.call('zscore', KEYS[3], head);
  if d ~= false and tonumber(d) <= tonumber(ARGV[4]) then
    redis.call('zrem', KEYS[3], head); redis.call('lpop', KEYS[2]);
  else break; end;
end;
if redis.call('exists', KEYS[1]) == 0 then
  local next = redis.call('lindex', KEYS[2], 0);
  if next ~= false then redis.call(ARGV[5], KEYS[4] .. ':' .. next, ARGV[1]); end;
  redis.call('set', KEYS[5], 1, 'px', ARGV[6]);
  return 1;
end;
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil; end;
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[5], 0, 'px', ARGV[6]);
  return 0;
end;
redis.call('del', KEYS[1]); redis.call('set', KEYS[5], 1, 'px', ARGV[6]);
local next = redis.call('lindex', KEYS[2], 0);
if next ~= false then redis.call(ARGV[5], KEYS[4] .. ':' .. next, ARGV[1]); end;
return 1;
)lua";

// Redisson's RSpinLock unlock (RedissonSpinLock.unlockInnerAsync, latched), as read from its
// source and written out here: KEYS = [name, latch], ARGV = [lease_ms, owner_field, latch_ttl].
// Releases without publishing anything.
constexpr std::string_view redisson_spin_release = R"lua(
local val = redis.call('get', KEYS[2]);
if val ~= false then return tonumber(val); end;
if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then return nil; end;
local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1);
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[1]);
  redis.call('set', KEYS[2], 0, 'px', ARGV[3]);
  return 0;
end;
redis.call('del', KEYS[1]);
redis.call('set', KEYS[2], 1, 'px', ARGV[3]);
return 1;
)lua";

// Redisson's RReadWriteLock, as read from its source (RedissonReadLock, RedissonWriteLock,
// tryLockInnerAsync and the latched unlockInnerAsync) and written out here.
// Read acquire: KEYS = [name, `{name}:<field>:rwlock_timeout`], ARGV = [lease, field,
// `<field>:write`]; nil or the PTTL.
constexpr std::string_view redisson_read_acquire = R"lua(
local mode = redis.call('hget', KEYS[1], 'mode');
if (mode == false) then
  redis.call('hset', KEYS[1], 'mode', 'read');
  redis.call('hset', KEYS[1], ARGV[2], 1);
  redis.call('set', KEYS[2] .. ':1', 1);
  redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1);
  local key = KEYS[2] .. ':' .. ind;
  redis.call('set', key, 1);
  redis.call('pexpire', key, ARGV[1]);
  local remainTime = redis.call('pttl', KEYS[1]);
  redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1]));
  return nil;
end;
return redis.call('pttl', KEYS[1]);
)lua";

// Read unlock: KEYS = [name, `redisson_rwlock:{name}`, timeout prefix, `{name}`, latch],
// ARGV = ["0", field, publish, latch TTL]; nil, 0 (the lock is still held) or 1 (deleted).
constexpr std::string_view redisson_read_release = R"lua(
local val = redis.call('get', KEYS[5]);
if val ~= false then return tonumber(val); end;
local mode = redis.call('hget', KEYS[1], 'mode');
if (mode == false) then
  redis.call(ARGV[3], KEYS[2], ARGV[1]);
  redis.call('set', KEYS[5], 1, 'px', ARGV[4]);
  return nil;
end;
local lockExists = redis.call('hexists', KEYS[1], ARGV[2]);
if (lockExists == 0) then return nil; end;
local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1);
if (counter == 0) then redis.call('hdel', KEYS[1], ARGV[2]); end;
redis.call('del', KEYS[3] .. ':' .. (counter+1));
if (redis.call('hlen', KEYS[1]) > 1) then
  local maxRemainTime = -3;
  local keys = redis.call('hkeys', KEYS[1]);
  for n, key in ipairs(keys) do
    counter = tonumber(redis.call('hget', KEYS[1], key));
    if type(counter) == 'number' then
      for i=counter, 1, -1 do
        local remainTime = redis.call('pttl', KEYS[4] .. ':' .. key .. ':rwlock_timeout:' .. i);
        maxRemainTime = math.max(remainTime, maxRemainTime);
      end;
    end;
  end;
  if maxRemainTime > 0 then
    redis.call('pexpire', KEYS[1], maxRemainTime);
    redis.call('set', KEYS[5], 0, 'px', ARGV[4]);
    return 0;
  end;
  if mode == 'write' then
    redis.call('set', KEYS[5], 0, 'px', ARGV[4]);
    return 0;
  end;
end;
redis.call('del', KEYS[1]);
redis.call(ARGV[3], KEYS[2], ARGV[1]);
redis.call('set', KEYS[5], 1, 'px', ARGV[4]);
return 1;
)lua";

// Write acquire: KEYS = [name], ARGV = [lease, `<field>:write`]; nil or the PTTL.
constexpr std::string_view redisson_write_acquire = R"lua(
local mode = redis.call('hget', KEYS[1], 'mode');
if (mode == false) then
  redis.call('hset', KEYS[1], 'mode', 'write');
  redis.call('hset', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if (mode == 'write') then
  if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    redis.call('hincrby', KEYS[1], ARGV[2], 1);
    local currentExpire = redis.call('pttl', KEYS[1]);
    redis.call('pexpire', KEYS[1], currentExpire + ARGV[1]);
    return nil;
  end;
end;
return redis.call('pttl', KEYS[1]);
)lua";

// Write unlock: KEYS = [name, `redisson_rwlock:{name}`, latch], ARGV = ["1", lease,
// `<field>:write`, publish, latch TTL]; nil, 0 or 1.
constexpr std::string_view redisson_write_release = R"lua(
local val = redis.call('get', KEYS[3]);
if val ~= false then return tonumber(val); end;
local mode = redis.call('hget', KEYS[1], 'mode');
if (mode == false) then
  redis.call(ARGV[4], KEYS[2], ARGV[1]);
  redis.call('set', KEYS[3], 1, 'px', ARGV[5]);
  return nil;
end;
if (mode == 'write') then
  local lockExists = redis.call('hexists', KEYS[1], ARGV[3]);
  if (lockExists == 0) then
    return nil;
  else
    local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
    if (counter > 0) then
      redis.call('pexpire', KEYS[1], ARGV[2]);
      redis.call('set', KEYS[3], 0, 'px', ARGV[5]);
      return 0;
    else
      redis.call('hdel', KEYS[1], ARGV[3]);
      if (redis.call('hlen', KEYS[1]) == 1) then
        redis.call('del', KEYS[1]);
        redis.call(ARGV[4], KEYS[2], ARGV[1]);
      else
        redis.call('hset', KEYS[1], 'mode', 'read');
      end;
      redis.call('set', KEYS[3], 1, 'px', ARGV[5]);
      return 1;
    end;
  end;
end;
return nil;
)lua";

const std::regex uuid_v4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");

/// Redisson's channel rule, written out independently of rlock: braces around the name unless it
/// already contains one.
std::string redisson_channel(std::string_view key) {
  if (key.find('{') != std::string_view::npos) return "redisson_lock__channel:" + std::string(key);
  return "redisson_lock__channel:{" + std::string(key) + "}";
}

/// A Redisson client on its own connection: one random v4 UUID and one thread id.
class foreign_client {
 public:
  explicit foreign_client(std::uint16_t port)
      : raw_(port), uuid_(boost::uuids::to_string(boost::uuids::random_generator()())) {}

  std::string field() const { return uuid_ + ":" + thread_id_; }

  /// nil = acquired, else the holder's PTTL.
  resp3::value acquire(std::string_view key, std::int64_t lease_ms = 30'000) {
    const auto lease = std::to_string(lease_ms);
    const auto owner = field();
    return raw_.command({"EVAL", redisson_acquire, "1", key, lease, owner});
  }
  /// nil = not owner, 0 = still held, 1 = released and published.
  resp3::value release(std::string_view key, std::int64_t lease_ms = 30'000) {
    const auto lease = std::to_string(lease_ms);
    const auto owner = field();
    const auto channel = redisson_channel(key);
    return raw_.command({"EVAL", redisson_release, "2", key, channel, "0", lease, owner});
  }
  /// RFencedLock's acquire: {-1, token} or {pttl, -1}. Its counter name is Redisson's
  /// prefixName("redisson_lock_token", name), the channel's brace rule.
  resp3::value fenced_acquire(std::string_view key, std::int64_t lease_ms = 30'000) {
    const auto lease = std::to_string(lease_ms);
    const auto owner = field();
    const auto counter = key.find('{') != std::string_view::npos
                             ? "redisson_lock_token:" + std::string(key)
                             : "redisson_lock_token:{" + std::string(key) + "}";
    return raw_.command({"EVAL", redisson_fenced_acquire, "2", key, counter, lease, owner});
  }
  /// RNonReentrantLock's acquire: nil, the refusal of a re-acquire, or the holder's PTTL.
  resp3::value non_reentrant_acquire(std::string_view key, std::int64_t lease_ms = 30'000) {
    const auto lease = std::to_string(lease_ms);
    const auto owner = field();
    return raw_.command({"EVAL", redisson_non_reentrant_acquire, "1", key, lease, owner,
                         "NON_REENTRANT_REACQUIRE"});
  }
  /// RFairLock's acquire with this client's clock: nil, or the TTL to wait (queued).
  resp3::value fair_acquire(std::string_view key, std::int64_t wait_ms = 300'000) {
    const auto k = std::string(key);
    const auto owner = field();
    const auto wait = std::to_string(wait_ms);
    const auto now = std::to_string(epoch_ms());
    return raw_.command({"EVAL", redisson_fair_acquire, "3", k, "redisson_lock_queue:{" + k + "}",
                         "redisson_lock_timeout:{" + k + "}", "30000", owner, wait, now});
  }
  /// RFairLock's latched unlock.
  resp3::value fair_release(std::string_view key) {
    const auto k = std::string(key);
    const auto owner = field();
    const auto now = std::to_string(epoch_ms());
    return raw_.command({"EVAL", redisson_fair_release, "5", k, "redisson_lock_queue:{" + k + "}",
                         "redisson_lock_timeout:{" + k + "}", redisson_channel(k),
                         "redisson_unlock_latch:{" + k + "}:00ff", "0", "30000", owner, now,
                         "publish", "10000"});
  }
  /// RSpinLock's unlock: publishes nothing.
  resp3::value spin_release(std::string_view key) {
    const auto k = std::string(key);
    const auto owner = field();
    return raw_.command({"EVAL", redisson_spin_release, "2", k,
                         "redisson_unlock_latch:{" + k + "}:0a0b", "30000", owner, "10000"});
  }
  /// RReadWriteLock's halves: acquire (nil or the PTTL) and latched unlock (nil, 0 or 1).
  resp3::value read_acquire(std::string_view key, std::int64_t lease_ms = 30'000) {
    const auto k = std::string(key);
    return raw_.command({"EVAL", redisson_read_acquire, "2", k,
                         "{" + k + "}:" + field() + ":rwlock_timeout", std::to_string(lease_ms),
                         field(), field() + ":write"});
  }
  resp3::value read_release(std::string_view key) {
    const auto k = std::string(key);
    return raw_.command({"EVAL", redisson_read_release, "5", k, "redisson_rwlock:{" + k + "}",
                         "{" + k + "}:" + field() + ":rwlock_timeout", "{" + k + "}", next_latch(k),
                         "0", field(), "publish", "10000"});
  }
  resp3::value write_acquire(std::string_view key, std::int64_t lease_ms = 30'000) {
    return raw_.command(
        {"EVAL", redisson_write_acquire, "1", key, std::to_string(lease_ms), field() + ":write"});
  }
  resp3::value write_release(std::string_view key) {
    const auto k = std::string(key);
    return raw_.command({"EVAL", redisson_write_release, "3", k, "redisson_rwlock:{" + k + "}",
                         next_latch(k), "1", "30000", field() + ":write", "publish", "10000"});
  }
  /// A fresh unlock latch: one request id per unlock.
  std::string next_latch(const std::string& key) {
    return "redisson_unlock_latch:{" + key + "}:" + std::to_string(++unlocks_);
  }
  /// The channel RFairLock's waiter of this client listens on.
  std::string fair_channel(std::string_view key) const {
    return redisson_channel(key) + ":" + field();
  }
  static std::int64_t epoch_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  resp3::value force_unlock(std::string_view key) {
    const auto channel = redisson_channel(key);
    return raw_.command({"EVAL", redisson_force_unlock, "2", key, channel, "0"});
  }
  rlock::test::raw_client& raw() { return raw_; }

 private:
  rlock::test::raw_client raw_;
  std::string uuid_;
  std::string thread_id_ = "1";
  int unlocks_ = 0;
};

/// Bounded poll (no event to await): until `redis` made `attempts` acquire attempts and the
/// server counts a subscriber on `channel`, i.e. the waiter is asleep on its subscription.
asio::awaitable<bool> waiter_asleep(rlock::client& redis, rlock::test::raw_client& raw,
                                    const std::string& channel, std::uint64_t attempts) {
  for (int i = 0; i < 500; ++i) {
    if (redis.stats().acquire_attempts >= attempts) {
      auto numsub = raw.command({"PUBSUB", "NUMSUB", channel});
      if (numsub.elements.size() == 2u && numsub.elements[1].integer == 1) co_return true;
    }
    asio::steady_timer poll(co_await asio::this_coro::executor, 10ms);
    co_await poll.async_wait(asio::use_awaitable);
  }
  co_return false;
}

bool is_message(const resp3::value& push, const std::string& channel, std::string_view payload) {
  return push.is_push() && push.elements.size() == 3u && push.elements[0].str == "message" &&
         push.elements[1].str == channel && push.elements[2].str == payload;
}

/// SUBSCRIBEs `raw` to `channel` and reads the confirmation push.
void subscribe(rlock::test::raw_client& raw, const std::string& channel) {
  raw.send({"SUBSCRIBE", channel});
  auto confirm = raw.read_push(5s);
  ASSERT_TRUE(confirm.is_push()) << rlock::test::describe(confirm);
  ASSERT_EQ(confirm.elements.size(), 3u) << rlock::test::describe(confirm);
  EXPECT_EQ(confirm.elements[0].str, "subscribe");
  EXPECT_EQ(confirm.elements[1].str, channel);
}

TEST(interop, foreign_holder_excludes_us_until_its_release) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  foreign_client redisson(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    auto got = redisson.acquire(lock.key());
    RLOCK_CO_ASSERT(got.is_null());

    EXPECT_FALSE(co_await lock.try_lock());
    const auto start = clock_type::now();
    EXPECT_FALSE(co_await lock.try_lock(200ms));
    const auto waited = clock_type::now() - start;
    EXPECT_GE(waited, 150ms);
    EXPECT_LT(waited, 5s);
    EXPECT_FALSE(co_await lock.is_held());
    EXPECT_TRUE(co_await lock.is_locked());

    // Our unlock of the foreign lock is refused and changes nothing.
    bool refused = false;
    try {
      co_await lock.unlock();
    } catch (const boost::system::system_error& e) {
      refused = e.code() == rlock::errc::not_owner;
    }
    EXPECT_TRUE(refused);

    auto released = redisson.release(lock.key());
    EXPECT_EQ(released.type, resp3::type::number) << rlock::test::describe(released);
    EXPECT_EQ(released.integer, 1);
    EXPECT_TRUE(co_await lock.try_lock());
    EXPECT_EQ(co_await lock.hold_count(), 1);
    co_await lock.unlock();
    EXPECT_FALSE(co_await lock.is_locked());
    co_await redis.close();
  });
}

TEST(interop, our_holder_excludes_foreign_client_and_uses_redissons_layout) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  foreign_client redisson(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    EXPECT_TRUE(std::regex_match(redis.id(), uuid_v4)) << redis.id();
    auto lock = redis.get_lock("account");
    co_await lock.lock();
    co_await lock.lock();

    auto got = redisson.acquire(lock.key());
    EXPECT_EQ(got.type, resp3::type::number) << rlock::test::describe(got);
    EXPECT_GT(got.integer, 0);
    EXPECT_LE(got.integer, 30'000);
    auto released = redisson.release(lock.key());
    EXPECT_TRUE(released.is_null()) << rlock::test::describe(released);

    // One hash field, ours, holding the hold count; nothing of the foreign client's.
    auto all = redisson.raw().command({"HGETALL", lock.key()});
    RLOCK_CO_ASSERT(all.elements.size() == 2u);
    const std::string field = redis.id() + ":" + std::to_string(lock.owner_id());
    EXPECT_EQ(all.elements[0].str, field);
    EXPECT_EQ(all.elements[1].str, "2");
    EXPECT_EQ(lock.owner_field(), field);
    auto type = redisson.raw().command({"TYPE", lock.key()});
    EXPECT_EQ(type.str, "hash");

    // Still held once after one unlock; free for the foreign client after the second.
    co_await lock.unlock();
    EXPECT_FALSE(redisson.acquire(lock.key()).is_null());
    co_await lock.unlock();
    EXPECT_TRUE(redisson.acquire(lock.key()).is_null());
    EXPECT_FALSE(co_await lock.try_lock());
    auto done = redisson.release(lock.key());
    EXPECT_EQ(done.integer, 1) << rlock::test::describe(done);
    co_await redis.close();
  });
}

TEST(interop, foreign_unlock_wakes_our_waiter_by_notification) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  foreign_client redisson(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    RLOCK_CO_ASSERT(redisson.acquire(lock.key(), 30'000).is_null());

    clock_type::time_point acquired_at{};
    asio::steady_timer bell(io);
    int done = 0;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await lock.lock();
          acquired_at = clock_type::now();
          ++done;
          bell.cancel();
        },
        asio::detached);

    // The first attempt and the retry after subscribing both failed: the waiter sleeps behind
    // the 30 s foreign lease.
    const bool asleep =
        co_await waiter_asleep(redis, redisson.raw(), redisson_channel(lock.key()), 2);
    RLOCK_CO_ASSERT(asleep);
    EXPECT_EQ(done, 0);

    auto released = redisson.release(lock.key());
    const auto released_at = clock_type::now();
    EXPECT_EQ(released.integer, 1) << rlock::test::describe(released);
    co_await wait_until(
        bell, [&] { return done >= 1; }, 10s);
    RLOCK_CO_ASSERT(done == 1);
    EXPECT_LT(acquired_at - released_at, 1s);
    EXPECT_EQ(lock.last_wake(), rlock::wake_reason::notification);
    EXPECT_EQ(redis.stats().expiry_wakeups, 0u);
    EXPECT_GE(redis.stats().notified_wakeups, 1u);
    EXPECT_TRUE(co_await lock.is_held());
    co_await lock.unlock();
    co_await redis.close();
  });
}

TEST(interop, our_unlock_wakes_a_foreign_subscriber) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client subscriber(cfg.port);
  rlock::test::raw_client publisher(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("account");
    const auto channel = redisson_channel(lock.key());
    subscribe(subscriber, channel);
    co_await lock.lock();
    co_await lock.lock();
    co_await lock.unlock();  // still held: publishes nothing
    co_await lock.unlock();
    // A marker after the final unlock: a message from the reentrant unlock would come first.
    EXPECT_EQ(publisher.command_int({"PUBLISH", channel, "7"}), 1);
    auto message = subscriber.read_push(5s);
    EXPECT_TRUE(is_message(message, channel, "0")) << rlock::test::describe(message);
    auto marker = subscriber.read_push(5s);
    EXPECT_TRUE(is_message(marker, channel, "7")) << rlock::test::describe(marker);
    co_await redis.close();
  });
}

TEST(interop, name_with_brace_uses_the_channel_without_added_braces) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client subscriber(cfg.port);
  rlock::test::raw_client publisher(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("orders{eu}");
    const auto channel = "redisson_lock__channel:" + std::string(lock.key());
    const auto braced = "redisson_lock__channel:{" + std::string(lock.key()) + "}";
    EXPECT_EQ(redisson_channel(lock.key()), channel);
    subscribe(subscriber, channel);
    subscribe(subscriber, braced);
    co_await lock.lock();
    co_await lock.unlock();
    // A marker published after our unlock on the braced channel: the subscriber sees messages in
    // publication order, so if our unlock had published on the braced channel too, that would
    // come before the marker.
    EXPECT_EQ(publisher.command_int({"PUBLISH", braced, "0"}), 1);
    auto first = subscriber.read_push(5s);
    EXPECT_TRUE(is_message(first, channel, "0")) << rlock::test::describe(first);
    auto second = subscriber.read_push(5s);
    EXPECT_TRUE(is_message(second, braced, "0")) << rlock::test::describe(second);
    co_await redis.close();
  });
}

TEST(interop, name_with_brace_waiter_is_woken_by_foreign_unlock) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  foreign_client redisson(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("orders{eu}");
    RLOCK_CO_ASSERT(redisson.acquire(lock.key(), 30'000).is_null());
    asio::steady_timer bell(io);
    int done = 0;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await lock.lock();
          ++done;
          bell.cancel();
        },
        asio::detached);
    const auto channel = "redisson_lock__channel:" + std::string(lock.key());
    const bool asleep = co_await waiter_asleep(redis, redisson.raw(), channel, 2);
    RLOCK_CO_ASSERT(asleep);
    const auto released_at = clock_type::now();
    auto released = redisson.release(lock.key());
    EXPECT_EQ(released.integer, 1) << rlock::test::describe(released);
    co_await wait_until(
        bell, [&] { return done >= 1; }, 10s);
    RLOCK_CO_ASSERT(done == 1);
    EXPECT_LT(clock_type::now() - released_at, 5s);
    EXPECT_EQ(lock.last_wake(), rlock::wake_reason::notification);
    co_await lock.unlock();
    co_await redis.close();
  });
}

TEST(interop, foreign_force_unlock_deletes_our_lock_and_wakes_our_waiter) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client holder_client(io.get_executor(), cfg);
  rlock::client waiter_client(io.get_executor(), cfg);
  foreign_client redisson(cfg.port);
  rlock::test::raw_client subscriber(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await holder_client.connect();
    co_await waiter_client.connect();
    auto holder = holder_client.get_lock("account");
    auto waiter = waiter_client.get_lock("account");
    const auto channel = redisson_channel(holder.key());
    co_await holder.lock(30s);

    clock_type::time_point acquired_at{};
    asio::steady_timer bell(io);
    int done = 0;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await waiter.lock();
          acquired_at = clock_type::now();
          ++done;
          bell.cancel();
        },
        asio::detached);
    const bool asleep = co_await waiter_asleep(waiter_client, redisson.raw(), channel, 2);
    RLOCK_CO_ASSERT(asleep);
    subscribe(subscriber, channel);
    EXPECT_EQ(done, 0);

    auto forced = redisson.force_unlock(holder.key());
    const auto forced_at = clock_type::now();
    EXPECT_EQ(forced.integer, 1) << rlock::test::describe(forced);
    auto message = subscriber.read_push(5s);
    EXPECT_TRUE(is_message(message, channel, "0")) << rlock::test::describe(message);
    co_await wait_until(
        bell, [&] { return done >= 1; }, 10s);
    RLOCK_CO_ASSERT(done == 1);
    EXPECT_LT(acquired_at - forced_at, 1s);
    EXPECT_EQ(waiter.last_wake(), rlock::wake_reason::notification);
    EXPECT_TRUE(co_await waiter.is_held());
    EXPECT_FALSE(co_await holder.is_held());
    // The old holder lost it: its unlock is refused.
    bool refused = false;
    try {
      co_await holder.unlock();
    } catch (const boost::system::system_error& e) {
      refused = e.code() == rlock::errc::not_owner;
    }
    EXPECT_TRUE(refused);
    co_await waiter.unlock();
    // Nothing left to force.
    auto again = redisson.force_unlock(holder.key());
    EXPECT_EQ(again.integer, 0) << rlock::test::describe(again);
    co_await holder_client.close();
    co_await waiter_client.close();
  });
}

TEST(interop, a_local_handoff_leaves_a_valid_redisson_lock_and_publishes_within_its_bound) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.local_handoff.max_streak = 3;
  cfg.local_handoff.max_time = 60s;  // the count is the bound here
  rlock::client redis(io.get_executor(), cfg);
  foreign_client redisson(cfg.port);
  rlock::test::raw_client listener(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    rlock::reentrant_lock owners[2] = {redis.get_lock("passed"), redis.get_lock("passed")};
    const std::string key(owners[0].key());
    const std::string channel = redisson_channel(key);
    subscribe(listener, channel);
    co_await owners[0].lock();
    for (int round = 0; round < 4; ++round) {
      auto& holder = owners[round % 2];
      auto& waiter = owners[(round + 1) % 2];
      RLOCK_CO_ASSERT(co_await rlock::test::pass_to_sleeping_waiter(redis, holder, waiter));
      // What a Redisson client sees: one owner, one hold, a lease; it cannot take the lock.
      auto hash = redisson.raw().command({"HGETALL", key});
      RLOCK_CO_ASSERT(hash.elements.size() == 2u);
      EXPECT_EQ(hash.elements[0].str, waiter.owner_field());
      EXPECT_EQ(hash.elements[1].str, "1");
      EXPECT_GT(redisson.raw().command_int({"PTTL", key}), 0);
      EXPECT_EQ(redisson.acquire(key).type, resp3::type::number);
      if (round < 3) {
        // Handed over: nothing was published, so a Redisson waiter keeps sleeping.
        EXPECT_EQ(waiter.last_wake(), rlock::wake_reason::handoff) << round;
      } else {
        // The fourth unlock in a row is a real one: it publishes, as Redisson's does.
        EXPECT_EQ(waiter.last_wake(), rlock::wake_reason::notification);
        EXPECT_TRUE(is_message(listener.read_push(5s), channel, "0"));
      }
    }
    EXPECT_EQ(redis.stats().local_handoffs, 3u);
    co_await owners[0].unlock();
    // A Redisson waiter hears the final unlock and takes the lock.
    EXPECT_TRUE(is_message(listener.read_push(5s), channel, "0"));
    EXPECT_TRUE(redisson.acquire(key).is_null());
    EXPECT_TRUE(redisson.release(key).integer == 1);
    EXPECT_TRUE(is_message(listener.read_push(5s), channel, "0"));  // Redisson's own unlock
    // Five unlocks of ours, two published: the three handoffs published nothing.
    bool more = true;
    try {
      (void)listener.read_push(200ms);
    } catch (const std::exception&) {
      more = false;
    }
    EXPECT_FALSE(more);
    co_await redis.close();
  });
}

TEST(interop, unlock_latch_is_redissons_and_a_retry_gets_the_first_answer) {
  // The latch key, Redisson's layout.
  EXPECT_EQ(rlock::detail::unlock_latch("account", "00ff"), "redisson_unlock_latch:{account}:00ff");
  EXPECT_EQ(rlock::detail::unlock_latch("{tag}x", "00ff"), "redisson_unlock_latch:{tag}x:00ff");
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  const std::string ours(rlock::detail::script_source(rlock::detail::script::release));
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    // rlock's release and Redisson's answer the same way, a retry with the same request id
    // returning the first attempt's answer.
    for (const std::string_view script : {std::string_view(ours), redisson_latched_release}) {
      auto lock = redis.get_lock("account");
      co_await lock.lock(30s);
      const std::string channel = redisson_channel(lock.key());
      const std::string latch = rlock::detail::unlock_latch(lock.key(), "0123456789abcdef");
      auto release = [&] {
        return raw.command({"EVAL", script, "3", lock.key(), channel, latch, "0", "30000",
                            lock.owner_field(), "publish", "10000"});
      };
      EXPECT_EQ(release().integer, 1);
      const auto retried = release();
      EXPECT_FALSE(retried.is_null()) << "a retried unlock must not say not_owner";
      EXPECT_EQ(retried.integer, 1);
      raw.command({"DEL", latch});
      EXPECT_TRUE(release().is_null());  // a new attempt (latch gone) finds it not held
    }
    // rlock deletes its latches once their answers are in, in batches (latch_sweeper): at most
    // max_batch wait at any time, and none longer than max_delay.
    using rlock::detail::latch_sweeper;
    auto lock = redis.get_lock("latched");
    const auto latches_left = [&] {
      return raw.command({"KEYS", "redisson_unlock_latch:{" + std::string(lock.key()) + "}:*"})
          .elements.size();
    };
    co_await lock.lock();
    co_await lock.unlock();
    EXPECT_EQ(redis.activity().latches, 1u);  // waits for its batch
    EXPECT_EQ(latches_left(), 1u);
    std::size_t most = 0;
    for (std::size_t i = 0; i < 2 * latch_sweeper::max_batch; ++i) {
      co_await lock.lock();
      co_await lock.unlock();
      most = std::max(most, redis.activity().latches);
    }
    EXPECT_LT(most, latch_sweeper::max_batch);
    // The last batch goes out max_delay after its first latch. No event says when: polled,
    // bounded.
    asio::steady_timer tick(io);
    for (int i = 0; i < 200 && redis.activity().latches != 0; ++i) {
      tick.expires_after(latch_sweeper::max_delay / 2);
      co_await tick.async_wait(asio::use_awaitable);
    }
    EXPECT_EQ(redis.activity().latches, 0u);
    (void)co_await lock.is_locked();  // the DEL went out before it
    EXPECT_EQ(latches_left(), 0u);
    co_await redis.close();
  });
}

TEST(interop, fenced_tokens_are_one_sequence_with_redissons_rfencedlock) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  foreign_client redisson(cfg.port);
  auto pair = [](const resp3::value& v) {
    return v.type == resp3::type::array && v.elements.size() == 2u
               ? std::pair{v.elements[0].integer, v.elements[1].integer}
               : std::pair<std::int64_t, std::int64_t>{0, 0};
  };
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_fenced_lock("fenced");
    // Redisson first: token 1, and 2 on re-entry.
    EXPECT_EQ(pair(redisson.fenced_acquire(lock.key())),
              (std::pair<std::int64_t, std::int64_t>{-1, 1}));
    EXPECT_EQ(pair(redisson.fenced_acquire(lock.key())).second, 2);
    EXPECT_EQ(lock.token_key(), "redisson_lock_token:{" + std::string(lock.key()) + "}");
    EXPECT_EQ(co_await lock.try_lock(), std::nullopt);  // busy: {pttl, -1} decoded
    EXPECT_EQ(co_await lock.current_token(), 2);
    // Our waiter sleeps on the channel; Redisson's final release wakes it; it takes token 3.
    std::optional<std::int64_t> ours;
    bool done = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          ours = co_await lock.try_lock(5s);
          done = true;
        },
        asio::detached);
    EXPECT_TRUE(co_await waiter_asleep(redis, redisson.raw(), redisson_channel(lock.key()), 3));
    EXPECT_EQ(redisson.release(lock.key()).integer, 0);
    EXPECT_EQ(redisson.release(lock.key()).integer, 1);
    co_await rlock::test::poll_until([&] { return done; });
    EXPECT_EQ(ours, std::optional<std::int64_t>(3));
    EXPECT_EQ(lock.last_wake(), rlock::wake_reason::notification);
    // Ours held: Redisson's acquire is busy, with our PTTL and no token.
    const auto busy = pair(redisson.fenced_acquire(lock.key()));
    EXPECT_GT(busy.first, 0);
    EXPECT_EQ(busy.second, -1);
    co_await lock.unlock();
    EXPECT_EQ(pair(redisson.fenced_acquire(lock.key())).second, 4);
    EXPECT_EQ(co_await lock.current_token(), 4);
    EXPECT_EQ(redisson.release(lock.key()).integer, 1);
    co_await redis.close();
  });
}

/// config::fenced_lock's token_idle_ttl on a name Redisson also fences: while the counter lives,
/// both sides' tokens are one growing sequence (Redisson's INCR continues from our clocked
/// token); once it expired, Redisson's INCR starts again at 1. Why the setting must stay 0 on a
/// name any Redisson client fences (config.hpp, docs/guide/fenced.md).
TEST(interop, clocked_fenced_tokens_continue_redissons_sequence_until_the_counter_expires) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.fenced_lock.token_idle_ttl = 10s;
  rlock::client redis(io.get_executor(), cfg);
  foreign_client redisson(cfg.port);
  auto token_of = [](const resp3::value& v) {
    return v.type == resp3::type::array && v.elements.size() == 2u ? v.elements[1].integer : 0;
  };
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_fenced_lock("fenced-clocked");
    EXPECT_EQ(token_of(redisson.fenced_acquire(lock.key())), 1);
    EXPECT_EQ(redisson.release(lock.key()).integer, 1);
    const std::int64_t ours = co_await lock.lock();
    EXPECT_GT(ours, 1);
    co_await lock.unlock();
    // Redisson's acquire increments our counter, TTL and all (INCR keeps a key's TTL).
    EXPECT_EQ(token_of(redisson.fenced_acquire(lock.key())), ours + 1);
    EXPECT_EQ(redisson.release(lock.key()).integer, 1);
    const std::int64_t later = co_await lock.lock();
    EXPECT_GT(later, ours + 1);
    co_await lock.unlock();
    // The counter expires: Redisson's next token goes back to 1, below ours.
    redisson.raw().command({"PEXPIRE", lock.token_key(), "1"});
    EXPECT_TRUE(co_await rlock::test::poll_until([&] {
      return redisson.raw().command_int({"EXISTS", lock.token_key()}) == 0;
    }));
    EXPECT_EQ(token_of(redisson.fenced_acquire(lock.key())), 1);
    EXPECT_EQ(redisson.release(lock.key()).integer, 1);
    co_await redis.close();
  });
}

}  // namespace interop_test

// --- Redis Cluster: Redisson's sharded pub/sub (SPUBLISH in its scripts, SSUBSCRIBE) ----------

namespace interop_test {

rlock::test::cluster_topology& interop_cluster() {
  static rlock::test::cluster_topology cluster(3, 0);
  return cluster;
}

/// A client config for the cluster, with the running test's own key prefix.
rlock::config interop_cluster_config() {
  rlock::config cfg;
  cfg.cluster.nodes = interop_cluster().seeds();
  cfg.key_prefix = rlock::test::unique_prefix();
  return cfg;
}

TEST(interop, cluster_foreign_sharded_unlock_wakes_our_waiter) {
  auto& cluster = interop_cluster();
  asio::io_context io;
  rlock::client redis(io.get_executor(), interop_cluster_config());
  auto lock = redis.get_lock("account");
  const auto owner = cluster.owner_of(rlock::detail::key_slot(lock.key()));
  // Redisson in cluster mode: its client talks to the key's master, its release publishes
  // with `spublish` (the command is its ARGV[4]).
  foreign_client redisson(owner);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    RLOCK_CO_ASSERT(redisson.acquire(lock.key(), 30'000).is_null());
    int done = 0;
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await lock.lock();
          ++done;
          bell.cancel();
        },
        asio::detached);
    EXPECT_TRUE(co_await rlock::test::poll_until([&] {
      auto n = redisson.raw().command({"PUBSUB", "SHARDNUMSUB", redisson_channel(lock.key())});
      return redis.stats().acquire_attempts >= 2 && n.elements.size() == 2u &&
             n.elements[1].integer == 1;
    }));
    const auto owner_field = redisson.field();
    const auto channel = redisson_channel(lock.key());
    const std::string latch =
        "redisson_unlock_latch:{" + std::string(lock.key()) + "}:0123456789abcdef0123456789abcdef";
    auto released =
        redisson.raw().command({"EVAL", redisson_latched_release, "3", lock.key(), channel, latch,
                                "0", "30000", owner_field, "spublish", "10000"});
    EXPECT_EQ(released.integer, 1) << rlock::test::describe(released);
    co_await wait_until(
        bell, [&] { return done >= 1; }, 10s);
    RLOCK_CO_ASSERT(done == 1);
    EXPECT_EQ(lock.last_wake(), rlock::wake_reason::notification);
    EXPECT_EQ(redis.stats().expiry_wakeups, 0u);
    co_await lock.unlock();
    co_await redis.close();
  });
}

TEST(interop, cluster_our_unlock_wakes_a_foreign_sharded_subscriber) {
  auto& cluster = interop_cluster();
  asio::io_context io;
  rlock::client redis(io.get_executor(), interop_cluster_config());
  auto lock = redis.get_lock("account");
  const auto owner = cluster.owner_of(rlock::detail::key_slot(lock.key()));
  rlock::test::raw_client subscriber(owner);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    const auto channel = redisson_channel(lock.key());
    subscriber.send({"SSUBSCRIBE", channel});
    auto confirm = subscriber.read_push(5s);
    EXPECT_EQ(confirm.elements.size(), 3u) << rlock::test::describe(confirm);
    EXPECT_EQ(confirm.elements[0].str, "ssubscribe");
    co_await lock.lock();
    // Redisson's own layout on the key's master.
    auto holds = subscriber.command({"HGET", lock.key(), lock.owner_field()});
    EXPECT_EQ(holds.str, "1") << rlock::test::describe(holds);
    co_await lock.unlock();
    auto message = subscriber.read_push(5s);
    RLOCK_CO_ASSERT(message.elements.size() == 3u);
    EXPECT_EQ(message.elements[0].str, "smessage");
    EXPECT_EQ(message.elements[1].str, channel);
    EXPECT_EQ(message.elements[2].str, "0");
    co_await redis.close();
  });
}

TEST(interop, non_reentrant_locks_refuse_their_holder_on_both_sides) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  foreign_client redisson(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_non_reentrant_lock("single");
    // Redisson holds it: we wait like any other owner; its own re-acquire is refused.
    RLOCK_CO_ASSERT(redisson.non_reentrant_acquire(lock.key()).is_null());
    EXPECT_FALSE(co_await lock.try_lock());
    const auto again = redisson.non_reentrant_acquire(lock.key());
    EXPECT_TRUE(again.is_error());
    EXPECT_NE(again.str.find("NON_REENTRANT_REACQUIRE"), std::string::npos);
    EXPECT_EQ(redisson.release(lock.key()).integer, 1);
    // We hold it: Redisson waits on it as on any lock.
    co_await lock.lock();
    EXPECT_EQ(redisson.non_reentrant_acquire(lock.key()).type, resp3::type::number);
    EXPECT_EQ(redisson.raw()
                  .command({"HGET", std::string(lock.key()), std::string(lock.owner_field())})
                  .str,
              "1");
    co_await lock.unlock();
    co_await redis.close();
  });
}

TEST(interop, our_fair_unlock_tells_a_redisson_waiter_at_the_head_on_its_own_channel) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  foreign_client redisson(cfg.port);
  rlock::test::raw_client subscriber(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_fair_lock("fifo");
    co_await lock.lock();
    const auto channel = redisson.fair_channel(lock.key());
    subscribe(subscriber, channel);
    const auto queued = redisson.fair_acquire(lock.key());
    EXPECT_EQ(queued.type, resp3::type::number);  // queued behind us
    co_await lock.unlock();
    // Redisson's protocol for a Redisson waiter: "0" on its channel, then its own acquire.
    auto message = subscriber.read_push(5s);
    EXPECT_TRUE(is_message(message, channel, "0")) << rlock::test::describe(message);
    EXPECT_TRUE(redisson.fair_acquire(lock.key()).is_null());
    const auto key = std::string(lock.key());
    EXPECT_EQ(redisson.raw().command({"HGET", key, redisson.field()}).str, "1");
    EXPECT_EQ(redisson.raw().command_int({"LLEN", "redisson_lock_queue:{" + key + "}"}), 0);
    EXPECT_EQ(redisson.fair_release(lock.key()).integer, 1);
    co_await redis.close();
  });
}

TEST(interop, a_redisson_fair_unlock_wakes_our_waiter_which_acquires) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  foreign_client redisson(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_fair_lock("fifo-in");
    RLOCK_CO_ASSERT(redisson.fair_acquire(lock.key()).is_null());
    bool got = false;
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          got = co_await lock.try_lock(10s);
          bell.cancel();
        },
        asio::detached);
    const auto waiter_channel =
        redisson_channel(lock.key()) + ":" + std::string(lock.owner_field());
    // Subscribed before its one attempt: asleep once that attempt has queued it.
    const bool asleep = co_await waiter_asleep(redis, redisson.raw(), waiter_channel, 1);
    RLOCK_CO_ASSERT(asleep);
    const auto queue = "redisson_lock_queue:{" + std::string(lock.key()) + "}";
    RLOCK_CO_ASSERT(co_await rlock::test::poll_until([&] {
      return redisson.raw().command_int({"LLEN", queue}) == 1;
    }));
    EXPECT_EQ(redisson.fair_release(lock.key()).integer, 1);
    co_await wait_until(
        bell, [&] { return got; }, 10s);
    EXPECT_TRUE(got);
    EXPECT_EQ(lock.last_wake(), rlock::wake_reason::notification);
    EXPECT_EQ(redis.stats().expiry_wakeups, 0u);
    co_await lock.unlock();
    co_await redis.close();
  });
}

TEST(interop, our_handoff_by_push_leaves_a_fair_lock_redissons_scripts_accept) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client holder_client(io.get_executor(), cfg);
  rlock::client waiter_client(io.get_executor(), cfg);
  foreign_client redisson(cfg.port);
  rlock::test::raw_client subscriber(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await holder_client.connect();
    co_await waiter_client.connect();
    auto holder = holder_client.get_fair_lock("mixed");
    auto waiter = waiter_client.get_fair_lock("mixed");
    const auto key = std::string(holder.key());
    co_await holder.lock();
    bool got = false;
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await waiter.lock();
          got = true;
          bell.cancel();
        },
        asio::detached);
    const bool asleep = co_await rlock::test::until_asleep(waiter_client, waiter, 1);
    RLOCK_CO_ASSERT(asleep);
    // A Redisson waiter behind ours.
    subscribe(subscriber, redisson.fair_channel(key));
    EXPECT_EQ(redisson.fair_acquire(key).type, resp3::type::number);
    co_await holder.unlock();
    co_await wait_until(
        bell, [&] { return got; }, 10s);
    RLOCK_CO_ASSERT(got);
    EXPECT_EQ(waiter.last_wake(), rlock::wake_reason::handoff);
    // What our waiter's own acquire would have left: its hold, once, with a lease; Redisson's
    // waiter still queued, and refused by Redisson's script while the lock is held.
    EXPECT_EQ(redisson.raw().command({"HGET", key, std::string(waiter.owner_field())}).str, "1");
    EXPECT_EQ(redisson.raw().command_int({"HLEN", key}), 1);
    EXPECT_GT(redisson.raw().command_int({"PTTL", key}), 0);
    EXPECT_EQ(redisson.raw().command_int({"LLEN", "redisson_lock_queue:{" + key + "}"}), 1);
    EXPECT_EQ(redisson.fair_acquire(key).type, resp3::type::number);
    co_await waiter.unlock();
    auto message = subscriber.read_push(5s);
    EXPECT_TRUE(is_message(message, redisson.fair_channel(key), "0"))
        << rlock::test::describe(message);
    EXPECT_TRUE(redisson.fair_acquire(key).is_null());
    EXPECT_EQ(redisson.fair_release(key).integer, 1);
    co_await holder_client.close();
    co_await waiter_client.close();
  });
}

TEST(interop, spin_locks_share_redissons_hash_and_notice_a_silent_release_by_polling) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  foreign_client redisson(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_spin_lock("spinning");
    // RSpinLock's acquire is RLock's: Redisson holds it, we poll.
    RLOCK_CO_ASSERT(redisson.acquire(lock.key()).is_null());
    bool got = false;
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          got = co_await lock.try_lock(10s);
          bell.cancel();
        },
        asio::detached);
    RLOCK_CO_ASSERT(
        co_await rlock::test::poll_until([&] { return redis.stats().acquire_attempts >= 3; }));
    EXPECT_EQ(redisson.spin_release(lock.key()).integer, 1);  // publishes nothing
    co_await wait_until(
        bell, [&] { return got; }, 10s);
    EXPECT_TRUE(got);
    EXPECT_EQ(lock.last_wake(), rlock::wake_reason::expiry);  // found free by its own poll
    // We hold it: Redisson's acquire is refused, and our release lets it in.
    EXPECT_EQ(redisson.acquire(lock.key()).type, resp3::type::number);
    co_await lock.unlock();
    EXPECT_TRUE(redisson.acquire(lock.key()).is_null());
    EXPECT_EQ(redisson.spin_release(lock.key()).integer, 1);
    co_await redis.close();
  });
}

TEST(interop, read_write_locks_share_readers_and_exclude_writers_with_redisson_both_ways) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  foreign_client redisson(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto rw = redis.get_read_write_lock("rw");
    const auto key = std::string(rw.read_lock().key());
    // A Redisson reader: we share it, and cannot write.
    RLOCK_CO_ASSERT(redisson.read_acquire(key).is_null());
    EXPECT_TRUE(co_await rw.read_lock().try_lock());
    EXPECT_FALSE(co_await redis.get_read_write_lock("rw").write_lock().try_lock());
    // Our read hold is Redisson's layout: its timeout key, where Redisson's unlock looks for it.
    auto& raw = redisson.raw();
    const auto our_timeout =
        "{" + key + "}:" + std::string(rw.read_lock().owner_field()) + ":rwlock_timeout:1";
    EXPECT_GT(raw.command_int({"PTTL", our_timeout}), 0);
    // Redisson's read unlock sees our hold and keeps the lock for it (0); a Redisson writer
    // waits for us.
    EXPECT_EQ(redisson.read_release(key).integer, 0);
    EXPECT_EQ(redisson.write_acquire(key).type, resp3::type::number);
    co_await rw.read_lock().unlock();
    EXPECT_EQ(raw.command_int({"EXISTS", key, our_timeout}), 0);
    // A Redisson writer: we neither read nor write; its unlock ("1") wakes our readers, who
    // share the lock after it.
    RLOCK_CO_ASSERT(redisson.write_acquire(key).is_null());
    EXPECT_FALSE(co_await rw.read_lock().try_lock());
    int reading = 0;
    asio::steady_timer bell(io);
    std::vector<rlock::read_lock> readers{rw.read_lock(),
                                          redis.get_read_write_lock("rw").read_lock()};
    for (auto& r : readers) {
      asio::co_spawn(
          io,
          [&]() -> asio::awaitable<void> {
            if (co_await r.try_lock(10s)) ++reading;
            bell.cancel();
          },
          asio::detached);
    }
    RLOCK_CO_ASSERT(co_await waiter_asleep(redis, raw, "redisson_rwlock:{" + key + "}", 6));
    EXPECT_EQ(redisson.write_release(key).integer, 1);
    co_await wait_until(
        bell, [&] { return reading == 2; }, 10s);
    EXPECT_EQ(reading, 2);
    for (auto& r : readers) EXPECT_EQ(r.last_wake(), rlock::wake_reason::notification);
    for (auto& r : readers) co_await r.unlock();
    // Our writer: Redisson reads and writes neither; our write unlock publishes Redisson's "1"
    // on its channel, and a Redisson reader then takes it.
    rlock::test::raw_client subscriber(cfg.port);
    subscribe(subscriber, "redisson_rwlock:{" + key + "}");
    co_await rw.write_lock().lock();
    EXPECT_EQ(raw.command({"HGET", key, "mode"}).str, "write");
    EXPECT_EQ(redisson.read_acquire(key).type, resp3::type::number);
    EXPECT_EQ(redisson.write_acquire(key).type, resp3::type::number);
    co_await rw.write_lock().unlock();
    auto message = subscriber.read_push(5s);
    EXPECT_TRUE(is_message(message, "redisson_rwlock:{" + key + "}", "1"))
        << rlock::test::describe(message);
    EXPECT_TRUE(redisson.read_acquire(key).is_null());
    EXPECT_EQ(redisson.read_release(key).integer, 1);
    co_await redis.close();
  });
}

TEST(interop, a_waiting_writers_mark_holds_our_readers_back_and_redissons_scripts_ignore_it) {
  // rw_priority::writers against Redisson's scripts: what each side sees of the other.
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  foreign_client redisson(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto reader = redis.get_read_write_lock("wf").read_lock();
    auto arriving = redis.get_read_write_lock("wf").read_lock();
    auto writer = redis.get_read_write_lock("wf").write_lock();
    const auto key = std::string(reader.key());
    const auto marks = "{" + key + "}:rlock_writers";
    auto& raw = redisson.raw();
    co_await reader.lock();
    bool wrote = false;
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await writer.lock();
          wrote = true;
          bell.cancel();
        },
        asio::detached);
    RLOCK_CO_ASSERT(co_await waiter_asleep(redis, raw, "redisson_rwlock:{" + key + "}", 3));
    EXPECT_EQ(raw.command_int({"ZCARD", marks}), 1);
    // Our arriving reader waits behind the mark; Redisson's read script does not know it and
    // enters (so Redisson's readers can still keep our writer out).
    EXPECT_FALSE(co_await arriving.try_lock());
    RLOCK_CO_ASSERT(redisson.read_acquire(key).is_null());
    // The lock hash is Redisson's layout: the mark lives beside it, never in it.
    EXPECT_EQ(raw.command_int({"HLEN", key}), 3);  // mode, our reader, Redisson's reader
    EXPECT_EQ(raw.command({"HGET", key, "mode"}).str, "read");
    EXPECT_EQ(redisson.read_release(key).integer, 0);  // ours still reads
    co_await reader.unlock();
    co_await wait_until(
        bell, [&] { return wrote; }, 10s);
    RLOCK_CO_ASSERT(wrote);
    EXPECT_EQ(writer.last_wake(), rlock::wake_reason::notification);
    EXPECT_EQ(raw.command_int({"EXISTS", marks}), 0);
    // Redisson's write script excludes our writer as before, and our write unlock lets it in.
    EXPECT_EQ(redisson.write_acquire(key).type, resp3::type::number);
    co_await writer.unlock();
    RLOCK_CO_ASSERT(redisson.write_acquire(key).is_null());
    EXPECT_EQ(redisson.write_release(key).integer, 1);
    // A waiting Redisson writer leaves nothing on the server: our readers cannot see it, and
    // enter as Redisson's own readers would.
    co_await reader.lock();
    EXPECT_EQ(redisson.write_acquire(key).type, resp3::type::number);
    EXPECT_EQ(raw.command_int({"EXISTS", marks}), 0);
    EXPECT_TRUE(co_await arriving.try_lock());
    co_await arriving.unlock();
    co_await reader.unlock();
    RLOCK_CO_ASSERT(redisson.write_acquire(key).is_null());
    EXPECT_EQ(redisson.write_release(key).integer, 1);
    EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
    // Nor does Redisson's write script know the writers' queue: a free lock whose turn is a
    // queued rlock writer's (of another process, its mark live) is not ours to take, but
    // Redisson's writer takes it.
    const auto queue = "{" + key + "}:rlock_writer_queue";
    raw.command({"ZADD", marks, "99999999999999", "elsewhere:1:write"});
    raw.command({"ZADD", queue, "1", "elsewhere:1:write"});
    EXPECT_FALSE(co_await writer.try_lock());
    RLOCK_CO_ASSERT(redisson.write_acquire(key).is_null());
    EXPECT_EQ(redisson.write_release(key).integer, 1);
    EXPECT_EQ(raw.command_int({"ZCARD", queue}), 1);
    raw.command({"DEL", marks, queue});
    EXPECT_TRUE(co_await writer.try_lock());
    co_await writer.unlock();
    EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
    co_await redis.close();
  });
}

TEST(interop, a_downgrade_leaves_a_read_write_lock_redissons_scripts_accept) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  foreign_client redisson(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto rw = redis.get_read_write_lock("rw-down");
    const auto key = std::string(rw.read_lock().key());
    auto& raw = redisson.raw();
    // Redisson downgrades (write, read, write unlock): we read beside it.
    RLOCK_CO_ASSERT(redisson.write_acquire(key).is_null());
    RLOCK_CO_ASSERT(redisson.read_acquire(key).is_null());
    EXPECT_FALSE(co_await rw.read_lock().try_lock());
    EXPECT_EQ(redisson.write_release(key).integer, 1);
    EXPECT_EQ(raw.command({"HGET", key, "mode"}).str, "read");
    EXPECT_TRUE(co_await rw.read_lock().try_lock());
    EXPECT_EQ(redisson.read_release(key).integer, 0);
    co_await rw.read_lock().unlock();
    EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
    // We downgrade: Redisson reads beside us after our write unlock, and its read unlock and
    // ours end the lock.
    co_await rw.write_lock().lock();
    co_await rw.read_lock().lock();
    EXPECT_EQ(redisson.read_acquire(key).type, resp3::type::number);
    co_await rw.write_lock().unlock();
    EXPECT_TRUE(redisson.read_acquire(key).is_null());
    EXPECT_EQ(redisson.write_acquire(key).type, resp3::type::number);
    co_await rw.read_lock().unlock();
    EXPECT_EQ(redisson.read_release(key).integer, 1);
    EXPECT_EQ(raw.command_int({"EXISTS", key}), 0);
    co_await redis.close();
  });
}

TEST(interop, a_multi_lock_waits_for_a_redisson_holder_of_a_member_and_excludes_redisson) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client redis(io.get_executor(), cfg);
  foreign_client redisson(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    // A multi-lock is its members' own locks: Redisson's RedissonMultiLock is the same, so
    // each member is shared with Java as any lock of its kind.
    std::vector<rlock::lock_handle> members{redis.get_lock("m1"), redis.get_lock("m2")};
    rlock::multi_lock m(members);
    RLOCK_CO_ASSERT(redisson.acquire(members[1].key()).is_null());
    EXPECT_FALSE(co_await m.try_lock(100ms));
    EXPECT_EQ(redisson.raw().command_int({"EXISTS", std::string(members[0].key())}), 0);
    bool got = false;
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          got = co_await m.try_lock(10s);
          bell.cancel();
        },
        asio::detached);
    RLOCK_CO_ASSERT(
        co_await waiter_asleep(redis, redisson.raw(), redisson_channel(members[1].key()), 4));
    EXPECT_EQ(redisson.release(members[1].key()).integer, 1);  // wakes our member's waiter
    co_await wait_until(
        bell, [&] { return got; }, 10s);
    EXPECT_TRUE(got);
    EXPECT_EQ(redisson.acquire(members[0].key()).type, resp3::type::number);
    EXPECT_EQ(redisson.acquire(members[1].key()).type, resp3::type::number);
    co_await m.unlock();
    EXPECT_TRUE(redisson.acquire(members[0].key()).is_null());
    EXPECT_EQ(redisson.release(members[0].key()).integer, 1);
    co_await redis.close();
  });
}

}  // namespace interop_test
