// The election's sans-I/O parts beside the observer's order: the election kind's calls (the
// campaign's keys and arguments, the resignation's extra keys), its replies and reconciliation,
// and the leader record's reply read into who leads, or refused when it has another shape.
#include "election/leader_record.hpp"
#include "engine/lock_kind.hpp"
#include "kinds/registry.hpp"
#include "support/resp3_values.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

namespace d = rlock::detail;
using rlock::test::array;
using rlock::test::number;
using rlock::test::text;

TEST(election_kind, a_campaign_names_the_lock_counter_record_and_channel_in_one_slot) {
  const d::lock_identity who{"jobs", "uuid:7"};
  d::acquire_inputs in;
  in.lease_ms = "30000";
  in.publish = "spublish";
  in.argument = "10.0.0.1:8080";
  d::acquire_script_call call;
  d::election_kind.acquire_call(who, in, call);
  EXPECT_EQ(call.which, d::script::election_campaign);
  ASSERT_EQ(call.key_count, 4u);
  EXPECT_EQ(call.keys[0], "jobs");
  EXPECT_EQ(call.keys[1], "redisson_lock_token:{jobs}");
  EXPECT_EQ(call.keys[2], "rlock_election:{jobs}");
  EXPECT_EQ(call.keys[3], "rlock_election_channel:{jobs}");
  ASSERT_EQ(call.arg_count, 4u);
  EXPECT_EQ(call.args[0], "30000");
  EXPECT_EQ(call.args[1], "uuid:7");
  EXPECT_EQ(call.args[2], "10.0.0.1:8080");
  EXPECT_EQ(call.args[3], "spublish");
}

TEST(election_kind, a_resignation_is_the_latched_release_plus_the_record_and_channel) {
  const d::lock_identity who{"{app}jobs", "uuid:7"};
  d::release_inputs in;
  in.channel = "redisson_lock__channel:{app}jobs";
  in.latch = "latch";
  in.lease_ms = "30000";
  in.latch_ttl = "5000";
  in.publish = "publish";
  d::release_script_call call;
  d::election_kind.release_call(who, in, call);
  EXPECT_EQ(call.which, d::script::election_resign);
  ASSERT_EQ(call.key_count, 5u);
  EXPECT_EQ(call.keys[2], "latch");
  EXPECT_EQ(call.keys[3], "rlock_election:{app}jobs");  // a key with its own tag keeps it
  EXPECT_EQ(call.keys[4], "rlock_election_channel:{app}jobs");
  EXPECT_EQ(call.arg_count, 5u);
}

TEST(election_kind, its_replies_and_a_lost_campaign_are_read_as_the_fenced_lock_reads_them) {
  auto won = d::election_kind.decode(array({number(-1), number(12)}));
  EXPECT_EQ(won.what, d::acquire_reply::outcome::acquired);
  EXPECT_EQ(won.token, 12);
  auto busy = d::election_kind.decode(array({number(2500), number(-1)}));
  EXPECT_EQ(busy.what, d::acquire_reply::outcome::busy);
  EXPECT_EQ(d::election_kind.decode(text("OK")).what, d::acquire_reply::outcome::malformed);
  EXPECT_EQ(d::election_kind.decode(array({number(-1), number(0)})).what,
            d::acquire_reply::outcome::malformed);
  // Lost answer: held once more than the server counted, and the record's term is the win's.
  auto ran = d::election_kind.judge(0, array({text("1"), text("12")}));
  EXPECT_EQ(ran.what, d::reconcile_result::outcome::ran);
  EXPECT_EQ(ran.token, 12);
  EXPECT_EQ(d::election_kind.judge(0, array({number(0), text("12")})).what,
            d::reconcile_result::outcome::not_run);
  // The record went (an operator's DEL): the lead is ours but its term cannot be told.
  EXPECT_EQ(d::election_kind.judge(0, array({text("1"), d::resp3::value{}})).what,
            d::reconcile_result::outcome::ran_no_token);
}

TEST(leader_record, a_reply_is_read_into_who_leads_and_since_when) {
  const auto r = d::read_leader_record(
      array({text("uuid:7"), number(12), text("v"), number(1000), number(4), number(3500)}));
  ASSERT_TRUE(r);
  const auto info = d::leader_of(*r);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->owner, "uuid:7");
  EXPECT_EQ(info->value, "v");
  EXPECT_EQ(info->term, 12);
  EXPECT_EQ(info->seq, 4u);
  EXPECT_EQ(info->since.time_since_epoch(), std::chrono::milliseconds(1000));
  EXPECT_EQ(info->led_for, std::chrono::milliseconds(2500));
  const auto snap = d::snapshot_of(*r);
  EXPECT_EQ(snap.what, rlock::election_change::event::snapshot);
  EXPECT_TRUE(snap.leading);
  EXPECT_EQ(snap.seq, 4u);
}

TEST(leader_record, nobody_leads_without_a_holder_and_a_foreign_holder_has_no_value) {
  const auto none = d::read_leader_record(
      array({text(""), number(12), text(""), number(0), number(5), number(3500)}));
  ASSERT_TRUE(none);
  EXPECT_FALSE(d::leader_of(*none));
  EXPECT_FALSE(d::snapshot_of(*none).leading);
  const auto java = d::read_leader_record(
      array({text("java:1"), number(3), text(""), number(0), number(5), number(3500)}));
  ASSERT_TRUE(java);
  const auto info = d::leader_of(*java);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->led_for, std::chrono::milliseconds(0));  // unknown: never campaigned
  EXPECT_EQ(info->since.time_since_epoch(), std::chrono::milliseconds(0));
}

TEST(leader_record, a_reply_of_another_shape_is_refused) {
  EXPECT_FALSE(d::read_leader_record(text("OK")));
  EXPECT_FALSE(d::read_leader_record(array({text("a"), number(1)})));
  EXPECT_FALSE(d::read_leader_record(
      array({number(1), number(12), text("v"), number(0), number(4), number(0)})));
  EXPECT_FALSE(d::read_leader_record(
      array({text("a"), number(-1), text("v"), number(0), number(4), number(0)})));
  EXPECT_FALSE(d::read_leader_record(
      array({text("a"), text("12"), text("v"), number(0), number(4), number(0)})));
}

}  // namespace
