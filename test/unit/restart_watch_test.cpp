// Redlock's delayed restart as the client keeps it (src/quorum/restart_watch.hpp).
#include "quorum/restart_watch.hpp"

#include <gtest/gtest.h>

namespace restart_watch_test {

using namespace std::chrono_literals;
using rlock::detail::restart_watch;
using clock_type = std::chrono::steady_clock;

const clock_type::time_point t0 = clock_type::time_point(100s);

TEST(restart_watch, a_node_back_after_a_reconnect_is_not_counted_until_the_delay_has_passed) {
  restart_watch w;
  w.baseline(2);  // reconnects before the lock was made are not restarts of its own
  EXPECT_TRUE(w.counted(2, t0, 30s));
  EXPECT_FALSE(w.counted(3, t0 + 1s, 30s));
  EXPECT_FALSE(w.counted(3, t0 + 30s, 30s));
  EXPECT_TRUE(w.counted(3, t0 + 31s, 30s));
  // Another one starts the delay again.
  EXPECT_FALSE(w.counted(4, t0 + 40s, 30s));
  EXPECT_EQ(w.back_at(), t0 + 40s);
}

TEST(restart_watch, without_a_baseline_a_reconnect_counts_as_seen_now_and_none_as_none) {
  restart_watch fresh;
  EXPECT_TRUE(fresh.counted(0, t0, 30s));
  restart_watch unknown;
  EXPECT_FALSE(unknown.counted(1, t0, 30s));
  EXPECT_TRUE(unknown.counted(1, t0 + 30s, 30s));
}

TEST(restart_watch, no_delay_counts_every_node) {
  restart_watch w;
  w.baseline(0);
  EXPECT_TRUE(w.counted(5, t0, 0ms));
}

}  // namespace restart_watch_test
