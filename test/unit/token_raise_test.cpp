// A fenced quorum hold's token (src/quorum/token_raise.hpp): a proposal is the token once a
// majority wrote it, and a raise that cannot get there proposes past every count it saw.
#include "quorum/token_raise.hpp"

#include <gtest/gtest.h>

namespace token_raise_test {

using rlock::detail::token_raise;

TEST(token_raise, a_proposal_written_by_a_majority_is_the_token_without_waiting_for_the_rest) {
  token_raise r(5, 7);
  r.on_answer(true, 6);
  r.on_answer(true, 0);  // a node restarted empty
  EXPECT_FALSE(r.confirmed());
  r.on_answer(true, 3);
  EXPECT_TRUE(r.confirmed());
  EXPECT_FALSE(r.all_answered());
  EXPECT_EQ(r.proposal(), 7);
}

TEST(token_raise, is_hopeless_once_a_majority_counts_past_it_and_proposes_past_every_count) {
  token_raise r(3, 4);
  r.on_answer(false, 9);  // an earlier holder's raise went further than this owner knew
  EXPECT_FALSE(r.hopeless());
  r.on_failed();
  EXPECT_TRUE(r.hopeless());
  EXPECT_FALSE(r.confirmed());
  EXPECT_EQ(r.next_proposal(), 10);
}

TEST(token_raise, with_nothing_higher_seen_the_next_proposal_is_one_more) {
  token_raise r(3, 4);
  r.on_failed();
  r.on_failed();
  r.on_failed();
  EXPECT_TRUE(r.all_answered());
  EXPECT_TRUE(r.hopeless());
  EXPECT_EQ(r.next_proposal(), 5);
}

}  // namespace token_raise_test
