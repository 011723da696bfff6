#pragma once

// Redisson's reentrant lock scripts, verbatim from the wire document
// (docs/design/wire-compatibility.md): what a Java RLock, and each member of a RedissonRedLock,
// runs. The interop tests play them.
#include <string_view>

namespace rlock::test {

// KEYS = [name], ARGV = [lease_ms, owner_field]
constexpr std::string_view redisson_acquire = R"lua(
if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);
)lua";

// KEYS = [name, channel], ARGV = [message "0", lease_ms, owner_field]
constexpr std::string_view redisson_release = R"lua(
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2]);
  return 0;
else
  redis.call('del', KEYS[1]);
  redis.call('publish', KEYS[2], ARGV[1]);
  return 1;
end;
)lua";

// Redisson's RFencedLock (RedissonFencedLock.tryLockInnerAsync, the form returning the token):
// KEYS = [name, token counter], ARGV = [lease_ms, owner_field]. {-1, token} | {pttl, -1}.
constexpr std::string_view redisson_fenced_acquire = R"lua(
if (redis.call('exists', KEYS[1]) == 0 or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
  local token = redis.call('incr', KEYS[2]);
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return {-1, token};
end;
return {redis.call('pttl', KEYS[1]), -1};
)lua";

}  // namespace rlock::test
