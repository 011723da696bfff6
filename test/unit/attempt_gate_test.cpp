// The attempt gate: attempts beyond the limit wait in FIFO order, each answer lets the oldest
// through, and a waiting attempt can leave the line (withdrawn, or destroyed).
#include "engine/attempt_gate.hpp"

#include <gtest/gtest.h>

#include <array>

namespace {

using rlock::detail::attempt_gate;

TEST(attempt_gate, lets_the_limit_through_and_the_rest_in_order_as_answers_come) {
  attempt_gate gate(2);
  std::array<attempt_gate::entry, 5> e;
  EXPECT_TRUE(gate.enter(e[0]));
  EXPECT_TRUE(gate.enter(e[1]));
  EXPECT_FALSE(gate.enter(e[2]));
  EXPECT_FALSE(gate.enter(e[3]));
  EXPECT_FALSE(gate.enter(e[4]));
  EXPECT_EQ(gate.in_flight(), 2u);
  EXPECT_EQ(gate.waiting(), 3u);
  EXPECT_EQ(gate.leave(), &e[2]);  // e[0] answered: e[2] takes its place
  EXPECT_FALSE(e[2].queued());
  EXPECT_EQ(gate.in_flight(), 2u);
  e[3].withdraw();  // cancelled while waiting
  e[3].withdraw();  // not waiting: nothing
  EXPECT_EQ(gate.leave(), &e[4]);
  EXPECT_EQ(gate.leave(), nullptr);
  EXPECT_EQ(gate.leave(), nullptr);
  EXPECT_EQ(gate.in_flight(), 0u);
  EXPECT_TRUE(gate.enter(e[3]));  // room again: straight through
}

TEST(attempt_gate, an_entry_destroyed_while_waiting_leaves_the_line) {
  attempt_gate gate(1);
  attempt_gate::entry first;
  attempt_gate::entry last;
  EXPECT_TRUE(gate.enter(first));
  {
    attempt_gate::entry gone;
    EXPECT_FALSE(gate.enter(gone));
    EXPECT_FALSE(gate.enter(last));
    EXPECT_EQ(gate.waiting(), 2u);
  }
  EXPECT_EQ(gate.waiting(), 1u);
  EXPECT_EQ(gate.leave(), &last);
}

TEST(attempt_gate, closing_takes_every_waiting_attempt_out_in_order) {
  attempt_gate gate(1);
  std::array<attempt_gate::entry, 3> e;
  EXPECT_TRUE(gate.enter(e[0]));
  EXPECT_FALSE(gate.enter(e[1]));
  EXPECT_FALSE(gate.enter(e[2]));
  EXPECT_EQ(gate.take_waiting(), &e[1]);
  EXPECT_EQ(gate.take_waiting(), &e[2]);
  EXPECT_EQ(gate.take_waiting(), nullptr);
  EXPECT_EQ(gate.leave(), nullptr);
  EXPECT_EQ(gate.in_flight(), 0u);
}

TEST(attempt_gate, without_a_limit_every_attempt_goes_through) {
  attempt_gate gate(0);
  std::array<attempt_gate::entry, 100> e;
  for (auto& x : e) EXPECT_TRUE(gate.enter(x));
  EXPECT_EQ(gate.waiting(), 0u);
  EXPECT_EQ(gate.in_flight(), 100u);
}

}  // namespace
