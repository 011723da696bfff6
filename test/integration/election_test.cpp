// rlock::election against a real server: campaign and its term, a waiting candidate woken by a
// resignation (and by a Java holder's unlock), leader() from any instance, proclaim by the leader
// only, observers told every change in order (and the state as it is after a reconnect), lost()
// and with_leadership when the lead is taken away, cancellation, bad input, the blocking forms.
#include "chaos/fault_proxy.hpp"
#include "rlock/rlock.hpp"
#include "rlock/with_leadership.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"
#include "support/redisson_scripts.hpp"
#include "support/run.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace election_test {

namespace asio = boost::asio;
using rlock::election_change;
using rlock::test::error_of;
using rlock::test::make_config;
using rlock::test::poll_until;
using namespace std::chrono_literals;
using event = election_change::event;

/// operation_aborted as error_of() reports it.
std::error_code aborted() {
  return std::error_code(boost::system::error_code(asio::error::operation_aborted));
}

/// Waits (at most 5 s) until `redis` made `attempts` acquire attempts in all: a candidate that
/// made its two (the first, and the one once its channel is confirmed) is asleep on it.
asio::awaitable<bool> asleep_after(rlock::client& redis, std::uint64_t attempts) {
  co_return co_await poll_until([&] { return redis.stats().acquire_attempts >= attempts; }, 5s);
}

TEST(election, a_campaign_leads_with_a_term_that_leader_reads_from_any_instance) {
  asio::io_context io;
  rlock::client a(io.get_executor(), make_config());
  auto other_cfg = make_config();
  other_cfg.key_prefix = a.get_config().key_prefix;
  rlock::client b(io.get_executor(), other_cfg);
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await a.connect();
    co_await b.connect();
    rlock::election candidate(a, "scheduler");
    rlock::election reader(b, "scheduler");
    EXPECT_EQ(co_await reader.leader(), std::nullopt);  // nobody ever led
    EXPECT_EQ(candidate.record_key(), "rlock_election:{" + std::string(candidate.key()) + "}");
    EXPECT_EQ(candidate.channel(), "rlock_election_channel:{" + std::string(candidate.key()) + "}");
    const std::int64_t term = co_await candidate.campaign("10.0.0.1:8080");
    EXPECT_GT(term, 0);
    EXPECT_EQ(candidate.term(), term);
    // Redisson's layout: the lock hash holds the candidate's field once, the counter the term.
    EXPECT_EQ(
        raw.command({"HGET", std::string(candidate.key()), std::string(candidate.owner())}).str,
        "1");
    EXPECT_EQ(
        raw.command({"GET", "redisson_lock_token:{" + std::string(candidate.key()) + "}"}).str,
        std::to_string(term));
    const auto who = co_await reader.leader();
    EXPECT_TRUE(who.has_value());
    if (!who) co_return;
    EXPECT_EQ(who->owner, candidate.owner());
    EXPECT_EQ(who->value, "10.0.0.1:8080");
    EXPECT_EQ(who->term, term);
    EXPECT_GE(who->led_for, 0ms);
    EXPECT_LT(who->led_for, 10s);
    EXPECT_GT(who->since.time_since_epoch(), 0ms);
    EXPECT_EQ(who->seq, 1u);
    // Campaigning again while leading answers the same term and takes no second hold.
    EXPECT_EQ(co_await candidate.campaign("ignored"), term);
    EXPECT_EQ(
        raw.command({"HGET", std::string(candidate.key()), std::string(candidate.owner())}).str,
        "1");
    co_await candidate.resign();
    EXPECT_EQ(co_await reader.leader(), std::nullopt);
    EXPECT_EQ(raw.command_int({"EXISTS", std::string(candidate.key())}), 0);
    co_await a.close();
    co_await b.close();
  });
}

TEST(election, a_resignation_wakes_the_next_candidate_with_a_larger_term) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    rlock::election first(redis, "compactor");
    rlock::election second(redis, "compactor");
    const auto t1 = co_await first.campaign("first");
    EXPECT_EQ(co_await second.try_campaign("second", 0ms), std::nullopt);
    EXPECT_EQ(co_await second.try_campaign("second", 20ms), std::nullopt);
    std::optional<std::int64_t> t2;
    const auto attempts = redis.stats().acquire_attempts;
    asio::co_spawn(
        io, [&]() -> asio::awaitable<void> { t2 = co_await second.campaign("second"); },
        asio::detached);
    EXPECT_TRUE(co_await asleep_after(redis, attempts + 2));
    const auto messages = redis.stats().notified_wakeups;
    co_await first.resign();
    EXPECT_TRUE(co_await poll_until([&] { return t2.has_value(); }, 5s));
    if (!t2) co_return;
    EXPECT_GT(*t2, t1);
    EXPECT_GT(redis.stats().notified_wakeups, messages);  // woken by the unlock message
    const auto who = co_await first.leader();
    EXPECT_TRUE(who && who->value == "second" && who->term == *t2);
    // The former leader is refused what only a leader may do.
    EXPECT_EQ(co_await error_of(first.resign()), rlock::errc::not_owner);
    EXPECT_EQ(co_await error_of(first.proclaim("x")), rlock::errc::not_owner);
    co_await second.resign();
    co_await redis.close();
  });
}

TEST(election, proclaim_changes_the_value_of_the_leader_only) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    rlock::election leader(redis, "router");
    rlock::election follower(redis, "router");
    EXPECT_EQ(co_await error_of(leader.proclaim("early")), rlock::errc::not_owner);
    const auto term = co_await leader.campaign("v1");
    co_await leader.proclaim("v2");
    auto who = co_await follower.leader();
    EXPECT_TRUE(who && who->value == "v2" && who->term == term && who->seq == 2u);
    co_await leader.proclaim("v2");  // the same value: nothing to tell, no new change
    who = co_await follower.leader();
    EXPECT_TRUE(who && who->seq == 2u);
    EXPECT_EQ(co_await error_of(follower.proclaim("usurper")), rlock::errc::not_owner);
    EXPECT_NE(follower.last_error().find("does not lead"), std::string::npos);
    who = co_await follower.leader();
    EXPECT_TRUE(who && who->value == "v2");
    co_await leader.resign();
    co_await redis.close();
  });
}

TEST(election, an_observer_is_told_every_change_in_order_once) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  auto watcher_cfg = make_config();
  watcher_cfg.key_prefix = redis.get_config().key_prefix;
  rlock::client watcher(io.get_executor(), watcher_cfg);
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    co_await watcher.connect();
    rlock::election a(redis, "primary");
    rlock::election b(redis, "primary");
    const auto ta = co_await a.campaign("a");
    rlock::election view(watcher, "primary");
    auto changes = view.observe();
    // First the state as it is.
    auto c = co_await changes.next();
    EXPECT_EQ(c.what, event::snapshot);
    EXPECT_EQ(c.seq, 1u);
    EXPECT_EQ(c.term, ta);
    EXPECT_TRUE(c.leading);
    EXPECT_EQ(c.value, "a");
    // A stranger's message on the channel is not a change.
    raw.command({"PUBLISH", a.channel(), "not an election message"});
    raw.command({"PUBLISH", a.channel(), "99:99:crowned:x"});
    co_await a.proclaim("a:with:colons");
    std::optional<std::int64_t> tb;
    asio::co_spawn(
        io, [&]() -> asio::awaitable<void> { tb = co_await b.campaign("b"); }, asio::detached);
    co_await a.resign();
    c = co_await changes.next();
    EXPECT_EQ(c.what, event::proclaimed);
    EXPECT_EQ(c.seq, 2u);
    EXPECT_EQ(c.value, "a:with:colons");
    EXPECT_EQ(c.skipped, 0u);
    c = co_await changes.next();
    EXPECT_EQ(c.what, event::resigned);
    EXPECT_EQ(c.seq, 3u);
    EXPECT_EQ(c.term, ta);
    EXPECT_FALSE(c.leading);
    c = co_await changes.next();
    EXPECT_EQ(c.what, event::elected);
    EXPECT_EQ(c.seq, 4u);
    EXPECT_TRUE(c.leading);
    EXPECT_EQ(c.value, "b");
    EXPECT_GT(c.term, ta);
    EXPECT_TRUE(co_await poll_until([&] { return tb.has_value(); }, 5s));
    EXPECT_EQ(tb.value_or(0), c.term);
    co_await b.resign();
    c = co_await changes.next();
    EXPECT_EQ(c.what, event::resigned);
    EXPECT_EQ(c.seq, 5u);
    changes.close();
    EXPECT_EQ(co_await error_of(changes.next()), aborted());
    co_await redis.close();
    co_await watcher.close();
  });
}

TEST(election, an_observer_cut_off_is_told_the_state_as_it_is_and_what_it_skipped) {
  asio::io_context io;
  rlock::test::fault_proxy proxy(rlock::test::shared_server().port());
  rlock::client redis(io.get_executor(), make_config());
  auto watcher_cfg = make_config();
  watcher_cfg.key_prefix = redis.get_config().key_prefix;
  watcher_cfg.port = proxy.port();
  rlock::client watcher(io.get_executor(), watcher_cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    co_await watcher.connect();
    rlock::election a(redis, "primary");
    rlock::election view(watcher, "primary");
    auto changes = view.observe();
    const auto ta = co_await a.campaign("a");
    auto c = co_await changes.next();  // elected (or the snapshot, if the read came after it)
    EXPECT_EQ(c.seq, 1u);
    EXPECT_EQ(c.term, ta);
    // The watcher's connection stalls and is cut: three changes are published meanwhile.
    proxy.drop(rlock::test::direction::to_client);
    co_await a.proclaim("a2");
    co_await a.proclaim("a3");
    co_await a.proclaim("a4");
    proxy.cut_all();
    proxy.heal();
    c = co_await changes.next();
    EXPECT_EQ(c.what, event::snapshot);
    EXPECT_EQ(c.seq, 4u);
    EXPECT_EQ(c.value, "a4");
    EXPECT_EQ(c.skipped, 2u);  // a2 and a3 were never told
    EXPECT_EQ(c.term, ta);     // the same leader throughout
    co_await a.proclaim("a5");
    c = co_await changes.next();
    EXPECT_EQ(c.what, event::proclaimed);
    EXPECT_EQ(c.seq, 5u);
    EXPECT_EQ(c.skipped, 0u);
    co_await a.resign();
    co_await redis.close();
    co_await watcher.close();
  });
}

TEST(election, an_observer_goes_on_after_the_server_lost_the_election) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    rlock::election a(redis, "forgotten");
    rlock::election b(redis, "forgotten");
    auto changes = a.observe();
    co_await a.campaign("a");
    co_await a.proclaim("a2");
    co_await a.proclaim("a3");
    election_change c;
    for (int i = 0; i < 4 && c.seq < 3; ++i) c = co_await changes.next();
    EXPECT_EQ(c.seq, 3u);
    // The server forgets the election (as a restart without persistence or a FLUSHALL would):
    // its next record starts again from seq 1, below what the observer was told.
    raw.command({"DEL", std::string(a.key()), "redisson_lock_token:{" + std::string(a.key()) + "}",
                 a.record_key()});
    EXPECT_EQ(co_await b.campaign("b"), 1);
    c = co_await changes.next();
    EXPECT_EQ(c.what, event::snapshot);  // the record read says what the message could not
    EXPECT_EQ(c.seq, 1u);
    EXPECT_EQ(c.value, "b");
    EXPECT_EQ(c.skipped, 0u);
    co_await b.proclaim("b2");
    c = co_await changes.next();
    EXPECT_EQ(c.what, event::proclaimed);
    EXPECT_EQ(c.seq, 2u);
    co_await b.resign();
    co_await redis.close();
  });
}

TEST(election, a_java_holder_excludes_a_campaign_and_its_unlock_wakes_it) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::raw_client java(rlock::test::shared_server().port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    rlock::election candidate(redis, "batch");
    const std::string key(candidate.key());
    const std::string counter = "redisson_lock_token:{" + key + "}";
    const std::string field = "5f0c7a3e-0000-4000-8000-000000000001:77";
    auto java_token = java.command(
        {"EVAL", rlock::test::redisson_fenced_acquire, "2", key, counter, "30000", field});
    EXPECT_EQ(java_token.elements.size(), 2u);
    EXPECT_EQ(co_await candidate.try_campaign("cpp", 0ms), std::nullopt);
    const auto who = co_await candidate.leader();
    EXPECT_TRUE(who && who->owner == field && who->value.empty() && who->term == 1);
    std::optional<std::int64_t> term;
    const auto attempts = redis.stats().acquire_attempts;
    asio::co_spawn(
        io, [&]() -> asio::awaitable<void> { term = co_await candidate.campaign("cpp"); },
        asio::detached);
    EXPECT_TRUE(co_await asleep_after(redis, attempts + 2));
    // Redisson's unlock: "0" on the unlock channel.
    java.command({"EVAL", rlock::test::redisson_release, "2", key,
                  "redisson_lock__channel:{" + key + "}", "0", "30000", field});
    EXPECT_TRUE(co_await poll_until([&] { return term.has_value(); }, 5s));
    EXPECT_EQ(term.value_or(0), 2);  // above the Java holder's token
    // And the leader excludes Java's acquire.
    auto refused = java.command(
        {"EVAL", rlock::test::redisson_fenced_acquire, "2", key, counter, "30000", field});
    EXPECT_TRUE(refused.elements.size() == 2u && refused.elements[1].integer == -1);
    co_await candidate.resign();
    co_await redis.close();
  });
}

TEST(election, a_leader_whose_lock_is_deleted_is_told_and_its_job_cancelled) {
  asio::io_context io;
  auto cfg = make_config();
  cfg.watchdog_timeout = 900ms;  // renewed every 300 ms: the loss is found within that
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    rlock::election e(redis, "cron");
    bool started = false;
    bool finished = false;
    std::int64_t term_seen = 0;
    auto job = [&](std::int64_t term) -> asio::awaitable<int> {
      started = true;
      term_seen = term;
      asio::steady_timer forever(co_await asio::this_coro::executor, 60s);
      co_await forever.async_wait(asio::use_awaitable);
      finished = true;
      co_return 1;
    };
    std::error_code outcome;
    bool done = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          outcome = co_await error_of(rlock::with_leadership(e, "me", job));
          done = true;
        },
        asio::detached);
    EXPECT_TRUE(co_await poll_until([&] { return started; }, 5s));
    EXPECT_GT(term_seen, 0);
    raw.command({"DEL", std::string(e.key())});  // an operator's hand, a FLUSHALL, a failover
    EXPECT_TRUE(co_await poll_until([&] { return done; }, 10s));
    EXPECT_EQ(outcome, rlock::errc::lock_lost);
    EXPECT_FALSE(finished);
    auto m = e.metrics();
    EXPECT_FALSE(m.leading);
    EXPECT_EQ(m.terms_won, 1u);
    EXPECT_EQ(m.failovers, 1u);  // ended without a resignation
    EXPECT_EQ(m.resignations, 0u);
    EXPECT_GT(m.time_leading, 0ms);
    // Not leading: lost() says so; a new campaign leads with a new term.
    EXPECT_EQ(co_await error_of(e.lost()), rlock::errc::not_owner);
    EXPECT_GT(co_await e.campaign("again"), term_seen);
    co_await e.resign();
    co_await redis.close();
  });
}

TEST(election, a_partitioned_leader_stops_believing_before_another_is_elected) {
  asio::io_context io;
  rlock::test::fault_proxy proxy(rlock::test::shared_server().port());
  auto leader_cfg = make_config();
  leader_cfg.port = proxy.port();
  leader_cfg.watchdog_timeout = 900ms;  // the leader lease: renewed every 300 ms
  leader_cfg.command_timeout = 200ms;
  rlock::client leader_client(io.get_executor(), leader_cfg);
  auto other_cfg = make_config();
  other_cfg.key_prefix = leader_cfg.key_prefix;
  rlock::client other_client(io.get_executor(), other_cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await leader_client.connect();
    co_await other_client.connect();
    rlock::election leader(leader_client, "partitioned");
    rlock::election next(other_client, "partitioned");
    const auto t1 = co_await leader.campaign("old");
    std::optional<std::chrono::steady_clock::time_point> stopped_believing, elected;
    std::int64_t t2 = 0;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await leader.lost();
          stopped_believing = std::chrono::steady_clock::now();
        },
        asio::detached);
    const auto attempts = other_client.stats().acquire_attempts;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          t2 = co_await next.campaign("new");
          elected = std::chrono::steady_clock::now();
        },
        asio::detached);
    EXPECT_TRUE(co_await asleep_after(other_client, attempts + 2));
    proxy.black_hole();  // the leader's side of the network is gone, its process lives on
    EXPECT_TRUE(co_await poll_until([&] { return elected.has_value(); }, 10s));
    EXPECT_TRUE(stopped_believing.has_value());
    if (stopped_believing && elected) {
      // The old leader stopped believing before the new one was told it leads.
      EXPECT_LT(*stopped_believing, *elected);
    }
    EXPECT_GT(t2, t1);
    proxy.heal();
    co_await next.resign();
    co_await leader_client.close();
    co_await other_client.close();
  });
}

TEST(election, with_leadership_returns_the_job_result_and_resigns) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    rlock::election e(redis, "report");
    auto job = [&](std::int64_t term) -> asio::awaitable<std::int64_t> { co_return term * 10; };
    const auto r = co_await rlock::with_leadership(e, "me", job);
    EXPECT_EQ(r, e.term() * 10);
    EXPECT_EQ(co_await e.leader(), std::nullopt);  // resigned
    const auto m = e.metrics();
    EXPECT_EQ(m.name, "report");
    EXPECT_FALSE(m.leading);
    EXPECT_EQ(m.campaigns, 1u);
    EXPECT_EQ(m.terms_won, 1u);
    EXPECT_EQ(m.resignations, 1u);
    EXPECT_EQ(m.failovers, 0u);
    EXPECT_EQ(m.term, e.term());
    const auto text = rlock::to_prometheus(m, "svc", {{"service", "billing"}});
    EXPECT_NE(text.find("svc_election_terms_won_total{service=\"billing\",election=\"report\"} 1"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("# TYPE svc_election_leading gauge"), std::string::npos) << text;
    EXPECT_EQ(rlock::test::thrown_by([&] {
                (void)rlock::to_prometheus(m, "svc", {{"election", "x"}});
              }),
              rlock::errc::invalid_argument);
    co_await redis.close();
  });
}

TEST(election, a_cancelled_campaign_leaves_nothing_and_may_campaign_again) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    rlock::election holder(redis, "slot");
    rlock::election waiter(redis, "slot");
    co_await holder.campaign("h");
    asio::cancellation_signal cancel;
    boost::system::error_code outcome;
    bool done = false;
    const auto attempts = redis.stats().acquire_attempts;
    waiter.async_campaign("w", asio::bind_cancellation_slot(
                                   cancel.slot(), [&](boost::system::error_code ec, std::int64_t) {
                                     outcome = ec;
                                     done = true;
                                   }));
    EXPECT_TRUE(co_await asleep_after(redis, attempts + 2));
    // A second campaign of the same candidate meanwhile is refused with words.
    EXPECT_EQ(co_await error_of(waiter.campaign("again")), rlock::errc::invalid_argument);
    EXPECT_NE(waiter.last_error().find("campaigning already"), std::string::npos);
    cancel.emit(asio::cancellation_type::terminal);
    EXPECT_TRUE(co_await poll_until([&] { return done; }, 5s));
    EXPECT_EQ(outcome, asio::error::operation_aborted);
    co_await holder.resign();
    EXPECT_GT(co_await waiter.campaign("w2"), holder.term());
    const auto who = co_await holder.leader();
    EXPECT_TRUE(who && who->value == "w2");
    co_await waiter.resign();
    co_await redis.close();
  });
}

TEST(election, a_cancelled_next_ends_and_the_observer_goes_on) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    rlock::election e(redis, "quiet");
    auto changes = e.observe();
    asio::cancellation_signal cancel;
    boost::system::error_code outcome;
    bool done = false;
    changes.async_next(asio::bind_cancellation_slot(
        cancel.slot(), [&](boost::system::error_code ec, election_change) {
          outcome = ec;
          done = true;
        }));
    cancel.emit(asio::cancellation_type::terminal);
    EXPECT_TRUE(co_await poll_until([&] { return done; }, 5s));
    EXPECT_EQ(outcome, asio::error::operation_aborted);
    co_await e.campaign("x");
    const auto c = co_await changes.next();
    EXPECT_EQ(c.seq, 1u);
    EXPECT_EQ(c.value, "x");
    co_await e.resign();
    co_await redis.close();
  });
}

TEST(election, an_observer_of_a_closing_client_is_told_why) {
  asio::io_context io;
  rlock::client redis(io.get_executor(), make_config());
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    rlock::election e(redis, "closing");
    auto changes = e.observe();
    boost::system::error_code outcome;
    bool done = false;
    changes.async_next([&](boost::system::error_code ec, election_change) {
      outcome = ec;
      done = true;
    });
    co_await redis.close();
    EXPECT_TRUE(co_await poll_until([&] { return done; }, 5s));
    EXPECT_TRUE(outcome);
    EXPECT_NE(outcome, asio::error::operation_aborted);
  });
}

TEST(election, the_blocking_forms_campaign_observe_and_resign) {
  auto cfg = make_config();
  rlock::blocking::client first(cfg);
  rlock::blocking::client second(cfg);
  rlock::blocking::election a(first, "blocking");
  rlock::blocking::election b(second, "blocking");
  auto changes = b.observe();
  const auto ta = a.campaign("a");
  EXPECT_GT(ta, 0);
  EXPECT_EQ(b.try_campaign_for("b", 0ms), std::nullopt);
  const auto who = b.leader();
  EXPECT_TRUE(who && who->value == "a");
  std::optional<std::int64_t> tb;
  std::thread t([&] { tb = b.campaign("b"); });
  a.proclaim("a2");
  a.resign();
  t.join();
  EXPECT_GT(tb.value_or(0), ta);
  // The observer saw a's lead (as elected or as the first snapshot), then every change after.
  std::vector<election_change> seen;
  for (int i = 0;
       i < 8 && (seen.empty() || seen.back().what != event::elected || seen.back().value != "b");
       ++i) {
    seen.push_back(changes.next());
  }
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().value, "b");
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_GT(seen[i].seq, seen[i - 1].seq);
  b.resign();
  changes.close();
}

}  // namespace election_test
