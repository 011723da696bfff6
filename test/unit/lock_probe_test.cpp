// Reading a lock's keys (rlock::inspect's sans-I/O half), without a server: the answers are
// built by hand, each named by the command it answers, and handed to the probe in the order its
// registered rows ask them.
#include "inspect/lock_probe.hpp"

#include "names/names.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <rlock/error.hpp>
#include <string>
#include <vector>

namespace {

using rlock::hold_role;
using rlock::key_kind;
using rlock::detail::resp3::type;
using reply = rlock::detail::resp3::value;
using std::chrono::milliseconds;

reply str(std::string s, type t = type::blob_string) {
  reply r;
  r.type = t;
  r.str = std::move(s);
  return r;
}

reply num(std::int64_t v) {
  reply r;
  r.type = type::number;
  r.integer = v;
  return r;
}

reply hash(std::vector<std::pair<std::string, std::string>> fields, type t = type::map) {
  reply r;
  r.type = t;
  for (auto& [k, v] : fields) {
    r.elements.push_back(str(k));
    r.elements.push_back(str(v));
  }
  return r;
}

reply numsub(std::int64_t n) {
  reply r;
  r.type = type::array;
  r.elements = {str("channel"), num(n)};
  return r;
}

reply list(std::vector<std::string> items) {
  reply r;
  r.type = type::array;
  for (auto& i : items) r.elements.push_back(str(std::move(i)));
  return r;
}

/// ZRANGE … WITHSCORES as RESP3 answers it: [member, score] pairs, the score a double.
reply scored(std::vector<std::pair<std::string, double>> members) {
  reply r;
  r.type = type::array;
  for (auto& [member, score] : members) {
    reply d;
    d.type = type::double_type;
    d.real = score;
    reply pair;
    pair.type = type::array;
    pair.elements = {str(std::move(member)), d};
    r.elements.push_back(std::move(pair));
  }
  return r;
}

reply wrongtype() { return str("WRONGTYPE Operation against a key", type::simple_error); }

/// The probe's eighteen answers for a key of `key_type`, nothing held; tests change the few they
/// are about. The server's clock: 1 000 000 000 ms.
struct answers {
  explicit answers(std::string key_type) {
    a[0] = str(std::move(key_type), type::simple_string);
    a[1] = hash({});
    a[2] = num(-2);
    a[3] = numsub(0);
    a[5] = list({});
    a[6] = list({});
    a[7] = hash({});
    a[8] = list({"1000000", "0"});
    a[9] = numsub(0);
    a[11] = list({});
    a[12] = hash({});
    a[14] = numsub(0);
    a[15] = numsub(0);
    a[16] = list({});
    a[17] = list({});
    if (a[0].str == "string") a[1] = wrongtype();
    if (a[0].str == "hash") a[10] = wrongtype();
  }
  std::vector<reply> a = std::vector<reply>(18);
};

/// What each of the tests' eighteen answers answers (a[i] answers by_index()[i]): the probe's
/// questions for lock "l", whatever order its rows ask them in.
const std::vector<std::vector<std::string>>& by_index() {
  using namespace rlock::detail;
  static const std::vector<std::vector<std::string>> cmds = {
      {"TYPE", "l"},
      {"HGETALL", "l"},
      {"PTTL", "l"},
      {"PUBSUB", "NUMSUB", unlock_channel("l")},
      {"GET", token_counter("l")},
      {"LRANGE", probe_tagged(fair_queue_prefix, "l"), "0", "-1"},
      {"ZRANGE", probe_tagged(fair_timeout_prefix, "l"), "0", "-1", "WITHSCORES"},
      {"HGETALL", probe_tagged(fair_handoff_prefix, "l")},
      {"TIME"},
      {"PUBSUB", "NUMSUB", probe_name(&append_rwlock_channel, "l")},
      {"GET", "l"},
      {"ZRANGE", probe_name(&append_semaphore_holds, "l"), "0", "-1", "WITHSCORES"},
      {"HGETALL", probe_tagged(semaphore_sizes_prefix, "l")},
      {"GET", probe_tagged(semaphore_total_prefix, "l")},
      {"PUBSUB", "NUMSUB", probe_name(&append_semaphore_channel, "l")},
      {"PUBSUB", "NUMSUB", probe_name(&append_latch_channel, "l")},
      {"ZRANGE", probe_name(&append_writer_queue, "l"), "0", "-1", "WITHSCORES"},
      {"ZRANGE", probe_name(&append_writer_marks, "l"), "0", "-1", "WITHSCORES"},
  };
  return cmds;
}

/// The tests' answers in probe_commands' order (fewer than all: as they are, for the tests of
/// missing answers).
std::vector<reply> ordered(const std::vector<reply>& a) {
  const auto& mine = by_index();
  if (a.size() < mine.size()) return a;
  std::vector<reply> out;
  for (const auto& c : rlock::detail::probe_commands("l", false)) {
    const auto at = std::find(mine.begin(), mine.end(), c);
    EXPECT_NE(at, mine.end()) << "a question these tests do not answer: " << c[0] << " "
                              << c.back();
    out.push_back(at == mine.end() ? reply{} : a[static_cast<std::size_t>(at - mine.begin())]);
  }
  return out;
}

rlock::lock_info probe(const std::vector<reply>& a) {
  rlock::lock_info info;
  info.name = "l";
  info.key = "l";
  const auto f = rlock::detail::read_probe(ordered(a), info);
  EXPECT_FALSE(f) << f.text();
  return info;
}

TEST(lock_probe, asks_every_key_of_every_kind_in_the_lock_slot) {
  auto cmds = rlock::detail::probe_commands("l", false);
  // The common questions first, in probe_common's order; then the rows'.
  ASSERT_GE(cmds.size(), 5U);
  EXPECT_EQ(cmds[0], (std::vector<std::string>{"TYPE", "l"}));
  EXPECT_EQ(cmds[3], (std::vector<std::string>{"TIME"}));
  EXPECT_EQ(cmds[4], (std::vector<std::string>{"GET", "l"}));
  // Every key of every kind is asked once.
  auto expected = by_index();
  std::sort(cmds.begin(), cmds.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(cmds, expected);
  for (const auto& c : cmds) {
    if (c.size() > 1 && c[0] != "PUBSUB") EXPECT_NE(c[1].find("l"), std::string::npos);
  }
  const auto sharded = rlock::detail::probe_commands("l", true);
  EXPECT_EQ(std::count_if(sharded.begin(), sharded.end(),
                          [](const auto& c) { return c.size() > 1 && c[1] == "SHARDNUMSUB"; }),
            4);
  EXPECT_EQ(std::count_if(sharded.begin(), sharded.end(),
                          [](const auto& c) { return c.size() > 1 && c[1] == "NUMSUB"; }),
            0);
}

TEST(lock_probe, owner_fields_with_positive_counts_are_a_lock) {
  auto hs = rlock::detail::lock_holders(hash({{"6f1c-uuid:12", "3"}}));
  ASSERT_TRUE(hs);
  ASSERT_EQ(hs->size(), 1U);
  EXPECT_EQ((*hs)[0].owner, "6f1c-uuid:12");
  EXPECT_EQ((*hs)[0].count, 3);
  // RESP2's flat array reads the same.
  EXPECT_TRUE(rlock::detail::lock_holders(hash({{"u:1", "1"}}, type::array)));
  // Absent key: an empty hash, a free lock.
  auto none = rlock::detail::lock_holders(hash({}));
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(lock_probe, other_hashes_are_not_locks) {
  using rlock::detail::lock_holders;
  EXPECT_FALSE(lock_holders(hash({{"colour", "blue"}})));
  EXPECT_FALSE(lock_holders(hash({{"u:1", "blue"}})));
  EXPECT_FALSE(lock_holders(hash({{"u:1", "0"}})));
  EXPECT_FALSE(lock_holders(hash({{"u:1", "-2"}})));
  EXPECT_FALSE(lock_holders(hash({{"u:", "1"}})));
  EXPECT_FALSE(lock_holders(hash({{":1", "1"}})));
  EXPECT_FALSE(lock_holders(hash({{"u:1x", "1"}})));
  EXPECT_FALSE(lock_holders(hash({{"u:1", "1"}, {"name", "x"}})));
  EXPECT_FALSE(lock_holders(hash({{"mode", "other"}, {"u:1", "1"}})));
  EXPECT_FALSE(lock_holders(str("x")));
  answers a("hash");
  a.a[1] = hash({{"colour", "blue"}});
  const auto info = probe(a.a);
  EXPECT_EQ(info.kind, key_kind::other);
  EXPECT_EQ(info.key_type, "hash");
}

TEST(lock_probe, a_held_fenced_lock) {
  answers a("hash");
  a.a[1] = hash({{"a:1", "2"}});
  a.a[2] = num(1500);
  a.a[3] = numsub(3);
  a.a[4] = str("17");
  const auto info = probe(a.a);
  EXPECT_EQ(info.kind, key_kind::fenced);
  EXPECT_TRUE(info.held());
  EXPECT_EQ(info.token, 17);
  EXPECT_EQ(info.ttl, milliseconds(1500));
  EXPECT_EQ(info.subscribers, 3);
  EXPECT_EQ(info.channel, "redisson_lock__channel:{l}");
  EXPECT_EQ(info.queue_key, "redisson_lock_queue:{l}");
}

TEST(lock_probe, a_free_lock_and_other_keys) {
  const auto free = probe(answers("none").a);
  EXPECT_EQ(free.kind, key_kind::absent);
  EXPECT_FALSE(free.held());
  EXPECT_FALSE(free.ttl);

  answers text("string");
  text.a[10] = str("hello");
  const auto other = probe(text.a);
  EXPECT_EQ(other.kind, key_kind::other);
  EXPECT_EQ(other.key_type, "string");

  answers l("list");
  l.a[1] = wrongtype();
  l.a[10] = wrongtype();
  EXPECT_EQ(probe(l.a).key_type, "list");
}

TEST(lock_probe, a_fair_lock_shows_its_queue_in_order) {
  answers a("hash");
  a.a[1] = hash({{"h:1", "1"}});
  a.a[2] = num(9000);
  a.a[3] = numsub(2);
  a.a[5] = list({"a:2", "b:3"});
  a.a[6] = scored({{"b:3", 1'000'061'000.0}, {"a:2", 1'000'005'000.0}});
  a.a[7] = hash({{"a:2", "30000:60000:7"}, {"h:1", "g:3"}});
  const auto info = probe(a.a);
  EXPECT_EQ(info.kind, key_kind::fair);
  ASSERT_EQ(info.queue.size(), 2U);
  EXPECT_EQ(info.queue[0].owner, "a:2");
  EXPECT_TRUE(info.queue[0].by_push);
  EXPECT_EQ(info.queue[0].deadline_in, milliseconds(5000));
  EXPECT_FALSE(info.queue[1].by_push);
  EXPECT_EQ(info.queue[1].deadline_in, milliseconds(61000));
  // RESP2 alternates members and scores: read the same.
  reply flat;
  flat.type = type::array;
  flat.elements = {str("b:3"), str("1000061000"), str("a:2"), str("1000005000")};
  a.a[6] = flat;
  EXPECT_EQ(probe(a.a).queue[0].deadline_in, milliseconds(5000));
  // A queue with the lock free: still a fair lock.
  answers q("none");
  q.a[5] = list({"a:2"});
  EXPECT_EQ(probe(q.a).kind, key_kind::fair);
}

TEST(lock_probe, a_read_write_lock_shows_its_mode_readers_and_writer) {
  answers a("hash");
  // A writer that downgraded: its write hold and its read hold.
  a.a[1] = hash({{"mode", "write"}, {"u:1:write", "2"}, {"u:1", "1"}});
  a.a[2] = num(9000);
  a.a[9] = numsub(3);
  const auto info = probe(a.a);
  EXPECT_EQ(info.kind, key_kind::read_write);
  EXPECT_EQ(info.mode, hold_role::write);
  ASSERT_EQ(info.holders.size(), 2U);
  EXPECT_EQ(info.holders[0], (rlock::lock_holder{"u:1", 2, hold_role::write}));
  EXPECT_EQ(info.holders[1], (rlock::lock_holder{"u:1", 1, hold_role::read}));
  EXPECT_EQ(info.subscribers, 3);  // the read-write lock's own channel
  EXPECT_EQ(info.channel, "redisson_rwlock:{l}");
}

TEST(lock_probe, a_read_write_lock_shows_its_waiting_writers_in_their_turns_order) {
  answers a("hash");
  a.a[1] = hash({{"mode", "read"}, {"r:1", "1"}});
  a.a[2] = num(9000);
  // Queued b first, then a; c marked without a place (an older rlock); b's mark lapsed.
  a.a[16] = scored({{"b:2:write", 999'000'000.0}, {"a:3:write", 999'500'000.0}});
  a.a[17] = scored({{"b:2:write", 999'999'000.0},
                    {"a:3:write", 1'000'009'000.0},
                    {"c:4:write", 1'000'004'000.0}});
  const auto info = probe(a.a);
  EXPECT_EQ(info.kind, key_kind::read_write);
  ASSERT_EQ(info.writers.size(), 3U);
  EXPECT_EQ(info.writers[0].owner, "b:2");
  EXPECT_EQ(info.writers[0].deadline_in, milliseconds(-1000));
  EXPECT_EQ(info.writers[1].owner, "a:3");
  EXPECT_EQ(info.writers[1].deadline_in, milliseconds(9000));
  EXPECT_EQ(info.writers[2].owner, "c:4");
  EXPECT_EQ(info.writers[2].deadline_in, milliseconds(4000));
  // A free lock that writers wait for (its turn is a writer's): a read-write lock.
  answers f("none");
  f.a[16] = scored({{"a:3:write", 999'500'000.0}});
  f.a[17] = scored({{"a:3:write", 1'000'009'000.0}});
  f.a[9] = numsub(2);
  const auto free = probe(f.a);
  EXPECT_EQ(free.kind, key_kind::read_write);
  EXPECT_FALSE(free.held());
  EXPECT_EQ(free.subscribers, 2);
  ASSERT_EQ(free.writers.size(), 1U);
  // Refused (an ACL without the marks' keys): Redis's words.
  a.a[17] =
      str("NOPERM this user has no permissions to access one of the keys", type::simple_error);
  rlock::lock_info refused;
  const auto failure = rlock::detail::read_probe(ordered(a.a), refused);
  ASSERT_TRUE(failure);
  EXPECT_NE(failure.text().find("ZRANGE"), std::string::npos) << failure.text();
}

TEST(lock_probe, a_semaphore_shows_its_permits_and_holds) {
  answers a("string");
  a.a[10] = str("1");
  a.a[11] = scored({{"u:1", 1'000'030'000.0}, {"u:2", 1'000'005'000.0}});
  a.a[12] = hash({{"u:1", "2"}});
  a.a[13] = str("4");
  a.a[14] = numsub(2);
  const auto info = probe(a.a);
  EXPECT_EQ(info.kind, key_kind::semaphore);
  EXPECT_EQ(info.available, 1);
  EXPECT_EQ(info.total, 4);
  EXPECT_EQ(info.subscribers, 2);
  EXPECT_EQ(info.channel, "redisson_sc:{l}");
  ASSERT_EQ(info.permits.size(), 2U);
  EXPECT_EQ(info.permits[0], (rlock::permit_hold{"u:1", 2, milliseconds(30000)}));
  EXPECT_EQ(info.permits[1], (rlock::permit_hold{"u:2", 1, milliseconds(5000)}));
  EXPECT_TRUE(info.held());
  // Permit ids are 16 bytes on the wire, shown in hex as Redisson shows them; a Java permit
  // taken without a lease (score 922337203685477) never expires.
  const std::string raw_id("\x01\x23\x45\x67\x89\xab\xcd\xef\x00\x11\x22\x33\x44\x55\x66\x77", 16);
  answers j("string");
  j.a[10] = str("0");
  j.a[11] = scored({{raw_id, 922337203685477.0}, {"u:3", 1'000'001'000.0}});
  const auto java = probe(j.a);
  ASSERT_EQ(java.permits.size(), 2U);
  EXPECT_EQ(java.permits[0].id, "0123456789abcdef0011223344556677");
  EXPECT_TRUE(java.permits[0].never_expires);
  EXPECT_FALSE(java.permits[0].expires_in);
  EXPECT_EQ(java.permits[1].expires_in, milliseconds(1000));
  EXPECT_FALSE(java.total);
}

TEST(lock_probe, scores_and_clocks_that_are_no_time_read_as_none_never_overflow) {
  // A fair try_lock with a wait near milliseconds::max() once queued a deadline of about
  // 9.2e18; a foreign writer may store inf or -inf; none of them may overflow the reading.
  const double inf = std::numeric_limits<double>::infinity();
  answers a("hash");
  a.a[1] = hash({{"h:1", "1"}});
  a.a[2] = num(9000);
  a.a[5] = list({"a:1", "b:2", "c:3", "d:4"});
  a.a[6] = scored({{"a:1", 9.3e18}, {"b:2", inf}, {"c:3", -inf}, {"d:4", 1'000'000'500.0}});
  auto info = probe(a.a);
  ASSERT_EQ(info.queue.size(), 4U);
  EXPECT_FALSE(info.queue[0].deadline_in);
  EXPECT_FALSE(info.queue[1].deadline_in);
  EXPECT_FALSE(info.queue[2].deadline_in);
  EXPECT_EQ(info.queue[3].deadline_in, milliseconds(500));
  answers s("string");
  s.a[10] = str("0");
  s.a[11] = scored({{"u:1", -inf}, {"u:2", -1e19}, {"u:3", 999'999'000.0}});
  info = probe(s.a);
  ASSERT_EQ(info.permits.size(), 3U);
  EXPECT_FALSE(info.permits[0].expires_in);
  EXPECT_FALSE(info.permits[1].expires_in);
  EXPECT_EQ(info.permits[2].expires_in, milliseconds(-1000));  // overdue
  // A TIME answer no clock reads as (int64 max seconds, negative, microseconds past a second):
  // no deadlines, no overflow.
  for (const auto& [sec, usec] : {std::pair<std::string, std::string>{"9223372036854775807", "0"},
                                  {"-1", "0"},
                                  {"1000000", "1000000"}}) {
    a.a[8] = list({sec, usec});
    info = probe(a.a);
    ASSERT_EQ(info.queue.size(), 4U);
    EXPECT_FALSE(info.queue[3].deadline_in) << sec << " " << usec;
  }
}

TEST(lock_probe, a_count_with_latch_waiters_is_a_count_down_latch) {
  answers a("string");
  a.a[10] = str("2");
  a.a[15] = numsub(3);
  const auto info = probe(a.a);
  EXPECT_EQ(info.kind, key_kind::count_down_latch);
  EXPECT_EQ(info.count, 2);
  EXPECT_FALSE(info.available);
  EXPECT_EQ(info.subscribers, 3);
  EXPECT_EQ(info.channel, "redisson_countdownlatch__channel__{l}");
  EXPECT_FALSE(info.held());
  // Without waiters the key alone reads as a semaphore's counter.
  a.a[15] = numsub(0);
  EXPECT_EQ(probe(a.a).kind, key_kind::semaphore);
  // With a total rlock set, it is a semaphore whoever listens on the latch's channel.
  a.a[15] = numsub(3);
  a.a[13] = str("5");
  EXPECT_EQ(probe(a.a).kind, key_kind::semaphore);
}

TEST(lock_probe, a_refused_command_is_a_failure_with_redis_words) {
  answers a("hash");
  a.a[1] = str("NOPERM this user has no permissions to access one of the keys", type::simple_error);
  rlock::lock_info info;
  auto f = rlock::detail::read_probe(ordered(a.a), info);
  EXPECT_EQ(f.code, rlock::errc::key_not_permitted);
  EXPECT_NE(f.text().find("NOPERM"), std::string_view::npos);
  // An answer that does not apply to the key's type (GET of a hash) is not read.
  answers b("hash");
  b.a[10] = str("NOPERM", type::simple_error);
  EXPECT_FALSE(rlock::detail::read_probe(ordered(b.a), info));
  // Missing answers: a protocol error, never a read past the end.
  const std::vector<reply> few{str("hash", type::simple_string)};
  f = rlock::detail::read_probe(few, info);
  EXPECT_EQ(f.code, rlock::errc::protocol_error);
  f = rlock::detail::read_probe({}, info);
  EXPECT_EQ(f.code, rlock::errc::protocol_error);
}

TEST(lock_probe, a_key_gone_between_hgetall_and_pttl_is_free) {
  answers a("hash");
  a.a[1] = hash({{"a:1", "1"}});
  a.a[2] = num(-2);
  const auto info = probe(a.a);
  EXPECT_FALSE(info.held());
  EXPECT_EQ(info.kind, key_kind::absent);
}

TEST(lock_probe, a_held_lock_without_ttl_has_none) {
  answers a("hash");
  a.a[1] = hash({{"a:1", "1"}});
  a.a[2] = num(-1);
  const auto info = probe(a.a);
  EXPECT_TRUE(info.held());
  EXPECT_FALSE(info.ttl);
  EXPECT_EQ(rlock::to_string(info.kind), "reentrant");
}

}  // namespace
