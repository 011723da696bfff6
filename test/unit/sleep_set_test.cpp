// The hub's sleep set: waiters wake in deadline order (ties in the order they slept), one can
// leave early, and what is not due stays asleep.
#include "notify/sleep_set.hpp"

#include <gtest/gtest.h>

#include <array>

namespace {

using rlock::detail::sleep_set;
using ms = std::chrono::milliseconds;
const sleep_set::clock::time_point t0{};

TEST(sleep_set, wakes_what_is_due_in_deadline_order_and_ties_in_sleep_order) {
  sleep_set set;
  std::array<sleep_set::sleeper, 4> s;
  set.add(s[0], t0 + ms(30));
  set.add(s[1], t0 + ms(10));
  set.add(s[2], t0 + ms(30));
  set.add(s[3], t0 + ms(20));
  EXPECT_EQ(set.next_deadline(), t0 + ms(10));
  EXPECT_EQ(set.take_due(t0 + ms(9)), nullptr);
  EXPECT_EQ(set.take_due(t0 + ms(25)), &s[1]);
  EXPECT_EQ(set.take_due(t0 + ms(25)), &s[3]);
  EXPECT_EQ(set.take_due(t0 + ms(25)), nullptr);
  EXPECT_FALSE(s[1].asleep());
  EXPECT_TRUE(s[0].asleep());
  EXPECT_EQ(set.take_due(t0 + ms(30)), &s[0]);
  EXPECT_EQ(set.take_due(t0 + ms(30)), &s[2]);
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.next_deadline(), sleep_set::clock::time_point::max());
}

TEST(sleep_set, a_sleeper_leaves_early_and_may_sleep_again) {
  sleep_set set;
  std::array<sleep_set::sleeper, 2> s;
  set.add(s[0], t0 + ms(10));
  set.add(s[1], t0 + ms(20));
  set.remove(s[0]);
  set.remove(s[0]);  // not asleep: nothing
  EXPECT_FALSE(s[0].asleep());
  EXPECT_EQ(set.size(), 1u);
  EXPECT_EQ(set.next_deadline(), t0 + ms(20));
  set.add(s[0], t0 + ms(40));
  EXPECT_EQ(set.take_due(t0 + ms(50)), &s[1]);
  EXPECT_EQ(set.take_due(t0 + ms(50)), &s[0]);
  EXPECT_EQ(set.take_due(t0 + ms(50)), nullptr);
  EXPECT_TRUE(set.empty());
}

}  // namespace
