// The lock family's exclusive kinds against a real server: rlock::fair_lock (Redisson's
// RFairLock: FIFO across clients, the handoff by push, waiters that give up or die never blocking
// the queue), the non-reentrant kinds (a holder's re-acquire refused), and rlock::spin_lock
// (RSpinLock: no pub/sub, waiters poll with backoff). Redisson's side of each is in
// interop_test.cpp.
#include "rlock/rlock.hpp"
#include "script/scripts.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace lock_family_test {

namespace asio = boost::asio;
using rlock::test::error_of;
using rlock::test::make_config;
using rlock::test::poll_until;
using rlock::test::wait_until;
using namespace std::chrono_literals;

std::string queue_of(std::string_view key) {
  return "redisson_lock_queue:{" + std::string(key) + "}";
}
std::string timeouts_of(std::string_view key) {
  return "redisson_lock_timeout:{" + std::string(key) + "}";
}

/// The owner fields in the lock's queue, head first.
std::vector<std::string> queue(rlock::test::raw_client& raw, std::string_view key) {
  std::vector<std::string> out;
  for (const auto& e : raw.command({"LRANGE", queue_of(key), "0", "-1"}).elements) {
    out.push_back(e.str);
  }
  return out;
}

TEST(fair_lock, waiters_of_three_clients_get_it_in_the_order_they_asked_each_by_one_push) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client holder_client(io.get_executor(), cfg);
  std::vector<std::unique_ptr<rlock::client>> clients;
  for (int i = 0; i < 3; ++i)
    clients.push_back(std::make_unique<rlock::client>(io.get_executor(), cfg));
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await holder_client.connect();
    for (auto& c : clients) co_await c->connect();
    auto holder = holder_client.get_fair_lock("turns");
    co_await holder.lock();
    std::vector<rlock::fair_lock> waiters;
    std::vector<int> order;
    asio::steady_timer bell(io);
    for (std::size_t i = 0; i < clients.size(); ++i) {
      waiters.push_back(clients[i]->get_fair_lock("turns"));
      asio::co_spawn(
          io,
          [&, i]() -> asio::awaitable<void> {
            co_await waiters[i].lock();
            order.push_back(static_cast<int>(i));
            bell.cancel();
            co_await waiters[i].unlock();
          },
          asio::detached);
      // In the queue before the next one asks: the order asked is the order queued.
      const bool queued =
          co_await poll_until([&] { return queue(raw, holder.key()).size() == i + 1; });
      RLOCK_CO_ASSERT(queued);
    }
    const auto q = queue(raw, holder.key());
    for (std::size_t i = 0; i < q.size(); ++i) EXPECT_EQ(q[i], waiters[i].owner_field());
    // A fair waiter subscribes before its first attempt, so that attempt is all it makes
    // before it sleeps; a handoff by push costs it no attempt more.
    for (std::size_t i = 0; i < clients.size(); ++i) {
      RLOCK_CO_ASSERT(co_await rlock::test::until_asleep(*clients[i], waiters[i], 1));
      EXPECT_EQ(clients[i]->stats().acquire_attempts, 1u);
    }
    std::vector<std::uint64_t> attempts;
    for (auto& c : clients) attempts.push_back(c->stats().acquire_attempts);
    // rlock's one key expires by itself if every waiter dies (their deadlines plus a lease).
    const auto handoff = "rlock_fair_handoff:{" + std::string(holder.key()) + "}";
    EXPECT_EQ(raw.command_int({"HLEN", handoff}), 3);
    EXPECT_GT(raw.command_int({"PTTL", handoff}), 0);
    co_await holder.unlock();
    co_await wait_until(
        bell, [&] { return order.size() == 3; }, 10s);
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
    for (std::size_t i = 0; i < clients.size(); ++i) {
      EXPECT_EQ(waiters[i].last_wake(), rlock::wake_reason::handoff) << i;
      EXPECT_EQ(clients[i]->stats().acquire_attempts, attempts[i]) << i;
    }
    // Everything a waiter wrote is gone with it.
    const bool empty = co_await poll_until([&] {
      return raw.command_int({"EXISTS", holder.key()}) == 0;
    });
    EXPECT_TRUE(empty);
    EXPECT_EQ(raw.command_int({"EXISTS", queue_of(holder.key())}), 0);
    EXPECT_EQ(raw.command_int({"EXISTS", timeouts_of(holder.key())}), 0);
    EXPECT_EQ(raw.command_int({"HLEN", "rlock_fair_handoff:{" + std::string(holder.key()) + "}"}),
              0);
    co_await holder_client.close();
    for (auto& c : clients) co_await c->close();
  });
}

TEST(fair_lock, a_grant_by_push_is_a_short_claim_on_the_server_until_its_waiters_first_renewal) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.fair_lock.handoff_claim = 400ms;
  cfg.watchdog_timeout = 3s;  // a margin of 35 ms: a 400 ms claim is used as it is
  rlock::client holder_client(io.get_executor(), cfg);
  rlock::client waiter_client(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await holder_client.connect();
    co_await waiter_client.connect();
    auto holder = holder_client.get_fair_lock("claim");
    auto waiter = waiter_client.get_fair_lock("claim");
    auto with_lease = waiter_client.get_fair_lock("claim");
    co_await holder.lock();
    bool got = false;
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await waiter.lock();
          got = true;
          bell.cancel();
        },
        asio::detached);
    RLOCK_CO_ASSERT(co_await rlock::test::until_asleep(waiter_client, waiter, 1));
    // Renewed by the watchdog, it registers the claim as its lease for a push.
    const auto handoff = "rlock_fair_handoff:{" + std::string(holder.key()) + "}";
    const auto registration = raw.command({"HGET", handoff, std::string(waiter.owner_field())}).str;
    EXPECT_TRUE(registration.starts_with("400:")) << registration;
    const auto renewals = waiter_client.stats().renewal_calls;
    co_await holder.unlock();
    co_await wait_until(
        bell, [&] { return got; }, 10s);
    RLOCK_CO_ASSERT(got);
    EXPECT_EQ(waiter.last_wake(), rlock::wake_reason::handoff);
    // Taking the push, it renewed at once: the server's TTL is the whole lease again, long
    // before a round of the watchdog (every 10 s) would have come.
    const bool renewed = co_await poll_until([&] {
      return raw.command_int({"PTTL", holder.key()}) > 1000;
    });
    EXPECT_TRUE(renewed);
    EXPECT_GE(waiter_client.stats().renewal_calls, renewals + 1);
    // Past the claim it still holds, and was never told lost.
    co_await rlock::test::sleep_for(2 * cfg.fair_lock.handoff_claim);
    EXPECT_TRUE(co_await waiter.is_held());
    EXPECT_EQ(waiter_client.stats().lost_locks, 0u);
    co_await waiter.unlock();
    // A waiter with its own lease is pushed that lease: nothing renews it.
    co_await holder.lock();
    bool leased = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          leased = co_await with_lease.try_lock(10s, 5s);
          bell.cancel();
        },
        asio::detached);
    RLOCK_CO_ASSERT(co_await poll_until([&] {
      return raw.command_int({"HEXISTS", handoff, std::string(with_lease.owner_field())}) == 1;
    }));
    EXPECT_TRUE(raw.command({"HGET", handoff, std::string(with_lease.owner_field())})
                    .str.starts_with("5000:"));
    co_await holder.unlock();
    co_await wait_until(
        bell, [&] { return leased; }, 10s);
    RLOCK_CO_ASSERT(leased);
    EXPECT_GT(raw.command_int({"PTTL", holder.key()}), 1000);
    co_await with_lease.unlock();
    co_await holder_client.close();
    co_await waiter_client.close();
  });
}

TEST(fair_lock, without_handoff_by_push_a_waiter_acquires_after_redissons_message) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.fair_lock.handoff_by_push = false;
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto holder = a.get_fair_lock("plain");
    auto waiter = b.get_fair_lock("plain");
    co_await holder.lock();
    bool got = false;
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          got = co_await waiter.try_lock(10s);
          bell.cancel();
        },
        asio::detached);
    const bool asleep = co_await rlock::test::until_asleep(b, waiter, 1);
    RLOCK_CO_ASSERT(asleep);
    co_await holder.unlock();
    co_await wait_until(
        bell, [&] { return got; }, 10s);
    EXPECT_TRUE(got);
    EXPECT_EQ(waiter.last_wake(), rlock::wake_reason::notification);
    EXPECT_EQ(b.stats().acquire_attempts, 2u);  // queued; then, after the push, its acquire
    co_await waiter.unlock();
    co_await a.close();
    co_await b.close();
  });
}

TEST(fair_lock, a_waiter_that_gives_up_or_is_cancelled_leaves_the_queue) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto holder = a.get_fair_lock("leave");
    co_await holder.lock();
    // Out of time.
    auto timed = b.get_fair_lock("leave");
    EXPECT_FALSE(co_await timed.try_lock(100ms));
    bool gone = co_await poll_until([&] { return queue(raw, holder.key()).empty(); });
    EXPECT_TRUE(gone);
    // A single attempt never joins the queue.
    EXPECT_FALSE(co_await timed.try_lock());
    EXPECT_TRUE(queue(raw, holder.key()).empty());
    // Cancelled while queued.
    auto cancelled = b.get_fair_lock("leave");
    asio::cancellation_signal stop;
    std::error_code ec;
    bool done = false;
    asio::steady_timer bell(io);
    asio::co_spawn(io, cancelled.lock(),
                   asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr e) {
                     try {
                       if (e) std::rethrow_exception(e);
                     } catch (const boost::system::system_error& err) {
                       ec = err.code();
                     }
                     done = true;
                     bell.cancel();
                   }));
    const bool queued = co_await poll_until([&] { return queue(raw, holder.key()).size() == 1; });
    RLOCK_CO_ASSERT(queued);
    stop.emit(asio::cancellation_type::terminal);
    co_await wait_until(
        bell, [&] { return done; }, 5s);
    EXPECT_EQ(ec, std::errc::operation_canceled);
    gone = co_await poll_until([&] { return queue(raw, holder.key()).empty(); });
    EXPECT_TRUE(gone);
    EXPECT_EQ(raw.command_int({"ZCARD", timeouts_of(holder.key())}), 0);
    // Nobody left in the queue: the next waiter takes the lock as soon as it is released.
    co_await holder.unlock();
    auto next = b.get_fair_lock("leave");
    EXPECT_TRUE(co_await next.try_lock(0ms));
    co_await next.unlock();
    co_await a.close();
    co_await b.close();
  });
}

// F1 (scripts/bench) found waiters skipped for 2 s: each waiter queued with its try_lock's wait as
// its allowance, and a take moves every deadline behind the taker back by the taker's allowance,
// so a take by a waiter that asked to wait longer moved a live waiter's deadline into the past and
// the next script dropped it as stale. Every rlock waiter now queues with wait_timeout.
TEST(fair_lock, every_waiter_queues_with_one_allowance_whatever_its_wait) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.fair_lock.wait_timeout = 20s;
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::client c(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    co_await c.connect();
    auto holder = a.get_fair_lock("allowance");
    auto patient = b.get_fair_lock("allowance");
    auto hasty = c.get_fair_lock("allowance");
    const auto key = std::string(holder.key());
    co_await holder.lock();
    bool patient_got = false;
    bool hasty_got = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          patient_got = co_await patient.try_lock(40s);
          co_await rlock::test::sleep_for(50ms);
          co_await patient.unlock();
        },
        asio::detached);
    const bool one_queued = co_await poll_until([&] { return queue(raw, key).size() == 1; });
    RLOCK_CO_ASSERT(one_queued);
    asio::co_spawn(
        io, [&]() -> asio::awaitable<void> { hasty_got = co_await hasty.try_lock(10s); },
        asio::detached);
    const bool two_queued = co_await poll_until([&] { return queue(raw, key).size() == 2; });
    RLOCK_CO_ASSERT(two_queued);
    // One allowance for both, whatever their waits: 20 s apart, and registered with it.
    const auto first = queue(raw, key).at(0);
    const auto second = queue(raw, key).at(1);
    const auto deadline = [&](const std::string& field) {
      const auto v = raw.command({"ZSCORE", timeouts_of(key), field});
      return v.str.empty() ? v.real : std::stod(v.str);
    };
    EXPECT_EQ(deadline(second) - deadline(first), 20'000.0);
    const std::string handoffs = "rlock_fair_handoff:{" + key + "}";
    for (const auto& field : {first, second}) {
      const auto r = raw.command({"HGET", handoffs, field}).str;
      EXPECT_NE(r.find(":20000:"), std::string::npos) << field << " registered " << r;
    }
    // The patient waiter takes it: the hasty one's deadline moves back to the patient one's, still
    // ahead, so nobody drops it; it gets the lock next, by push.
    co_await holder.unlock();
    const bool patient_took = co_await poll_until([&] { return patient_got; });
    RLOCK_CO_ASSERT(patient_took);
    const auto now = raw.command({"TIME"});
    RLOCK_CO_ASSERT(now.elements.size() == 2u);
    const double now_ms = std::stod(now.elements[0].str) * 1000.0;
    EXPECT_EQ(queue(raw, key), std::vector<std::string>{second});
    EXPECT_GT(deadline(second), now_ms);
    const bool hasty_took = co_await poll_until([&] { return hasty_got; });
    RLOCK_CO_ASSERT(hasty_took);
    EXPECT_EQ(hasty.last_wake(), rlock::wake_reason::handoff);
    co_await hasty.unlock();
    co_await a.close();
    co_await b.close();
    co_await c.close();
  });
}

TEST(fair_lock, a_wait_timeout_no_deadline_can_hold_is_refused) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.fair_lock.wait_timeout = std::chrono::milliseconds(0x8000'0000);  // one past 2^31 - 1
  EXPECT_EQ(rlock::test::thrown_by([&] { rlock::client bad(io.get_executor(), cfg); }),
            rlock::errc::invalid_argument);
  cfg.fair_lock.wait_timeout = std::chrono::milliseconds(0x7fff'ffff);
  EXPECT_EQ(rlock::test::thrown_by([&] { rlock::client fine(io.get_executor(), cfg); }),
            std::error_code());
}

TEST(fair_lock, a_dead_waiter_ahead_is_dropped_at_its_deadline_and_never_blocks_the_queue) {
  asio::io_context io;
  auto cfg = make_config();
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto holder = a.get_fair_lock("dead");
    co_await holder.lock();
    // A waiter of another process that died in the queue: its entry and a deadline 300 ms on,
    // as its last acquire left them, and nobody to come back.
    const auto key = std::string(holder.key());
    const auto now_ms = raw.command({"TIME"});
    RLOCK_CO_ASSERT(now_ms.elements.size() == 2u);
    const auto deadline = std::to_string(std::stoll(now_ms.elements[0].str) * 1000 +
                                         std::stoll(now_ms.elements[1].str) / 1000 + 300);
    raw.command({"RPUSH", queue_of(key), "dead-uuid:1"});
    raw.command({"ZADD", timeouts_of(key), deadline, "dead-uuid:1"});
    auto waiter = b.get_fair_lock("dead");
    bool got = false;
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          // Nobody tells it the dead head is gone: it looks again within half its own wait
          // (1 s here; its queue allowance is wait_timeout's 60 s), and then after the head's
          // deadline.
          got = co_await waiter.try_lock(2s);
          bell.cancel();
        },
        asio::detached);
    const bool behind = co_await poll_until([&] { return queue(raw, key).size() == 2; });
    RLOCK_CO_ASSERT(behind);
    co_await holder.unlock();  // tells the dead head: nobody hears it
    co_await wait_until(
        bell, [&] { return got; }, 10s);
    EXPECT_TRUE(got);
    EXPECT_TRUE(queue(raw, key).empty());
    co_await waiter.unlock();
    co_await a.close();
    co_await b.close();
  });
}

TEST(fair_lock, a_handoff_to_an_acquisition_that_left_is_given_back_to_the_next) {
  // The race a push cannot settle, played on the scripts: the release hands the lock to a waiter
  // whose leave is already on its way. The leave gives it back and passes it on.
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto holder = a.get_fair_lock("race");
    co_await holder.lock();
    const auto key = std::string(holder.key());
    const auto handoff = "rlock_fair_handoff:{" + key + "}";
    // A registered waiter of ticket 5 at the head, as its acquire leaves it.
    raw.command({"RPUSH", queue_of(key), "gone-uuid:1"});
    raw.command({"ZADD", timeouts_of(key), "99999999999999", "gone-uuid:1"});
    raw.command({"HSET", handoff, "gone-uuid:1", "30000:60000:5"});
    auto next = b.get_fair_lock("race");
    bool got = false;
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          got = co_await next.try_lock(10s);
          bell.cancel();
        },
        asio::detached);
    const bool behind = co_await poll_until([&] { return queue(raw, key).size() == 2; });
    RLOCK_CO_ASSERT(behind);
    co_await holder.unlock();
    // Handed to the head: the hash is its, the grant names its ticket.
    EXPECT_EQ(raw.command({"HGET", key, "gone-uuid:1"}).str, "1");
    EXPECT_EQ(raw.command({"HGET", handoff, "granted"}).str, "5:gone-uuid:1");
    // Its leave (ticket 5), as acquire_op sends it: the hold goes back and on to `next`.
    rlock::client c(io.get_executor(), cfg);
    co_await c.connect();
    const std::string leave(rlock::detail::script_source(rlock::detail::script::leave_fair));
    const auto channel = "redisson_lock__channel:{" + key + "}";
    raw.command({"EVAL", leave, "5", key, queue_of(key), timeouts_of(key), handoff, channel,
                 "gone-uuid:1", "60000", "5", "publish"});
    co_await wait_until(
        bell, [&] { return got; }, 10s);
    EXPECT_TRUE(got);
    EXPECT_EQ(next.last_wake(), rlock::wake_reason::handoff);
    EXPECT_NE(raw.command({"HGET", handoff, "granted"}).str, "5:gone-uuid:1");
    co_await next.unlock();
    co_await a.close();
    co_await b.close();
    co_await c.close();
  });
}

TEST(fair_lock, a_waiter_whose_connection_is_killed_keeps_its_turn) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.health_check_interval = 200ms;
  cfg.reconnect.backoff_initial = 10ms;
  auto waiter_cfg = cfg;
  waiter_cfg.client_name = "fair-killed";
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), waiter_cfg);
  rlock::client c(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    co_await c.connect();
    auto holder = a.get_fair_lock("killed");
    co_await holder.lock();
    auto first = b.get_fair_lock("killed");
    auto second = c.get_fair_lock("killed");
    std::vector<int> order;
    asio::steady_timer bell(io);
    auto wait = [&](rlock::fair_lock& l, int who) -> asio::awaitable<void> {
      co_await l.lock();
      order.push_back(who);
      bell.cancel();
      co_await l.unlock();
    };
    asio::co_spawn(io, wait(first, 1), asio::detached);
    RLOCK_CO_ASSERT(co_await poll_until([&] { return queue(raw, holder.key()).size() == 1; }));
    asio::co_spawn(io, wait(second, 2), asio::detached);
    RLOCK_CO_ASSERT(co_await poll_until([&] { return queue(raw, holder.key()).size() == 2; }));
    EXPECT_EQ(rlock::test::kill_client(raw, "fair-killed"), 1);
    // It comes back, subscribes again and retries: still first in the queue.
    RLOCK_CO_ASSERT(co_await poll_until([&] { return b.stats().reconnects >= 1; }));
    co_await holder.unlock();
    co_await wait_until(
        bell, [&] { return order.size() == 2; }, 10s);
    EXPECT_EQ(order, (std::vector<int>{1, 2}));
    co_await a.close();
    co_await b.close();
    co_await c.close();
  });
}

TEST(fair_lock, an_acquire_answered_after_its_caller_gave_up_is_given_back_and_leaves_nothing) {
  // The server stalls (CLIENT PAUSE) past the caller's wait: the caller is told, the attempt
  // runs when the pause ends and takes the free lock, and that hold goes back at once; neither
  // the lock nor a queue entry is left.
  asio::io_context io;
  auto cfg = make_config();
  cfg.command_timeout = 300ms;
  cfg.health_check_interval = 0ms;  // the pause must not look like a dead connection
  rlock::client c(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
    auto lock = c.get_fair_lock("late");
    const auto key = std::string(lock.key());
    raw.command({"CLIENT", "PAUSE", "700"});
    const auto outcome = co_await error_of(lock.try_lock(200ms));
    EXPECT_EQ(outcome, rlock::errc::timeout) << outcome.message();
    (void)raw.command({"PING"});  // answered when the pause ends
    // Each query is written after the one before was answered: the second comes after the
    // give-back on the same connection.
    (void)co_await lock.is_locked();
    EXPECT_FALSE(co_await lock.is_locked());
    EXPECT_GE(c.stats().given_back, 1u);
    EXPECT_EQ(raw.command_int({"EXISTS", key, queue_of(key), timeouts_of(key)}), 0);
    // The owner is as before: it locks and unlocks as usual.
    EXPECT_TRUE(co_await lock.try_lock());
    EXPECT_EQ(co_await lock.hold_count(), 1);
    co_await lock.unlock();
    co_await c.close();
  });
}

TEST(fair_lock, a_wait_too_long_to_represent_queues_a_deadline_the_server_can_keep) {
  // try_lock(milliseconds::max()) once sent its wait as the queue allowance: the script's
  // deadline became about 9.2e18 and the handoff registration's PEXPIRE refused that float
  // after the queue entry was written. The allowance is now at most longest_server_wait.
  asio::io_context io;
  auto cfg = make_config();
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto holder = a.get_fair_lock("forever");
    auto waiter = b.get_fair_lock("forever");
    const auto key = std::string(holder.key());
    co_await holder.lock();
    bool got = false;
    rlock::errc failed{};
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          try {
            got = co_await waiter.try_lock(std::chrono::milliseconds::max());
          } catch (const boost::system::system_error& e) {
            failed = static_cast<rlock::errc>(e.code().value());
          }
          bell.cancel();
        },
        asio::detached);
    const bool asleep = co_await rlock::test::until_asleep(b, waiter, 1);
    RLOCK_CO_ASSERT(asleep);
    const auto now_ms = raw.command_int({"EVAL",
                                         "local t = redis.call('time'); "
                                         "return t[1] * 1000 + math.floor(t[2] / 1000)",
                                         "0"});
    const auto score = raw.command({"ZSCORE", timeouts_of(key), queue(raw, key).at(0)});
    const double deadline = score.str.empty() ? score.real : std::stod(score.str);
    EXPECT_LE(deadline, static_cast<double>(now_ms) + 0x7fff'ffff + 60'000.0);
    EXPECT_GT(raw.command_int({"PTTL", "rlock_fair_handoff:{" + key + "}"}), 0);
    co_await holder.unlock();
    co_await wait_until(
        bell, [&] { return got || failed != rlock::errc{}; }, 10s);
    EXPECT_TRUE(got);
    EXPECT_EQ(failed, rlock::errc{});
    if (got) co_await waiter.unlock();
    EXPECT_EQ(raw.command_int({"EXISTS", key, queue_of(key), timeouts_of(key)}), 0);
    co_await a.close();
    co_await b.close();
  });
}

TEST(non_reentrant_lock, a_re_acquire_by_its_holder_is_refused_at_once_with_redissons_words) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    auto lock = redis.get_non_reentrant_lock("once");
    co_await lock.lock();
    EXPECT_EQ(co_await error_of(lock.lock()), rlock::errc::reentry_refused);
    EXPECT_NE(lock.last_error().find("NON_REENTRANT_REACQUIRE"), std::string::npos)
        << lock.last_error();
    // With a wait too: refused at once, not after the wait.
    const auto before = std::chrono::steady_clock::now();
    EXPECT_EQ(co_await error_of(lock.try_lock(5s)), rlock::errc::reentry_refused);
    EXPECT_LT(std::chrono::steady_clock::now() - before, 2s);
    EXPECT_EQ(co_await lock.hold_count(), 1);
    // Another owner is excluded as by any lock, and gets it after the one release.
    auto other = redis.get_non_reentrant_lock("once");
    EXPECT_FALSE(co_await other.try_lock());
    co_await lock.unlock();
    EXPECT_FALSE(co_await lock.is_locked());
    EXPECT_TRUE(co_await other.try_lock());
    co_await other.unlock();
    // The non-reentrant fair lock refuses the same way.
    auto fair = redis.get_non_reentrant_fair_lock("once-fair");
    co_await fair.lock();
    EXPECT_EQ(co_await error_of(fair.try_lock(1s)), rlock::errc::reentry_refused);
    co_await fair.unlock();
    co_await redis.close();
  });
}

TEST(non_reentrant_lock, the_blocking_facade_throws_instead_of_deadlocking_its_thread) {
  rlock::blocking::client c(make_config());
  auto lock = c.get<rlock::non_reentrant_lock>("blocking-once");
  lock.lock();
  const auto ec = rlock::test::thrown_by([&] { lock.lock(); });
  EXPECT_EQ(ec, rlock::errc::reentry_refused);
  lock.unlock();
  // A fair lock is TimedLockable for threads too.
  auto fair = c.get<rlock::fair_lock>("blocking-fair");
  EXPECT_TRUE(fair.try_lock_for(100ms));
  std::thread other([&] {
    auto mine = c.get<rlock::fair_lock>("blocking-fair");
    EXPECT_FALSE(mine.try_lock_for(50ms));
  });
  other.join();
  fair.unlock();
}

TEST(spin_lock, waiters_poll_with_backoff_and_a_release_publishes_nothing) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::test::raw_client raw(cfg.port);
  rlock::test::raw_client subscriber(cfg.port);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto holder = a.get_spin_lock("spin");
    const auto channel = "redisson_lock__channel:{" + std::string(holder.key()) + "}";
    subscriber.send({"SUBSCRIBE", channel});
    RLOCK_CO_ASSERT(subscriber.read_push(5s).is_push());
    co_await holder.lock();
    auto waiter = b.get_spin_lock("spin");
    bool got = false;
    asio::steady_timer bell(io);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          got = co_await waiter.try_lock(10s);
          bell.cancel();
        },
        asio::detached);
    // 1 + 2 + 4 + ... + 128 ms: about 9 attempts in the first 255 ms, then one per 128 ms.
    const bool polled = co_await poll_until([&] { return b.stats().acquire_attempts >= 8; }, 5s);
    RLOCK_CO_ASSERT(polled);
    const auto at_eight = std::chrono::steady_clock::now();
    // Nobody listens: the waiter subscribed to nothing (only our subscriber is on the channel).
    auto numsub = raw.command({"PUBSUB", "NUMSUB", channel});
    RLOCK_CO_ASSERT(numsub.elements.size() == 2u);
    EXPECT_EQ(numsub.elements[1].integer, 1);
    const bool slower = co_await poll_until([&] { return b.stats().acquire_attempts >= 11; }, 5s);
    RLOCK_CO_ASSERT(slower);
    // Three more attempts took at least two capped sleeps: the backoff grew.
    EXPECT_GE(std::chrono::steady_clock::now() - at_eight, 200ms);
    co_await holder.unlock();
    co_await wait_until(
        bell, [&] { return got; }, 10s);
    EXPECT_TRUE(got);
    // The release published nothing: the next thing the subscriber reads is our marker.
    raw.command({"PUBLISH", channel, "marker"});
    auto next = subscriber.read_push(5s);
    RLOCK_CO_ASSERT(next.elements.size() == 3u);
    EXPECT_EQ(next.elements[2].str, "marker");
    co_await waiter.unlock();
    co_await a.close();
    co_await b.close();
  });
}

TEST(spin_lock, a_polling_waiter_is_cancelled_at_once_and_failed_by_close) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.spin_lock.initial = 50ms;  // long sleeps: what ends them must be the event, not the timer
  cfg.spin_lock.cap = 10s;
  rlock::client a(io.get_executor(), cfg);
  rlock::client b(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    auto holder = a.get_spin_lock("spin-cancel");
    co_await holder.lock();
    auto waiter = b.get_spin_lock("spin-cancel");
    asio::cancellation_signal stop;
    std::error_code ec;
    int done = 0;
    asio::steady_timer bell(io);
    auto record = [&](std::exception_ptr e) {
      try {
        if (e) std::rethrow_exception(e);
      } catch (const boost::system::system_error& err) {
        ec = err.code();
      }
      ++done;
      bell.cancel();
    };
    asio::co_spawn(io, waiter.lock(), asio::bind_cancellation_slot(stop.slot(), record));
    RLOCK_CO_ASSERT(co_await poll_until([&] { return b.stats().acquire_attempts >= 3; }));
    const auto before = std::chrono::steady_clock::now();
    stop.emit(asio::cancellation_type::terminal);
    co_await wait_until(
        bell, [&] { return done == 1; }, 5s);
    EXPECT_EQ(ec, std::errc::operation_canceled);
    EXPECT_LT(std::chrono::steady_clock::now() - before, 2s);  // not when its sleep ends
    // A second waiter, then the client closes under it.
    auto other = b.get_spin_lock("spin-cancel");
    asio::co_spawn(io, other.lock(), record);
    RLOCK_CO_ASSERT(co_await poll_until([&] { return b.stats().acquire_attempts >= 6; }));
    co_await b.close();
    co_await wait_until(
        bell, [&] { return done == 2; }, 5s);
    EXPECT_EQ(done, 2);
    EXPECT_TRUE(ec == rlock::errc::connection_lost || ec == std::errc::operation_canceled)
        << ec.message();
    co_await holder.unlock();
    co_await a.close();
  });
}

TEST(spin_lock, bad_backoff_settings_are_refused_when_the_client_is_made) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.spin_lock.cap = 0ms;
  EXPECT_EQ(rlock::test::thrown_by([&] { rlock::client c(io.get_executor(), cfg); }),
            rlock::errc::invalid_argument);
  cfg = make_config();
  cfg.spin_lock.multiplier = 0;
  EXPECT_EQ(rlock::test::thrown_by([&] { rlock::client c(io.get_executor(), cfg); }),
            rlock::errc::invalid_argument);
}

/// One owned kind through the generic factories: a new owner and a named one are the kind's own
/// constructor (client::get<Kind>), a handle of a named owner shares that owner's holds, and
/// the blocking client's get<Kind> takes and gives back the same lock.
template <typename Kind>
asio::awaitable<void> made_by_get(rlock::client& c, rlock::blocking::client& bc,
                                  std::string_view word, std::vector<std::string>& seen) {
  const std::string name = "get:" + std::string(word);
  auto fresh = c.get<Kind>(name);
  auto named = c.get<Kind>(name, 4242);
  EXPECT_NE(fresh.owner_id(), named.owner_id()) << word;
  EXPECT_EQ(named.owner_id(), 4242u) << word;
  EXPECT_EQ(named.name(), name) << word;
  co_await named.lock();
  EXPECT_TRUE(co_await c.get<Kind>(name, 4242).is_held()) << word;  // the same owner's state
  co_await named.unlock();
  EXPECT_FALSE(co_await named.is_held()) << word;
  auto blocking = bc.get<Kind>(name);
  blocking.lock();
  EXPECT_TRUE(blocking.is_held()) << word;
  blocking.unlock();
  seen.emplace_back(word);
}

// A kind of the one list (rlock/detail/kind_list.hpp) needs nothing more to be made by the
// generic factories, driven by rlockctl's `hold --kind` and the chaos workload: this expands the
// list, so a kind added to it is covered here.
TEST(lock_family, every_owned_kind_of_the_list_is_made_by_its_own_constructor_through_get) {
  asio::io_context io;
  const auto cfg = make_config();
  rlock::client c(io.get_executor(), cfg);
  rlock::blocking::client bc(cfg);
  std::vector<std::string> seen;
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await c.connect();
#define MADE_BY_GET(type, word) co_await made_by_get<rlock::type>(c, bc, word, seen);
    RLOCK_OWNED_LOCK_KINDS(MADE_BY_GET)
#undef MADE_BY_GET
    co_await c.close();
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"reentrant", "non-reentrant", "fair",
                                            "non-reentrant-fair", "spin", "read", "write"}));
}

}  // namespace lock_family_test
