// A quorum lock's nodes that refuse it (src/quorum/node_refusals.hpp): a refusal no retry changes
// fails the acquisition once a majority cannot be had without the refusing nodes.
#include "quorum/node_refusals.hpp"

#include <gtest/gtest.h>

namespace node_refusals_test {

using rlock::errc;
using rlock::detail::failure;
using rlock::detail::is_refusal;
using rlock::detail::node_refusals;

const std::vector<std::string> labels{"a:1", "b:2", "c:3"};

TEST(node_refusals, only_answers_no_retry_changes_are_refusals) {
  EXPECT_TRUE(is_refusal(failure(errc::key_not_permitted, "NOPERM key")));
  EXPECT_TRUE(is_refusal(failure(errc::command_not_permitted, "NOPERM evalsha")));
  EXPECT_TRUE(is_refusal(failure(errc::permission_denied, "NOPERM channel")));
  EXPECT_FALSE(is_refusal(failure(errc::timeout, "no answer")));
  EXPECT_FALSE(is_refusal(failure(errc::connection_lost, "closed")));
  EXPECT_FALSE(is_refusal(failure()));
}

TEST(node_refusals, a_majority_left_is_not_hopeless_and_a_minority_left_fails_with_the_words) {
  node_refusals r(3);
  r.on_answer(0, failure(errc::key_not_permitted, "NOPERM this user has no permissions"));
  EXPECT_FALSE(r.hopeless(2, labels, "q:"));            // two nodes may still grant
  r.on_answer(1, failure(errc::timeout, "no answer"));  // not a refusal
  EXPECT_FALSE(r.hopeless(2, labels, "q:"));
  r.on_answer(2, failure(errc::key_not_permitted, "NOPERM again"));
  const auto f = r.hopeless(2, labels, "q:");
  ASSERT_TRUE(f);
  EXPECT_EQ(f.code, errc::key_not_permitted);
  EXPECT_NE(f.text().find("a:1: NOPERM this user"), std::string_view::npos) << f.text();
  EXPECT_NE(f.text().find("c:3: NOPERM again"), std::string_view::npos) << f.text();
  EXPECT_EQ(f.text().find("b:2"), std::string_view::npos) << f.text();
  // A node that answers usefully again refuses nothing now.
  r.on_answer(2, failure());
  EXPECT_FALSE(r.hopeless(2, labels, "q:"));
}

}  // namespace node_refusals_test
