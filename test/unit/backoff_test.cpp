// Reconnect delays: exponential ceilings up to the cap, full jitter below them.
#include "session/backoff.hpp"

#include <gtest/gtest.h>

namespace {

using rlock::detail::backoff;
using ms = std::chrono::milliseconds;

TEST(backoff, ceilings_double_up_to_the_cap) {
  backoff b(ms(50), ms(2000), 1);
  EXPECT_EQ(b.ceiling_for(0), ms(50));
  EXPECT_EQ(b.ceiling_for(1), ms(100));
  EXPECT_EQ(b.ceiling_for(5), ms(1600));
  EXPECT_EQ(b.ceiling_for(6), ms(2000));
  EXPECT_EQ(b.ceiling_for(1000), ms(2000));
}

TEST(backoff, delays_stay_under_their_ceiling_and_spread_out) {
  backoff b(ms(50), ms(2000), 42);
  ms smallest = ms::max();
  ms largest = ms::zero();
  for (int i = 0; i < 200; ++i) {
    const auto ceiling = b.ceiling_for(b.attempt());
    const auto d = b.next();
    ASSERT_GE(d, ms::zero());
    ASSERT_LE(d, ceiling);
    if (i > 10) {
      smallest = std::min(smallest, d);
      largest = std::max(largest, d);
    }
  }
  // Full jitter: at the cap, delays fill the range rather than sit at the ceiling.
  EXPECT_LT(smallest, ms(500));
  EXPECT_GT(largest, ms(1500));
}

TEST(backoff, reset_starts_again_from_the_initial_delay) {
  backoff b(ms(50), ms(2000), 7);
  for (int i = 0; i < 10; ++i) b.next();
  b.reset();
  EXPECT_EQ(b.attempt(), 0u);
  EXPECT_LE(b.next(), ms(50));
}

}  // namespace
