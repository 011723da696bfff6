// One round of a quorum acquisition (src/quorum/quorum_round.hpp): every node asked at once, won
// by a majority with validity left, lost as soon as no majority can be had or its bound passes,
// and every grant of a lost round given back before the caller is told.
#include "quorum/quorum_round.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <vector>

namespace quorum_round_test {

using namespace std::chrono_literals;
using rlock::detail::drift_policy;
using rlock::detail::node_set;
using rlock::detail::quorum_of;
using rlock::detail::quorum_round;
using rlock::detail::quorum_step;
using clock_type = std::chrono::steady_clock;
using vote = quorum_round::vote;
using kind = quorum_step::kind;

const clock_type::time_point t0 = clock_type::time_point(100s);

quorum_round round_of(std::size_t nodes, std::chrono::milliseconds lease = 10s,
                      std::chrono::milliseconds bound = 500ms) {
  return quorum_round(std::vector<std::chrono::milliseconds>(nodes, lease), drift_policy{}, t0,
                      t0 + bound);
}

TEST(quorum_round, asks_every_node_at_once_and_wins_with_a_majority_without_waiting_for_the_rest) {
  auto r = round_of(3);
  const auto first = r.start();
  EXPECT_EQ(first.what, kind::attempt);
  EXPECT_EQ(first.nodes, 0b111u);
  EXPECT_EQ(r.on_answer(0, vote::granted, t0 + 3ms).what, kind::wait);
  const auto won = r.on_answer(2, vote::granted, t0 + 5ms);
  EXPECT_EQ(won.what, kind::complete);
  EXPECT_TRUE(won.won);
  EXPECT_EQ(won.cancel, 0u);  // the straggler may still grant: the hold keeps it
  // Validity as published: lease - drift, counted from the send, not from the answers.
  EXPECT_EQ(won.valid_until, t0 + 10s - 102ms);
  EXPECT_TRUE(r.over());
  EXPECT_EQ(r.granted(), 0b101u);
  EXPECT_EQ(r.on_answer(1, vote::granted, t0 + 9ms).what, kind::wait);
  EXPECT_EQ(r.granted(), 0b111u);
}

TEST(quorum_round, is_lost_as_soon_as_no_majority_can_be_had_and_gives_back_its_grants_first) {
  auto r = round_of(5);
  r.start();
  EXPECT_EQ(r.on_answer(4, vote::granted, t0 + 1ms).what, kind::wait);
  EXPECT_EQ(r.on_answer(0, vote::refused, t0 + 1ms).what, kind::wait);
  EXPECT_EQ(r.on_answer(1, vote::failed, t0 + 1ms).what, kind::wait);
  const auto lost = r.on_answer(2, vote::refused, t0 + 2ms);  // 1 granted + 1 pending < 3
  EXPECT_EQ(lost.what, kind::release);
  EXPECT_EQ(lost.nodes, 0b10000u);
  EXPECT_EQ(lost.cancel, 0b01000u);  // node 3's answer no longer decides anything
  EXPECT_FALSE(r.over());            // not told before the grant is given back
  const auto told = r.on_released(4);
  EXPECT_EQ(told.what, kind::complete);
  EXPECT_FALSE(told.won);
  EXPECT_TRUE(r.over());
  // Node 3's cancelled attempt landed anyway: given back too.
  const auto late = r.on_answer(3, vote::granted, t0 + 4ms);
  EXPECT_EQ(late.what, kind::release);
  EXPECT_EQ(late.nodes, 0b01000u);
  EXPECT_EQ(r.on_released(3).what, kind::wait);  // the caller was told once
}

TEST(quorum_round, without_any_grant_the_caller_is_told_at_once) {
  auto r = round_of(3);
  r.start();
  EXPECT_EQ(r.on_answer(1, vote::refused, t0).what, kind::wait);
  const auto lost = r.on_answer(0, vote::refused, t0);
  EXPECT_EQ(lost.what, kind::complete);
  EXPECT_FALSE(lost.won);
  EXPECT_EQ(lost.cancel, 0b100u);
}

TEST(quorum_round, its_bound_counts_the_silent_nodes_as_failed_and_cancels_them) {
  auto r = round_of(5, 10s, 200ms);
  r.start();
  r.on_answer(0, vote::granted, t0 + 1ms);
  r.on_answer(1, vote::granted, t0 + 1ms);
  const auto lost = r.on_bound(t0 + 200ms);  // nodes 2, 3, 4 never answered
  EXPECT_EQ(lost.what, kind::release);
  EXPECT_EQ(lost.nodes, 0b00011u);
  EXPECT_EQ(lost.cancel, 0b11100u);
  EXPECT_EQ(r.tally().count(vote::failed), 3u);
  EXPECT_EQ(r.on_released(0).what, kind::wait);
  EXPECT_EQ(r.on_released(1).what, kind::complete);
  EXPECT_EQ(r.on_bound(t0 + 300ms).what, kind::wait);  // once
}

TEST(quorum_round, a_majority_that_comes_after_its_validity_is_a_loss) {
  // A 1 s lease believed 988 ms (1 % + 2 ms): a majority complete at 990 ms has none left.
  auto r = round_of(3, 1s, 5s);
  r.start();
  r.on_answer(0, vote::granted, t0 + 10ms);
  const auto lost = r.on_answer(1, vote::granted, t0 + 990ms);
  EXPECT_EQ(lost.what, kind::release);
  EXPECT_EQ(lost.nodes, 0b011u);
  EXPECT_EQ(lost.cancel, 0b100u);
}

TEST(quorum_round, a_single_node_is_its_own_majority) {
  auto r = round_of(1);
  EXPECT_EQ(r.start().nodes, 0b1u);
  const auto won = r.on_answer(0, vote::granted, t0 + 1ms);
  EXPECT_EQ(won.what, kind::complete);
  EXPECT_TRUE(won.won);
}

TEST(quorum_round, refuses_no_nodes_or_more_than_thirty_two) {
  EXPECT_THROW(round_of(0), std::invalid_argument);
  EXPECT_THROW(round_of(33), std::invalid_argument);
  auto r = round_of(32);
  EXPECT_EQ(r.start().nodes, ~node_set{0});
}

// Every answer each node can give (granted, refused, failed, silent until the bound), in two
// orders, for 3 and 5 nodes: the caller is told exactly once; won exactly when a majority
// granted; a won round holds exactly the grants; a lost one releases every grant (and only
// grants), those known when it was decided before the caller is told, a cancelled attempt's
// late grant after; what it cancelled had not answered.
TEST(quorum_round, every_combination_tells_the_caller_once_and_leaves_no_grant_behind) {
  const std::vector<vote> answers{vote::granted, vote::refused, vote::failed, vote::pending};
  for (std::size_t n : {3u, 5u}) {
    std::size_t combinations = 1;
    for (std::size_t i = 0; i < n; ++i) combinations *= answers.size();
    for (std::size_t c = 0; c < combinations; ++c) {
      std::vector<vote> script(n);
      std::size_t rest = c;
      for (auto& v : script) {
        v = answers[rest % answers.size()];
        rest /= answers.size();
      }
      for (bool reversed : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << "n=" << n << " combination " << c << (reversed ? " reversed" : ""));
        auto r = round_of(n);
        r.start();
        int told = 0;
        bool won = false;
        node_set releasing = 0;
        node_set released_at_told = 0;
        node_set granted_at_decision = 0;
        bool decided = false;
        node_set released = 0;
        node_set granted_seen = 0;
        node_set answered = 0;
        std::vector<quorum_step> steps;
        auto apply = [&](const quorum_step& s) {
          EXPECT_EQ(s.cancel & answered, 0u) << "cancelled an answered attempt";
          if (!decided && (s.what == kind::release || s.what == kind::complete)) {
            decided = true;
            granted_at_decision = granted_seen;
          }
          if (s.what == kind::release) {
            EXPECT_EQ(s.nodes & ~granted_seen, 0u) << "released a node that granted nothing";
            releasing |= s.nodes;
          }
          if (s.what == kind::complete) {
            ++told;
            won = s.won;
            released_at_told = released;
          }
        };
        std::vector<std::size_t> order(n);
        for (std::size_t i = 0; i < n; ++i) order[i] = reversed ? n - 1 - i : i;
        for (std::size_t i : order) {
          if (script[i] == vote::pending) continue;
          answered |= node_set{1} << i;
          if (script[i] == vote::granted) granted_seen |= node_set{1} << i;
          apply(r.on_answer(i, script[i], t0 + 1ms));
        }
        apply(r.on_bound(t0 + 500ms));
        // The shell's releases end, one by one.
        for (std::size_t i = 0; i < n; ++i) {
          if ((releasing & (node_set{1} << i)) != 0) {
            released |= node_set{1} << i;
            apply(r.on_released(i));
          }
        }
        const auto grants =
            static_cast<std::size_t>(std::count(script.begin(), script.end(), vote::granted));
        EXPECT_EQ(told, 1);
        EXPECT_EQ(won, grants >= quorum_of(n));
        if (won) {
          EXPECT_EQ(r.granted(), granted_seen);
          EXPECT_EQ(releasing, 0u);
        } else {
          EXPECT_EQ(released, granted_seen);
          EXPECT_EQ(released_at_told & granted_at_decision, granted_at_decision)
              << "told before every grant it knew of was given back";
        }
      }
    }
  }
}

}  // namespace quorum_round_test
