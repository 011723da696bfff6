// Scoped holds (co_await lock.scoped()) and with_lock: a hold left without unlock() — by an
// exception or a cancellation — releases the lock at once, not at its lease; with_lock returns
// the work's result, releases, and cancels the work when the lock is lost.
#include "support/lock_env.hpp"
#include "support/run.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <rlock/rlock.hpp>
#include <stdexcept>

namespace hold_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using rlock::test::error_of;
using rlock::test::make_config;

// Watchdog leases of 30 s (the default): a lock another owner gets within the 5 s waits below
// was released, not expired.
constexpr auto patience = 5s;

TEST(hold, unlock_releases_and_leaves_the_hold_empty) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("h");
    auto h = co_await lock.scoped();
    EXPECT_TRUE(h.owns_lock());
    EXPECT_TRUE(co_await lock.is_held());
    co_await h.unlock();
    EXPECT_FALSE(h.owns_lock());
    EXPECT_FALSE(co_await lock.is_locked());
    // A second unlock through the empty hold is misuse, reported.
    EXPECT_EQ(co_await error_of([&]() -> asio::awaitable<void> { co_await h.unlock(); }()),
              rlock::errc::not_owner);
    co_await redis.close();
  });
}

TEST(hold, an_exception_leaving_the_scope_releases_the_lock_at_once) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("h");
    auto other = redis.get_lock("h");
    bool thrown = false;
    try {
      auto h = co_await lock.scoped();
      throw std::runtime_error("the work failed");
    } catch (const std::runtime_error&) {
      thrown = true;
    }
    EXPECT_TRUE(thrown);
    EXPECT_TRUE(co_await other.try_lock(patience));  // woken by the posted unlock's publish
    co_await other.unlock();
    co_await redis.close();
  });
}

TEST(hold, a_cancelled_coroutine_releases_its_hold) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  asio::cancellation_signal cancel;
  bool holding = false;
  std::exception_ptr ended;
  bool finished = false;
  auto lock = redis.get_lock("h");
  // A coroutine holding the lock waits (a minute) for something that never comes; it is
  // cancelled while it holds.
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          auto h = co_await lock.scoped();
          holding = true;
          asio::steady_timer forever(io, 60s);
          co_await forever.async_wait(asio::use_awaitable);
        },
        asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e) {
          ended = e;
          finished = true;
        }));
    for (int i = 0; i < 500 && !holding; ++i) co_await rlock::test::sleep_for(2ms);
    EXPECT_TRUE(holding);
    cancel.emit(asio::cancellation_type::terminal);
    auto other = redis.get_lock("h");
    EXPECT_TRUE(co_await other.try_lock(patience));
    EXPECT_TRUE(finished);
    co_await other.unlock();
    co_await redis.close();
  });
  ASSERT_TRUE(ended);
  EXPECT_THROW(std::rethrow_exception(ended), boost::system::system_error);
}

TEST(hold, an_unlock_a_cancelled_coroutine_cannot_start_is_left_to_the_destructor) {
  // A cancelled coroutine catches the cancellation and calls unlock() while cleaning up: its
  // co_await throws before the release starts (Asio's throw_if_cancelled), so the hold must
  // still own the lock and release it as it is destroyed, not drop it held and renewed.
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  asio::cancellation_signal cancel;
  bool holding = false;
  bool cleanup_threw = false;
  bool finished = false;
  auto lock = redis.get_lock("h");
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          auto h = co_await lock.scoped();
          holding = true;
          bool cancelled = false;
          try {
            asio::steady_timer forever(io, 60s);
            co_await forever.async_wait(asio::use_awaitable);
          } catch (const boost::system::system_error&) {
            cancelled = true;
          }
          if (cancelled) {
            try {
              co_await h.unlock();
            } catch (const boost::system::system_error&) {
              cleanup_threw = true;
            }
          }
        },
        asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr) { finished = true; }));
    for (int i = 0; i < 500 && !holding; ++i) co_await rlock::test::sleep_for(2ms);
    EXPECT_TRUE(holding);
    cancel.emit(asio::cancellation_type::terminal);
    auto other = redis.get_lock("h");
    EXPECT_TRUE(co_await other.try_lock(patience));
    EXPECT_TRUE(finished);
    EXPECT_TRUE(cleanup_threw);
    co_await other.unlock();
    for (int i = 0; i < 200 && !redis.activity().idle(); ++i) {
      co_await rlock::test::sleep_for(5ms);
    }
    EXPECT_EQ(redis.activity().renewed_locks, 0u);  // nothing kept renewed for no one
    co_await redis.close();
  });
}

TEST(with_lock, cancelled_it_stops_the_work_and_releases) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  asio::cancellation_signal cancel;
  bool working = false;
  std::exception_ptr ended;
  bool finished = false;
  auto lock = redis.get_lock("w");
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    asio::co_spawn(io,
                   rlock::with_lock(lock,
                                    [&]() -> asio::awaitable<void> {
                                      working = true;
                                      asio::steady_timer forever(io, 60s);
                                      co_await forever.async_wait(asio::use_awaitable);
                                    }),
                   asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e) {
                     ended = e;
                     finished = true;
                   }));
    for (int i = 0; i < 500 && !working; ++i) co_await rlock::test::sleep_for(2ms);
    EXPECT_TRUE(working);
    cancel.emit(asio::cancellation_type::terminal);
    auto other = redis.get_lock("w");
    EXPECT_TRUE(co_await other.try_lock(patience));  // released, not left to its lease
    EXPECT_TRUE(finished);
    co_await other.unlock();
    co_await redis.close();
  });
  EXPECT_TRUE(ended);  // the work's cancellation, rethrown
}

TEST(hold, moves_transfer_the_hold_and_assignment_releases_the_old_one) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto a = redis.get_lock("a");
    auto b = redis.get_lock("b");
    rlock::hold first = co_await a.scoped();
    rlock::hold moved = std::move(first);
    EXPECT_FALSE(first.owns_lock());  // NOLINT(bugprone-use-after-move): what a move leaves
    EXPECT_TRUE(moved.owns_lock());
    EXPECT_EQ(moved.lock()->name(), "a");
    moved = co_await b.scoped();  // a's hold is released in the background
    auto other_a = redis.get_lock("a");
    EXPECT_TRUE(co_await other_a.try_lock(patience));
    co_await other_a.unlock();
    EXPECT_TRUE(co_await b.is_held());
    // release() hands the unlock to the caller: nothing is released in the background.
    rlock::reentrant_lock handle = moved.release();
    EXPECT_FALSE(moved.owns_lock());
    EXPECT_TRUE(co_await handle.is_held());
    co_await handle.unlock();
    co_await redis.close();
  });
}

TEST(hold, try_scoped_is_empty_when_not_acquired) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto mine = redis.get_lock("t");
    auto theirs = redis.get_lock("t");
    auto h = co_await mine.try_scoped(0ms, 10s);
    EXPECT_TRUE(h.owns_lock());
    {
      auto none = co_await theirs.try_scoped(20ms);
      EXPECT_FALSE(none.owns_lock());
    }  // an empty hold releases nothing
    EXPECT_EQ(co_await mine.hold_count(), 1);
    co_await h.unlock();
    co_await redis.close();
  });
}

TEST(with_lock, returns_the_result_and_releases) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("w");
    const int total = co_await rlock::with_lock(lock, [&]() -> asio::awaitable<int> {
      EXPECT_TRUE(co_await lock.is_held());
      co_return 42;
    });
    EXPECT_EQ(total, 42);
    EXPECT_FALSE(co_await lock.is_locked());
    bool ran = false;
    co_await rlock::with_lock(lock, [&]() -> asio::awaitable<void> {
      ran = true;
      co_return;
    });
    EXPECT_TRUE(ran);
    EXPECT_FALSE(co_await lock.is_locked());
    co_await redis.close();
  });
}

TEST(with_lock, the_work_s_exception_is_rethrown_after_the_release) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("w");
    bool thrown = false;
    try {
      co_await rlock::with_lock(lock, [&]() -> asio::awaitable<int> {
        throw std::runtime_error("bad input");
        co_return 0;
      });
    } catch (const std::runtime_error& e) {
      thrown = std::string(e.what()) == "bad input";
    }
    EXPECT_TRUE(thrown);
    EXPECT_FALSE(co_await lock.is_locked());
    co_await redis.close();
  });
}

TEST(with_lock, a_lost_lock_cancels_the_work) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.watchdog_timeout = 1000ms;  // renewals every ~333 ms find the loss quickly
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_lock("w");
    rlock::test::raw_client raw(rlock::test::shared_server().port());
    bool cancelled = false;
    const auto ec = co_await error_of(rlock::with_lock(lock, [&]() -> asio::awaitable<void> {
      raw.command({"DEL", lock.key()});  // taken away behind the holder's back
      asio::steady_timer long_work(io, 60s);
      auto [wec] = co_await long_work.async_wait(asio::as_tuple(asio::use_awaitable));
      cancelled = wec == asio::error::operation_aborted;
    }));
    EXPECT_EQ(ec, rlock::errc::lock_lost);
    EXPECT_TRUE(cancelled);
    co_await redis.close();
  });
}

}  // namespace hold_test
