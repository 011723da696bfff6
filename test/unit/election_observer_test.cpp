// An election observer's order (src/election/observer_sequence.hpp): every change told once, in
// the order of the record's change counter, a gap counted, a reconnect's snapshot delivered only
// when it is newer; and the channel's messages parsed, or refused with words that say why.
#include "election/observer_sequence.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using rlock::detail::election_change;
using rlock::detail::observer_sequence;
using rlock::detail::parse_election_message;
using event = election_change::event;

election_change change(std::uint64_t seq, std::int64_t term, event what, std::string value) {
  election_change c;
  c.seq = seq;
  c.term = term;
  c.what = what;
  c.value = std::move(value);
  return c;
}

TEST(election_observer, tells_each_change_once_in_order_and_counts_a_gap) {
  observer_sequence o;
  auto first = o.on_message(change(4, 7, event::elected, "a:1"));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->skipped, 0u);  // where this observer starts: nothing was owed before
  EXPECT_FALSE(o.on_message(change(4, 7, event::elected, "a:1")));   // a repeat
  EXPECT_FALSE(o.on_message(change(3, 6, event::resigned, "old")));  // overtaken
  auto next = o.on_message(change(5, 7, event::proclaimed, "a:2"));
  ASSERT_TRUE(next);
  EXPECT_EQ(next->skipped, 0u);
  auto later = o.on_message(change(9, 9, event::elected, "c"));  // 6, 7 and 8 never heard
  ASSERT_TRUE(later);
  EXPECT_EQ(later->skipped, 3u);
  EXPECT_EQ(o.last_seq(), 9u);
  EXPECT_EQ(o.last_term(), 9);
}

TEST(election_observer, a_snapshot_after_a_reconnect_is_told_only_when_newer) {
  observer_sequence o;
  ASSERT_TRUE(o.on_message(change(2, 3, event::elected, "a")));
  // Reconnected: the record says nothing happened meanwhile.
  EXPECT_FALSE(o.on_snapshot(change(2, 3, event::elected, "a")));
  // Reconnected again after two changes: the state as it is, the gap counted.
  auto now = o.on_snapshot(change(5, 4, event::proclaimed, "b"));
  ASSERT_TRUE(now);
  EXPECT_EQ(now->what, event::snapshot);
  EXPECT_EQ(now->skipped, 2u);
  EXPECT_EQ(now->term, 4);
  // The messages of those changes, arriving after the snapshot, are not told again.
  EXPECT_FALSE(o.on_message(change(4, 4, event::elected, "b0")));
  EXPECT_FALSE(o.on_message(change(5, 4, event::proclaimed, "b")));
  EXPECT_TRUE(o.on_message(change(6, 4, event::resigned, "b")));
}

TEST(election_observer, a_record_never_written_tells_nothing) {
  observer_sequence o;
  EXPECT_FALSE(o.on_snapshot(change(0, 0, event::snapshot, "")));
  EXPECT_EQ(o.last_seq(), 0u);
}

TEST(election_message, parses_the_published_form_with_any_value) {
  const auto p = parse_election_message("12:34:elected:10.0.0.7:8080");
  ASSERT_TRUE(p.change) << p.error;
  EXPECT_EQ(p.change->seq, 12u);
  EXPECT_EQ(p.change->term, 34);
  EXPECT_EQ(p.change->what, event::elected);
  EXPECT_EQ(p.change->value, "10.0.0.7:8080");
  const auto empty = parse_election_message("3:1:resigned:");
  ASSERT_TRUE(empty.change) << empty.error;
  EXPECT_EQ(empty.change->what, event::resigned);
  EXPECT_EQ(empty.change->value, "");
}

TEST(election_message, refuses_what_is_not_one_and_says_why) {
  for (const char* bad :
       {"", "x", "1", "1:2", "1:2:elected", "0:2:elected:v", "a:2:elected:v", "1:-3:elected:v",
        "1:b:elected:v", "1:2:crowned:v", ":2:elected:v", "18446744073709551616:1:elected:v"}) {
    const auto p = parse_election_message(bad);
    EXPECT_FALSE(p.change) << bad;
    EXPECT_NE(p.error.find("election message"), std::string::npos) << bad;
    EXPECT_NE(p.error.find("expected"), std::string::npos) << bad << ": " << p.error;
  }
}

TEST(election_observer, a_record_begun_again_after_data_loss_restarts_the_order) {
  observer_sequence o;
  ASSERT_TRUE(o.on_message(change(40, 12, event::elected, "a")));
  // The server forgot everything (FLUSHALL): the next leader's record starts at seq 1, term 1.
  const auto after = change(1, 1, event::elected, "b");
  EXPECT_TRUE(o.stale_message(after));
  EXPECT_FALSE(o.on_message(after));  // a message alone cannot tell a reset from a late one
  // The record read then says it: told as it is, and the order goes on from it.
  const auto told = o.on_snapshot(change(1, 1, event::elected, "b"));
  ASSERT_TRUE(told);
  EXPECT_EQ(told->what, event::snapshot);
  EXPECT_EQ(told->skipped, 0u);
  EXPECT_EQ(o.last_seq(), 1u);
  const auto next = o.on_message(change(2, 1, event::proclaimed, "b2"));
  ASSERT_TRUE(next);
  EXPECT_EQ(next->skipped, 0u);
  // A late message (below the last told) while the record is current: the read tells nothing new.
  EXPECT_TRUE(o.stale_message(change(1, 1, event::elected, "b")));
  EXPECT_FALSE(o.on_snapshot(change(2, 1, event::proclaimed, "b2")));
}

TEST(election_observer, a_quorum_numbering_orders_by_term_then_seq_and_never_restarts) {
  observer_sequence o(rlock::detail::election_numbering::term_then_seq);
  ASSERT_TRUE(o.on_message(change(7, 3, event::proclaimed, "a2")));
  // The next leader counted on from a majority that never had seq 7 (a minority did): a new term
  // at the same seq is newer, and counts nothing skipped.
  const auto next = o.on_message(change(7, 4, event::elected, "b"));
  ASSERT_TRUE(next);
  EXPECT_EQ(next->skipped, 0u);
  // The same change heard from another node: told once.
  EXPECT_FALSE(o.on_message(change(7, 4, event::elected, "b")));
  EXPECT_FALSE(o.stale_message(change(7, 4, event::elected, "b")));
  // A node that missed writes answers an older record: behind, not a restart.
  EXPECT_TRUE(o.stale_message(change(6, 3, event::elected, "a")));
  EXPECT_FALSE(o.on_snapshot(change(6, 3, event::elected, "a")));
  EXPECT_EQ(o.last_term(), 4);
  EXPECT_EQ(o.last_seq(), 7u);
  // Within a term, gaps in seq are counted.
  const auto later = o.on_message(change(10, 4, event::proclaimed, "b3"));
  ASSERT_TRUE(later);
  EXPECT_EQ(later->skipped, 2u);
  // A lower seq under a higher term is still newer (the term decides first).
  const auto won = o.on_snapshot(change(9, 6, event::elected, "c"));
  ASSERT_TRUE(won);
  EXPECT_EQ(won->skipped, 0u);
  EXPECT_EQ(o.last_term(), 6);
}

}  // namespace
