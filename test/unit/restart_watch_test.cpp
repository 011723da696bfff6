// Redlock's delayed restart as the client keeps it (src/quorum/restart_watch.hpp).
#include "quorum/restart_watch.hpp"

#include <gtest/gtest.h>

namespace restart_watch_test {

using namespace std::chrono_literals;
using rlock::detail::restart_wait;
using clock_type = std::chrono::steady_clock;

const clock_type::time_point t0 = clock_type::time_point(100s);

TEST(restart_watch, a_node_back_after_a_reconnect_sits_out_until_the_delay_has_passed) {
  EXPECT_EQ(restart_wait(t0, t0 + 1s, 30s), 29s);
  EXPECT_EQ(restart_wait(t0, t0 + 30s - 1ms, 30s), 1ms);
  EXPECT_EQ(restart_wait(t0, t0 + 30s, 30s), 0ms);
  EXPECT_EQ(restart_wait(t0, t0 + 31s, 30s), 0ms);
  // Part of a millisecond left still sits out a whole one (never rounded to "votes").
  EXPECT_EQ(restart_wait(t0, t0 + 30s - 1us, 30s), 1ms);
}

TEST(restart_watch, a_node_never_reconnected_and_no_delay_always_vote) {
  EXPECT_EQ(restart_wait(clock_type::time_point{}, t0, 30s), 0ms);
  EXPECT_EQ(restart_wait(t0, t0, 0ms), 0ms);
}

}  // namespace restart_watch_test
