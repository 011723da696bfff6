// An owner's bookkeeping (lock_state) without a server: what a release's answer does to the
// holds granted around it. Over an engine context of its own, never connected: nothing here does
// I/O.
#include "engine/lock_state.hpp"

#include "kinds/registry.hpp"
#include "support/engine_fixture.hpp"
#include "support/resp3_values.hpp"

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>

namespace {

using rlock::detail::lock_state;
namespace resp3 = rlock::detail::resp3;
using rlock::test::number;
using namespace std::chrono_literals;

struct owner_fixture {
  boost::asio::io_context io;
  std::shared_ptr<rlock::test::engine_fixture> engine =
      rlock::test::engine_fixture::make(io.get_executor());
  std::shared_ptr<lock_state> s =
      engine->ctx.owners.state_for(engine->context(), "L", 7, rlock::detail::reentrant_kind);
  std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now();

  // The watchdog keeps what it renews alive, and the owner keeps its engine: stopped, as
  // client::close() does, so both go.
  ~owner_fixture() { engine->dog.stop(); }

  /// A hold kept by the watchdog, then its final unlock sent: the owner's grants then.
  std::uint32_t hold_then_unlock() {
    s->on_acquired(1000ms, true, now);
    const auto grants = s->grants;
    (void)s->before_release();
    return grants;
  }
};

TEST(lock_state, a_release_answered_after_a_newer_grant_leaves_that_hold_renewed) {
  owner_fixture f;
  const auto grants = f.hold_then_unlock();
  EXPECT_FALSE(f.s->renewing());  // the final unlock stopped renewing the first hold
  // A newer acquisition of the same owner is granted before the unlock's answer comes (a
  // retried unlock answered by its latch, a grant by push): "released" must not undo it.
  f.s->on_acquired(1000ms, true, f.now);
  const auto out = f.s->on_released(number(1), f.now, grants);
  EXPECT_TRUE(out.verify);
  EXPECT_FALSE(out.error);
  EXPECT_EQ(f.s->local_holds, 1u);
  EXPECT_TRUE(f.s->renewing());
  EXPECT_FALSE(f.s->lost);
}

TEST(lock_state, not_held_answered_after_a_newer_grant_is_not_owner_and_leaves_that_hold) {
  owner_fixture f;
  const auto grants = f.hold_then_unlock();
  f.s->on_acquired(1000ms, true, f.now);
  const auto out = f.s->on_released(resp3::value{}, f.now, grants);
  EXPECT_TRUE(out.verify);
  // The unlock's own caller learns it released nothing.
  EXPECT_EQ(out.error.code, rlock::errc::not_owner);
  EXPECT_EQ(f.s->local_holds, 1u);
  EXPECT_TRUE(f.s->renewing());
}

TEST(lock_state, a_release_answered_with_no_grant_since_ends_the_owners_holds) {
  owner_fixture f;
  const auto grants = f.hold_then_unlock();
  const auto out = f.s->on_released(number(1), f.now, grants);
  EXPECT_FALSE(out.verify);
  EXPECT_EQ(f.s->local_holds, 0u);
  EXPECT_EQ(f.s->server_holds, 0u);
  EXPECT_FALSE(f.s->renewing());
  // And a newer grant that was itself released already changes nothing: nothing to keep.
  const auto again = f.hold_then_unlock();
  f.s->on_acquired(1000ms, true, f.now);
  (void)f.s->before_release();
  EXPECT_FALSE(f.s->on_released(number(1), f.now, again).verify);
  EXPECT_EQ(f.s->local_holds, 0u);
}

}  // namespace
