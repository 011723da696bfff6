#pragma once

// ACL users for tests: docs/guide/tls-acl.md's least-privilege line, and ACL SETUSER with it.
#include "support/raw_client.hpp"

#include <gtest/gtest.h>

#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::test {

/// The least-privilege ACL line for a service whose locks live under `prefix`
/// (docs/guide/tls-acl.md shows it for `svc:`): the lock keys and the names Redisson derives from
/// them (the scripts take the channel, latch and token counter as keys), the unlock channels, and
/// the commands rlock sends, directly or from its scripts.
inline std::string least_privilege_rules(const std::string& prefix) {
  return "resetkeys ~" + prefix + "* ~redisson_lock__channel:{" + prefix +
         "*} ~redisson_unlock_latch:{" + prefix + "*}:* ~redisson_lock_token:{" + prefix +
         "*} resetchannels &redisson_lock__channel:{" + prefix +
         "*} -@all +hello +ping +select +client|setname +client|kill +client|tracking +script|load "
         "+evalsha +exists +hexists +hget +get +pttl +del +subscribe +unsubscribe +hincrby "
         "+pexpire +set +incr +publish";
}

/// What fair locks need beyond that line (docs/guide/tls-acl.md): the queue, the deadlines and the
/// handoff registrations as keys, each waiter's own channel (`<unlock channel>:<owner field>`),
/// and the commands their scripts run.
inline std::string fair_lock_rules(const std::string& prefix) {
  return "~redisson_lock_queue:{" + prefix + "*} ~redisson_lock_timeout:{" + prefix +
         "*} ~rlock_fair_handoff:{" + prefix + "*} &redisson_lock__channel:{" + prefix +
         "*}:* +time +hset +hdel +lindex +lpop +rpush +lrange +lrem +zscore +zadd +zrem +zrange "
         "+zincrby";
}

/// What read-write locks need beyond the least-privilege line (docs/guide/tls-acl.md): the per-hold
/// timeout keys `{<key>}:<owner field>:rwlock_timeout:<n>` (and their base `{<key>}`, which the
/// read unlock names), the channel `redisson_rwlock:{<key>}` (a channel, and a key to the
/// scripts, as Redisson passes it), the waiting writers' marks `{<key>}:rlock_writers` and queue
/// `{<key>}:rlock_writer_queue`, and their scripts' commands.
inline std::string read_write_lock_rules(const std::string& prefix) {
  return "~{" + prefix + "*}* ~redisson_rwlock:{" + prefix + "*} &redisson_rwlock:{" + prefix +
         "*} +hset +hdel +hlen +hkeys +time +zadd +zrem +zrange +zscore +zrangebyscore "
         "+zremrangebyscore";
}

/// What semaphores need beyond the least-privilege line (docs/guide/tls-acl.md): their holds
/// `{<key>}:timeout`, hold sizes, total and channel (a key to the scripts too), and the commands
/// of their scripts.
inline std::string semaphore_rules(const std::string& prefix) {
  return "~{" + prefix + "*}* ~rlock_semaphore_permits:{" + prefix + "*} ~rlock_semaphore_total:{" +
         prefix + "*} ~redisson_sc:{" + prefix + "*} &redisson_sc:{" + prefix +
         "*} +time +incrby +decrby +zadd +zrem +zscore +zrange +zrangebyscore +hset +hdel";
}

/// What a fenced quorum lock needs beyond the least-privilege line on each node
/// (docs/guide/tls-acl.md): its token counter, a hash its script writes.
inline std::string quorum_token_rules(const std::string& prefix) {
  return "~rlock_quorum_token:{" + prefix + "*} +hset";
}

/// What Cluster mode sends beyond that line (docs/guide/cluster.md: TLS and ACL).
inline constexpr std::string_view cluster_rules =
    " +cluster|shards +cluster|slots +asking +ssubscribe +sunsubscribe +spublish";

/// ACL SETUSER `user` on >pw with `rules` (split on spaces).
inline void set_user(raw_client& raw, const std::string& user, const std::string& rules) {
  std::vector<std::string> words{"ACL", "SETUSER", user, "reset", "on", ">pw"};
  std::istringstream in(rules);
  for (std::string w; in >> w;) words.push_back(w);
  const std::vector<std::string_view> views(words.begin(), words.end());
  const auto reply = raw.command(std::span<const std::string_view>(views));
  ASSERT_FALSE(reply.is_error()) << reply.str;
}

}  // namespace rlock::test
