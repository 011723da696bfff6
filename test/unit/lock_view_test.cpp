// rlockctl's reading of lock keys, without a server: the replies are built by hand.
#include "lock_view.hpp"

#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <rlock/error.hpp>
#include <system_error>

namespace {

using rlock::detail::resp3::type;
using rlockctl::lock_view;
using rlockctl::reply;

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

reply null() { return {}; }

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

TEST(lock_view, owner_fields_with_positive_counts_are_a_lock) {
  auto hs = rlockctl::lock_holders(hash({{"6f1c-uuid:12", "3"}}));
  ASSERT_TRUE(hs);
  ASSERT_EQ(hs->size(), 1U);
  EXPECT_EQ((*hs)[0].owner, "6f1c-uuid:12");
  EXPECT_EQ((*hs)[0].count, 3);
  // RESP2's flat array reads the same.
  EXPECT_TRUE(rlockctl::lock_holders(hash({{"u:1", "1"}}, type::array)));
  // Absent key: an empty hash, a free lock.
  auto none = rlockctl::lock_holders(hash({}));
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(lock_view, other_hashes_are_not_locks) {
  EXPECT_FALSE(rlockctl::lock_holders(hash({{"colour", "blue"}})));
  EXPECT_FALSE(rlockctl::lock_holders(hash({{"u:1", "blue"}})));
  EXPECT_FALSE(rlockctl::lock_holders(hash({{"u:1", "0"}})));
  EXPECT_FALSE(rlockctl::lock_holders(hash({{"u:1", "-2"}})));
  EXPECT_FALSE(rlockctl::lock_holders(hash({{"u:", "1"}})));
  EXPECT_FALSE(rlockctl::lock_holders(hash({{":1", "1"}})));
  EXPECT_FALSE(rlockctl::lock_holders(hash({{"u:1x", "1"}})));
  EXPECT_FALSE(rlockctl::lock_holders(hash({{"u:1", "1"}, {"name", "x"}})));
  EXPECT_FALSE(rlockctl::lock_holders(str("x")));
}

TEST(lock_view, status_of_a_held_fenced_lock) {
  const auto v = rlockctl::read_status(
      "orders",
      {str("hash", type::simple_string), hash({{"a:1", "2"}}), num(1500), numsub(3), str("17")});
  EXPECT_EQ(v.status, lock_view::state::held);
  EXPECT_EQ(v.kind(), "fenced");
  EXPECT_EQ(v.token, 17);
  EXPECT_EQ(v.ttl_ms, 1500);
  EXPECT_EQ(v.subscribers, 3);
  EXPECT_EQ(rlockctl::describe(v),
            "orders: held by a:1 (count 2), ttl 1500 ms, 3 subscriber(s), fenced (last token 17)");
  const auto j = rlockctl::to_json(v);
  EXPECT_EQ(j.at("state").as_string(), "held");
  EXPECT_EQ(j.at("holders").as_array().size(), 1U);
  EXPECT_EQ(j.at("token").as_int64(), 17);
}

TEST(lock_view, status_of_a_free_lock_and_of_other_keys) {
  const auto free = rlockctl::read_status(
      "x", {str("none", type::simple_string), hash({}), num(-2), numsub(0), null()});
  EXPECT_EQ(free.status, lock_view::state::free);
  EXPECT_EQ(free.kind(), "reentrant");
  EXPECT_EQ(rlockctl::describe(free), "x: free");

  // HGETALL of a string is refused with WRONGTYPE: TYPE says not to read it.
  const auto text = rlockctl::read_status(
      "s",
      {str("string", type::simple_string),
       str("WRONGTYPE Operation against a key holding the wrong kind of value", type::simple_error),
       num(-1), numsub(0), null()});
  EXPECT_EQ(text.status, lock_view::state::not_a_lock);
  EXPECT_EQ(rlockctl::describe(text), "s: not a lock (the key is a string)");
}

TEST(lock_view, status_of_a_fair_lock_shows_its_queue_in_order) {
  rlock::detail::resp3::value queue;
  queue.type = type::array;
  queue.elements = {str("a:2"), str("b:3")};
  // ZRANGE WITHSCORES in RESP3: [member, score] pairs.
  const reply timeouts = scored({{"b:3", 1'000'061'000.0}, {"a:2", 1'000'005'000.0}});
  rlock::detail::resp3::value time;
  time.type = type::array;
  time.elements = {str("1000000"), str("0")};  // 1 000 000 000 ms
  const auto v = rlockctl::read_status(
      "jobs", {str("hash", type::simple_string), hash({{"h:1", "1"}}), num(9000), numsub(2), null(),
               queue, timeouts, hash({{"a:2", "30000:60000:7"}, {"h:1", "g:3"}}), time});
  EXPECT_EQ(v.kind(), "fair");
  ASSERT_EQ(v.queue.size(), 2U);
  EXPECT_EQ(v.queue[0].owner, "a:2");
  EXPECT_TRUE(v.queue[0].by_push);
  EXPECT_EQ(v.queue[0].deadline_in_ms, 5000);
  EXPECT_FALSE(v.queue[1].by_push);
  EXPECT_EQ(v.queue[1].deadline_in_ms, 61000);
  EXPECT_EQ(rlockctl::describe(v),
            "jobs: held by h:1 (count 1), ttl 9000 ms, 2 subscriber(s), fair, queue: a:2 (by "
            "push, deadline in 5000 ms), b:3 (deadline in 61000 ms)");
  EXPECT_EQ(rlockctl::to_json(v).at("queue").as_array().size(), 2U);
}

TEST(lock_view, status_of_a_read_write_lock_shows_its_mode_readers_and_writer) {
  rlock::detail::resp3::value empty;
  empty.type = type::array;
  rlock::detail::resp3::value time;
  time.type = type::array;
  time.elements = {str("1000000"), str("0")};
  // A writer that downgraded: its write hold and its read hold, and another reader's is refused
  // by the server, so the hash shows one owner in both roles.
  const auto v = rlockctl::read_status(
      "doc", {str("hash", type::simple_string),
              hash({{"mode", "write"}, {"u:1:write", "2"}, {"u:1", "1"}}), num(9000), numsub(0),
              null(), empty, empty, hash({}), time, numsub(3)});
  EXPECT_EQ(v.kind(), "read-write");
  EXPECT_EQ(v.mode, "write");
  ASSERT_EQ(v.holders.size(), 2U);
  EXPECT_EQ(v.holders[0], (rlockctl::holder{"u:1", 2, "write"}));
  EXPECT_EQ(v.holders[1], (rlockctl::holder{"u:1", 1, "read"}));
  EXPECT_EQ(v.subscribers, 3);  // the read-write lock's own channel
  EXPECT_EQ(rlockctl::describe(v),
            "doc: held by u:1 (write count 2), u:1 (read count 1), ttl 9000 ms, 3 subscriber(s), "
            "read-write (mode write)");
  EXPECT_EQ(rlockctl::to_json(v).at("mode").as_string(), "write");
  // Readers joining and leaving are told as such by watch.
  rlockctl::lock_view readers = v;
  readers.mode = "read";
  readers.holders = {{"a:1", 1, "read"}};
  rlockctl::lock_view more = readers;
  more.holders.push_back({"b:1", 1, "read"});
  const auto joined = rlockctl::describe_change(readers, more, "hincrby");
  ASSERT_TRUE(joined);
  EXPECT_EQ(joined->text, "read half taken by b:1 (mode read)");
  const auto left = rlockctl::describe_change(more, readers, "hincrby");
  ASSERT_TRUE(left);
  EXPECT_EQ(left->text, "read half released by b:1 (mode read)");
  // A `mode` of anything else is not a lock rlock or Redisson made.
  EXPECT_FALSE(rlockctl::lock_holders(hash({{"mode", "other"}, {"u:1", "1"}})));
}

TEST(lock_view, status_of_a_semaphore_shows_its_permits_and_holds) {
  rlock::detail::resp3::value empty;
  empty.type = type::array;
  rlock::detail::resp3::value time;
  time.type = type::array;
  time.elements = {str("1000000"), str("0")};  // 1 000 000 000 ms
  const reply holds = scored({{"u:1", 1'000'030'000.0}, {"u:2", 1'000'005'000.0}});
  rlock::detail::resp3::value wrongtype =
      str("WRONGTYPE Operation against a key", type::simple_error);
  const auto v =
      rlockctl::read_status("pool", {str("string", type::simple_string), wrongtype, num(-1),
                                     numsub(0), null(), empty, empty, hash({}), time, numsub(0),
                                     str("1"), holds, hash({{"u:1", "2"}}), str("4"), numsub(2)});
  EXPECT_EQ(v.kind(), "semaphore");
  EXPECT_EQ(v.available, 1);
  EXPECT_EQ(v.total, 4);
  ASSERT_EQ(v.permits.size(), 2U);
  EXPECT_EQ(v.permits[0], (rlockctl::permit_hold{"u:1", 2, 30000}));
  EXPECT_EQ(v.permits[1], (rlockctl::permit_hold{"u:2", 1, 5000}));
  EXPECT_EQ(rlockctl::describe(v),
            "pool: semaphore, 1 permit(s) available of 4, held by u:1 (2 permits, expires in "
            "30000 ms), u:2 (1 permit, expires in 5000 ms), 2 subscriber(s)");
  EXPECT_EQ(rlockctl::to_json(v).at("permit_holds").as_array().size(), 2U);
  // Permit ids are 16 bytes on the wire, shown in hex as Redisson shows them; a Java permit
  // taken without a lease (score 922337203685477) never expires.
  const std::string raw_id("\x01\x23\x45\x67\x89\xab\xcd\xef\x00\x11\x22\x33\x44\x55\x66\x77", 16);
  const reply java = scored({{raw_id, 922337203685477.0}, {"u:3", 1'000'001'000.0}});
  const auto j = rlockctl::read_status(
      "pool", {str("string", type::simple_string), wrongtype, num(-1), numsub(0), null(), empty,
               empty, hash({}), time, numsub(0), str("0"), java, hash({}), null(), numsub(0)});
  ASSERT_EQ(j.permits.size(), 2U);
  EXPECT_EQ(j.permits[0].id, "0123456789abcdef0011223344556677");
  EXPECT_TRUE(j.permits[0].never_expires);
  EXPECT_FALSE(j.permits[0].expires_in_ms);
  EXPECT_EQ(j.permits[1].expires_in_ms, 1000);
  EXPECT_NE(
      rlockctl::describe(j).find("0123456789abcdef0011223344556677 (1 permit, never expires)"),
      std::string::npos)
      << rlockctl::describe(j);
  EXPECT_TRUE(rlockctl::to_json(j)
                  .at("permit_holds")
                  .as_array()[0]
                  .as_object()
                  .at("never_expires")
                  .as_bool());
  // A string that is no number is not a semaphore.
  const auto other = rlockctl::read_status(
      "text", {str("string", type::simple_string), wrongtype, num(-1), numsub(0), null(), empty,
               empty, hash({}), time, numsub(0), str("hello"), empty, hash({}), null(), numsub(0)});
  EXPECT_EQ(other.status, rlockctl::lock_view::state::not_a_lock);
}

TEST(lock_view, a_refused_command_is_an_error_with_redis_text) {
  try {
    rlockctl::read_status("x", {str("NOPERM this user has no permissions", type::simple_error)});
    FAIL() << "no error";
  } catch (const boost::system::system_error& e) {
    EXPECT_EQ(e.code(), rlock::errc::permission_denied);
    EXPECT_NE(std::string(e.what()).find("NOPERM"), std::string::npos);
  }
  EXPECT_THROW(rlockctl::read_status("x", {}), boost::system::system_error);
}

TEST(lock_view, a_key_gone_between_hgetall_and_pttl_is_free) {
  const auto v = rlockctl::read_state("x", {hash({{"a:1", "1"}}), num(-2)});
  EXPECT_EQ(v.status, lock_view::state::free);
}

lock_view held(std::vector<rlockctl::holder> hs, std::int64_t ttl = 30000) {
  lock_view v;
  v.name = "l";
  v.status = lock_view::state::held;
  v.holders = std::move(hs);
  v.ttl_ms = ttl;
  return v;
}

lock_view free_view() {
  lock_view v;
  v.name = "l";
  return v;
}

std::string kind(const std::optional<rlockctl::lock_change>& c) { return c ? c->kind : "none"; }

TEST(lock_view, changes_between_two_views) {
  using rlockctl::describe_change;
  EXPECT_EQ(kind(describe_change(free_view(), held({{"a:1", 1}}), "hincrby")), "locked");
  EXPECT_EQ(describe_change(free_view(), held({{"a:1", 1}}), "hincrby")->text,
            "locked by a:1 (count 1)");
  EXPECT_EQ(kind(describe_change(held({{"a:1", 1}}), held({{"a:1", 2}}), "hincrby")), "re-entered");
  EXPECT_EQ(kind(describe_change(held({{"a:1", 2}}), held({{"a:1", 1}}), "hincrby")),
            "released-once");
  EXPECT_EQ(kind(describe_change(held({{"a:1", 1}}), free_view(), "del")), "released");
  EXPECT_EQ(kind(describe_change(held({{"a:1", 1}}), free_view(), "expired")), "expired");
  EXPECT_EQ(kind(describe_change(held({{"a:1", 1}}, 100), held({{"a:1", 1}}), "expire")),
            "renewed");
  EXPECT_EQ(kind(describe_change(held({{"a:1", 1}}), held({{"b:1", 1}}), "hincrby")),
            "handed-over");
  // A whole hold between two reads is still told.
  EXPECT_EQ(kind(describe_change(free_view(), free_view(), "hincrby")), "released");
  EXPECT_EQ(kind(describe_change(free_view(), free_view(), "unlock-message")), "released");
  EXPECT_EQ(kind(describe_change(free_view(), free_view(), "expired")), "expired");
  // Nothing new.
  EXPECT_EQ(kind(describe_change(free_view(), free_view(), "del")), "none");
  EXPECT_EQ(kind(describe_change(held({{"a:1", 1}}), held({{"a:1", 1}}), "hset")), "none");
}

TEST(lock_view, status_of_a_count_down_latch_shows_its_count_and_waiters) {
  rlock::detail::resp3::value empty;
  empty.type = type::array;
  rlock::detail::resp3::value time;
  time.type = type::array;
  time.elements = {str("1000000"), str("0")};
  const rlock::detail::resp3::value wrongtype =
      str("WRONGTYPE Operation against a key", type::simple_error);
  // A count with waiters on Redisson's latch channel, no holds and no total.
  const auto v =
      rlockctl::read_status("gate", {str("string", type::simple_string), wrongtype, num(-1),
                                     numsub(0), null(), empty, empty, hash({}), time, numsub(0),
                                     str("2"), empty, hash({}), null(), numsub(0), numsub(3)});
  EXPECT_EQ(v.kind(), "count-down-latch");
  EXPECT_EQ(rlockctl::describe(v), "gate: count-down latch, count 2, 3 waiter(s)");
  EXPECT_EQ(rlockctl::to_json(v).at("count").as_int64(), 2);
  // Without waiters the key alone reads as a semaphore's counter, as it always has.
  const auto quiet =
      rlockctl::read_status("gate", {str("string", type::simple_string), wrongtype, num(-1),
                                     numsub(0), null(), empty, empty, hash({}), time, numsub(0),
                                     str("2"), empty, hash({}), null(), numsub(0), numsub(0)});
  EXPECT_EQ(quiet.kind(), "semaphore");
  // watch: a count with no holds either side is told as either's.
  rlockctl::lock_view before;
  before.available = 2;
  rlockctl::lock_view after;
  after.available = 1;
  const auto change = rlockctl::describe_change(before, after, "decrby");
  ASSERT_TRUE(change);
  EXPECT_EQ(change->kind, "count");
  EXPECT_EQ(change->text, "count 1 (a count-down latch's, or a semaphore's free permits)");
  const auto opened = rlockctl::describe_change(after, rlockctl::lock_view{}, "del");
  ASSERT_TRUE(opened);
  EXPECT_EQ(opened->text, "count 0, open (a count-down latch's, or a semaphore's free permits)");
}

}  // namespace
