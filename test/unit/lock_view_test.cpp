// rlockctl's words and JSON for what rlock::inspect read (the reading itself:
// lock_probe_test.cpp).
#include "lock_view.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace {

using rlock::hold_role;
using rlock::key_kind;
using rlockctl::lock_view;
using std::chrono::milliseconds;

lock_view held(std::vector<rlock::lock_holder> hs, std::int64_t ttl = 30000) {
  lock_view v;
  v.name = "l";
  v.kind = key_kind::reentrant;
  v.holders = std::move(hs);
  v.ttl = milliseconds(ttl);
  return v;
}

lock_view free_view() {
  lock_view v;
  v.name = "l";
  return v;
}

TEST(lock_view, a_held_fenced_lock) {
  lock_view v = held({{"a:1", 2}}, 1500);
  v.name = "orders";
  v.kind = key_kind::fenced;
  v.token = 17;
  v.subscribers = 3;
  EXPECT_EQ(rlockctl::describe(v),
            "orders: held by a:1 (count 2), ttl 1500 ms, 3 subscriber(s), fenced (last token 17)");
  const auto j = rlockctl::to_json(v);
  EXPECT_EQ(j.at("state").as_string(), "held");
  EXPECT_EQ(j.at("kind").as_string(), "fenced");
  EXPECT_EQ(j.at("holders").as_array().size(), 1U);
  EXPECT_EQ(j.at("token").as_int64(), 17);
  EXPECT_EQ(j.at("ttl_ms").as_int64(), 1500);
  v.ttl.reset();
  EXPECT_NE(rlockctl::describe(v).find(", no TTL"), std::string::npos);
  EXPECT_EQ(rlockctl::to_json(v).at("ttl_ms").as_int64(), -1);
}

TEST(lock_view, a_free_lock_and_other_keys) {
  lock_view free = free_view();
  free.name = "x";
  EXPECT_EQ(rlockctl::describe(free), "x: free");
  EXPECT_EQ(rlockctl::to_json(free).at("state").as_string(), "free");
  lock_view text = free_view();
  text.name = "s";
  text.kind = key_kind::other;
  text.key_type = "string";
  EXPECT_EQ(rlockctl::describe(text), "s: not a lock (the key is a string)");
  EXPECT_EQ(rlockctl::to_json(text).at("state").as_string(), "not-a-lock");
}

TEST(lock_view, a_fair_lock_shows_its_queue_in_order) {
  lock_view v = held({{"h:1", 1}}, 9000);
  v.name = "jobs";
  v.kind = key_kind::fair;
  v.subscribers = 2;
  v.queue = {{"a:2", milliseconds(5000), true}, {"b:3", milliseconds(61000), false}};
  EXPECT_EQ(rlockctl::describe(v),
            "jobs: held by h:1 (count 1), ttl 9000 ms, 2 subscriber(s), fair, queue: a:2 (by "
            "push, deadline in 5000 ms), b:3 (deadline in 61000 ms)");
  EXPECT_EQ(rlockctl::to_json(v).at("queue").as_array().size(), 2U);
}

TEST(lock_view, a_read_write_lock_shows_its_mode_readers_and_writer) {
  lock_view v = held({{"u:1", 2, hold_role::write}, {"u:1", 1, hold_role::read}}, 9000);
  v.name = "doc";
  v.kind = key_kind::read_write;
  v.mode = hold_role::write;
  v.subscribers = 3;
  EXPECT_EQ(rlockctl::describe(v),
            "doc: held by u:1 (write count 2), u:1 (read count 1), ttl 9000 ms, 3 subscriber(s), "
            "read-write (mode write)");
  EXPECT_EQ(rlockctl::to_json(v).at("mode").as_string(), "write");
  EXPECT_FALSE(rlockctl::to_json(v).contains("waiting_writers"));
  // Waiting writers, in their turn's order, held or free.
  lock_view waited = v;
  waited.writers = {{"w:2", milliseconds(4000), false}, {"w:3", milliseconds(-20), false}};
  EXPECT_EQ(rlockctl::describe(waited),
            "doc: held by u:1 (write count 2), u:1 (read count 1), ttl 9000 ms, 3 subscriber(s), "
            "read-write (mode write), waiting writers: w:2 (mark lapses in 4000 ms), w:3 (mark "
            "lapsed 20 ms ago)");
  const auto ws = rlockctl::to_json(waited).at("waiting_writers").as_array();
  ASSERT_EQ(ws.size(), 2U);
  EXPECT_EQ(ws[0].as_object().at("owner").as_string(), "w:2");
  EXPECT_EQ(ws[0].as_object().at("mark_lapses_in_ms").as_int64(), 4000);
  lock_view free_waited;
  free_waited.name = "doc";
  free_waited.kind = key_kind::read_write;
  free_waited.writers = {{"w:2", milliseconds(4000), false}};
  EXPECT_EQ(rlockctl::describe(free_waited),
            "doc: free, read-write, waiting writers: w:2 (mark lapses in 4000 ms)");
  // Readers joining and leaving are told as such by watch.
  lock_view readers = v;
  readers.mode = hold_role::read;
  readers.holders = {{"a:1", 1, hold_role::read}};
  lock_view more = readers;
  more.holders.push_back({"b:1", 1, hold_role::read});
  const auto joined = rlockctl::describe_change(readers, more, "hincrby");
  ASSERT_TRUE(joined);
  EXPECT_EQ(joined->text, "read half taken by b:1 (mode read)");
  const auto left = rlockctl::describe_change(more, readers, "hincrby");
  ASSERT_TRUE(left);
  EXPECT_EQ(left->text, "read half released by b:1 (mode read)");
}

TEST(lock_view, a_semaphore_shows_its_permits_and_holds) {
  lock_view v = free_view();
  v.name = "pool";
  v.kind = key_kind::semaphore;
  v.available = 1;
  v.total = 4;
  v.subscribers = 2;
  v.permits = {{"u:1", 2, milliseconds(30000)}, {"u:2", 1, milliseconds(5000)}};
  EXPECT_EQ(rlockctl::describe(v),
            "pool: semaphore, 1 permit(s) available of 4, held by u:1 (2 permits, expires in "
            "30000 ms), u:2 (1 permit, expires in 5000 ms), 2 subscriber(s)");
  EXPECT_EQ(rlockctl::to_json(v).at("permit_holds").as_array().size(), 2U);
  EXPECT_EQ(rlockctl::to_json(v).at("state").as_string(), "held");
  v.permits = {{"0123456789abcdef0011223344556677", 1, std::nullopt, true}};
  EXPECT_NE(
      rlockctl::describe(v).find("0123456789abcdef0011223344556677 (1 permit, never expires)"),
      std::string::npos)
      << rlockctl::describe(v);
  EXPECT_TRUE(rlockctl::to_json(v)
                  .at("permit_holds")
                  .as_array()[0]
                  .as_object()
                  .at("never_expires")
                  .as_bool());
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
  EXPECT_EQ(kind(describe_change(free_view(), free_view(), "hincrby")), "locked");
  EXPECT_EQ(kind(describe_change(free_view(), free_view(), "unlock-message")), "released");
  EXPECT_EQ(kind(describe_change(free_view(), free_view(), "expired")), "expired");
  // Nothing new.
  EXPECT_EQ(kind(describe_change(free_view(), free_view(), "del")), "none");
  EXPECT_EQ(kind(describe_change(held({{"a:1", 1}}), held({{"a:1", 1}}), "hset")), "none");
}

TEST(lock_view, a_count_down_latch_shows_its_count_and_waiters) {
  lock_view v = free_view();
  v.name = "gate";
  v.kind = key_kind::count_down_latch;
  v.count = 2;
  v.subscribers = 3;
  EXPECT_EQ(rlockctl::describe(v), "gate: count-down latch, count 2, 3 waiter(s)");
  EXPECT_EQ(rlockctl::to_json(v).at("count").as_int64(), 2);
  EXPECT_EQ(rlockctl::to_json(v).at("kind").as_string(), "count-down-latch");
  // watch: a count with no holds either side is told as either's.
  lock_view before;
  before.available = 2;
  lock_view after;
  after.count = 1;
  const auto change = rlockctl::describe_change(before, after, "decrby");
  ASSERT_TRUE(change);
  EXPECT_EQ(change->kind, "count");
  EXPECT_EQ(change->text, "count 1 (a count-down latch's, or a semaphore's free permits)");
  const auto opened = rlockctl::describe_change(after, lock_view{}, "del");
  ASSERT_TRUE(opened);
  EXPECT_EQ(opened->text, "count 0, open (a count-down latch's, or a semaphore's free permits)");
}

}  // namespace
