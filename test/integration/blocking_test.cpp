// rlock::blocking: the synchronous facade meets Lockable / TimedLockable, with the calling
// thread as the owner, and refuses calls that would deadlock its own io thread.
#include "rlock/rlock.hpp"
#include "support/lock_env.hpp"
#include "support/redis_server.hpp"
#include "support/run.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <dirent.h>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

namespace blocking_test {

namespace asio = boost::asio;
using rlock::test::make_config;
using rlock::test::thrown_by;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

/// Runs `f` on a new thread and returns its result (or rethrows its exception); the wait is
/// bounded so that a hung call fails the test instead of hanging it.
template <typename F>
auto on_other_thread(F f) {
  auto result = std::async(std::launch::async, std::move(f));
  if (result.wait_for(30s) != std::future_status::ready) {
    ADD_FAILURE() << "the other thread did not finish within 30 s";
    std::terminate();  // the thread would be joined by the future's destructor: never
  }
  return result.get();
}

/// The number of threads of this process.
int thread_count() {
  int n = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') ++n;
    }
    closedir(dir);
  }
  return n;
}

TEST(blocking, scoped_lock_excludes_another_thread) {
  rlock::blocking::client redis(make_config());
  auto lock = redis.get_lock("account");
  {
    std::scoped_lock guard{lock};
    EXPECT_TRUE(lock.is_held());
    EXPECT_TRUE(lock.is_locked());
    EXPECT_FALSE(on_other_thread([&] { return lock.try_lock(); }));
    EXPECT_FALSE(on_other_thread([&] { return lock.is_held(); }));
    EXPECT_TRUE(lock.is_held());  // the failed attempt changed nothing
  }
  EXPECT_FALSE(lock.is_locked());
  // Free again: the other thread gets it now.
  EXPECT_TRUE(on_other_thread([&] {
    const bool got = lock.try_lock();
    if (got) lock.unlock();
    return got;
  }));
}

// The facade is one template over the lock kind: the fenced lock gets Lockable and
// TimedLockable from it, with the calling thread as the owner and its tokens readable.
static_assert(std::is_same_v<rlock::blocking::reentrant_lock,
                             rlock::blocking::basic_lock<rlock::reentrant_lock>>);
static_assert(
    std::is_same_v<rlock::blocking::fenced_lock, rlock::blocking::basic_lock<rlock::fenced_lock>>);

TEST(blocking, a_fenced_lock_is_timed_lockable_and_every_thread_gets_a_larger_token) {
  rlock::blocking::client redis(make_config());
  auto lock = redis.get_fenced_lock("ledger");
  std::int64_t first = 0;
  {
    std::unique_lock guard{lock};
    first = lock.token();
    EXPECT_GT(first, 0);
    EXPECT_TRUE(lock.is_held());
    // Another thread is another owner: refused, within its wait.
    EXPECT_FALSE(on_other_thread([&] { return lock.try_lock_for(200ms); }));
  }
  EXPECT_FALSE(lock.is_locked());
  const std::int64_t second = on_other_thread([&] {
    std::unique_lock guard{lock, std::defer_lock};
    if (!guard.try_lock_for(2s)) return std::int64_t{0};
    return lock.token();
  });
  EXPECT_GT(second, first);
  // The generic form names the kind.
  auto same = redis.get<rlock::fenced_lock>("ledger");
  EXPECT_TRUE(same.try_lock());
  EXPECT_GT(same.token(), second);
  same.unlock();
  EXPECT_EQ(thrown_by([&] { same.unlock(); }), rlock::errc::not_owner);
}

TEST(blocking, errors_carry_the_code_and_redis_words) {
  // The facade calls the public async forms; what it throws must be what the awaitable form
  // throws: rlock's code, and Redis's own text in what().
  auto cfg = make_config();
  rlock::blocking::client redis(cfg);
  auto lock = redis.get_lock("a-string");
  rlock::test::raw_client raw(rlock::test::shared_server().port());
  raw.command({"SET", cfg.key_prefix + "a-string", "not a hash"});
  for (int form = 0; form < 3; ++form) {
    SCOPED_TRACE(form);
    try {
      if (form == 0) lock.lock();
      if (form == 1) (void)lock.try_lock_for(10ms);
      if (form == 2) lock.unlock();
      ADD_FAILURE() << "no exception";
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), rlock::errc::server_error);
      EXPECT_NE(std::string(e.what()).find("WRONGTYPE"), std::string::npos) << e.what();
    }
  }
  raw.command({"DEL", cfg.key_prefix + "a-string"});
  // Not held: not_owner, with words that say so.
  try {
    lock.unlock();
    ADD_FAILURE() << "no exception";
  } catch (const boost::system::system_error& e) {
    EXPECT_EQ(e.code(), rlock::errc::not_owner);
    EXPECT_NE(std::string(e.what()), "") << e.what();
  }
}

// --- one error channel: a failure reaches every form with the same code --------------------

/// What a failure looked like in each form: the token form's code (and the handle's words), the
/// awaitable form's exception, the blocking facade's exception.
struct seen {
  std::error_code code;
  std::string words;
};

/// Runs `async(token)` (an async_* form given `as_tuple(use_awaitable)`), then `awaitable()`, on
/// `io`; returns what each reported.
template <typename Async, typename Awaitable, typename Words>
std::pair<seen, seen> token_and_awaitable(asio::io_context& io, Async async, Awaitable awaitable,
                                          Words words) {
  std::pair<seen, seen> out;
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    auto token_form = async(asio::as_tuple(asio::use_awaitable));
    auto result = co_await std::move(token_form);
    out.first = {std::get<0>(result), words()};
    try {
      co_await awaitable();
      ADD_FAILURE() << "the awaitable form did not throw";
    } catch (const boost::system::system_error& e) {
      out.second = {e.code(), e.what()};
    }
  });
  return out;
}

seen blocking_form(const std::function<void()>& call) {
  try {
    call();
    ADD_FAILURE() << "the blocking form did not throw";
  } catch (const boost::system::system_error& e) {
    return {e.code(), e.what()};
  }
  return {};
}

/// The three forms reported `code`, and words that say `why`.
void expect_same(const std::pair<seen, seen>& async_forms, const seen& blocking, rlock::errc code,
                 std::string_view why) {
  const auto& [token, awaitable] = async_forms;
  EXPECT_EQ(token.code, code) << token.code.message();
  EXPECT_EQ(awaitable.code, code) << awaitable.words;
  EXPECT_EQ(blocking.code, code) << blocking.words;
  for (const auto* form : {&token, &awaitable, &blocking}) {
    EXPECT_NE(form->words.find(why), std::string::npos) << form->words;
  }
}

TEST(error_channel, a_lock_failure_reaches_every_form_with_the_same_code_and_words) {
  auto cfg = make_config();
  asio::io_context io;
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> { co_await redis.connect(); });
  rlock::blocking::client sync(cfg);
  rlock::test::raw_client raw(rlock::test::shared_server().port());

  // Redis's error reply: server_error with Redis's words.
  auto lock = redis.get_lock("wrong-type");
  auto sync_lock = sync.get_lock("wrong-type");
  raw.command({"SET", cfg.key_prefix + "wrong-type", "not a hash"});
  expect_same(token_and_awaitable(
                  io, [&](auto token) { return lock.async_lock(std::move(token)); },
                  [&] { return lock.lock(); }, [&] { return lock.last_error(); }),
              blocking_form([&] { sync_lock.lock(); }), rlock::errc::server_error, "WRONGTYPE");
  raw.command({"DEL", cfg.key_prefix + "wrong-type"});

  // Misuse: an unlock of what this owner does not hold.
  expect_same(token_and_awaitable(
                  io, [&](auto token) { return lock.async_unlock(std::move(token)); },
                  [&] { return lock.unlock(); }, [&] { return lock.last_error(); }),
              blocking_form([&] { sync_lock.unlock(); }), rlock::errc::not_owner, "not held");

  // Bad input from the caller: a lease of 0.
  expect_same(token_and_awaitable(
                  io, [&](auto token) { return lock.async_lock(0ms, std::move(token)); },
                  [&] { return lock.lock(0ms); }, [&] { return lock.last_error(); }),
              blocking_form([&] { sync_lock.lock(0ms); }), rlock::errc::invalid_argument,
              "lease must be positive");

  // The semaphore's: an acquisition of no permit.
  auto sem = redis.get_semaphore("sem");
  auto sync_sem = sync.get_semaphore("sem");
  expect_same(token_and_awaitable(
                  io, [&](auto token) { return sem.async_acquire(0, std::move(token)); },
                  [&]() -> asio::awaitable<void> { (void)co_await sem.acquire(0); },
                  [&] { return sem.last_error(); }),
              blocking_form([&] { sync_sem.acquire(0); }), rlock::errc::invalid_argument,
              "0 permits");
  rlock::test::run(io, [&]() -> asio::awaitable<void> { co_await redis.close(); });
}

TEST(error_channel, a_multi_lock_failure_reaches_its_token_and_awaitable_forms) {
  auto cfg = make_config();
  asio::io_context io;
  rlock::client redis(io.get_executor(), cfg);
  rlock::test::run(io, [&]() -> asio::awaitable<void> { co_await redis.connect(); });
  rlock::multi_lock both({redis.get_lock("m1"), redis.get_lock("m2")});
  const auto [token, awaitable] = token_and_awaitable(
      io, [&](auto completion) { return both.async_try_lock(-1ms, std::move(completion)); },
      [&]() -> asio::awaitable<void> { (void)co_await both.try_lock(-1ms); },
      [] { return std::string("the wait is negative"); });
  EXPECT_EQ(token.code, rlock::errc::invalid_argument);
  EXPECT_EQ(awaitable.code, rlock::errc::invalid_argument);
  EXPECT_NE(awaitable.words.find("the wait is negative"), std::string::npos) << awaitable.words;
  // Misuse: the group's unlock when nothing is held.
  bool unlocked = false;
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    auto [ec] = co_await both.async_unlock(asio::as_tuple(asio::use_awaitable));
    unlocked = true;
    EXPECT_EQ(ec, rlock::errc::not_owner);
    co_await redis.close();
  });
  EXPECT_TRUE(unlocked);
}

TEST(error_channel, a_cancellation_is_operation_aborted_in_every_form) {
  auto cfg = make_config();
  asio::io_context io;
  rlock::client redis(io.get_executor(), cfg);
  auto holder = redis.get_lock("busy");
  auto waiter = redis.get_lock("busy");
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await redis.connect();
    co_await holder.lock();
  });
  // The token form: the caller's slot.
  std::optional<boost::system::error_code> by_token;
  asio::cancellation_signal first;
  waiter.async_lock(asio::bind_cancellation_slot(
      first.slot(), [&](boost::system::error_code ec) { by_token = ec; }));
  // The awaitable form: the coroutine's slot, through co_spawn.
  std::optional<boost::system::error_code> by_awaitable;
  asio::cancellation_signal second;
  auto other = redis.get_lock("busy");
  asio::co_spawn(io, other.lock(),
                 asio::bind_cancellation_slot(second.slot(), [&](std::exception_ptr e) {
                   try {
                     if (e) std::rethrow_exception(e);
                     by_awaitable = boost::system::error_code();
                   } catch (const boost::system::system_error& ex) {
                     by_awaitable = ex.code();
                   }
                 }));
  // Both asleep on the lock's channel (two attempts each, the holder's one), then cancelled.
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    EXPECT_TRUE(co_await rlock::test::until_asleep(redis, holder, 5));
  });
  first.emit(asio::cancellation_type::terminal);
  second.emit(asio::cancellation_type::terminal);
  for (int turn = 0; turn < 500 && !(by_token && by_awaitable); ++turn) io.run_one_for(10ms);
  ASSERT_TRUE(by_token && by_awaitable);
  EXPECT_EQ(*by_token, asio::error::operation_aborted);
  EXPECT_EQ(*by_awaitable, asio::error::operation_aborted);
  rlock::test::run(io, [&]() -> asio::awaitable<void> {
    co_await holder.unlock();
    co_await redis.close();
  });
}

TEST(blocking, reentrant_in_one_thread) {
  rlock::blocking::client redis(make_config());
  auto lock = redis.get_lock("account");
  lock.lock();
  lock.lock();
  EXPECT_EQ(lock.hold_count(), 2);
  EXPECT_TRUE(lock.try_lock());
  EXPECT_EQ(lock.hold_count(), 3);
  EXPECT_EQ(on_other_thread([&] { return lock.hold_count(); }), 0);
  lock.unlock();
  lock.unlock();
  EXPECT_EQ(lock.hold_count(), 1);
  EXPECT_TRUE(lock.is_locked());
  lock.unlock();
  EXPECT_EQ(lock.hold_count(), 0);
  EXPECT_FALSE(lock.is_locked());
}

TEST(blocking, reentrant_with_an_explicit_lease_keeps_the_outer_hold) {
  // A lease lock is not kept alive by the watchdog, so each call may find a fresh lock state
  // that knows of no hold: the inner unlock's "still held" must keep the outer hold, not give
  // it back as a hold nobody has.
  rlock::blocking::client redis(make_config());
  auto lock = redis.get_lock("account");
  lock.lock(std::chrono::seconds(30));
  lock.lock(std::chrono::seconds(30));
  lock.unlock();
  EXPECT_EQ(lock.hold_count(), 1);
  EXPECT_TRUE(lock.is_locked());
  EXPECT_EQ(redis.async_client().stats().given_back, 0u);
  lock.unlock();
  EXPECT_FALSE(lock.is_locked());
}

TEST(blocking, try_lock_for_times_out_while_another_thread_holds) {
  rlock::blocking::client redis(make_config());
  auto lock = redis.get_lock("account");
  lock.lock();
  const auto [got, waited] = on_other_thread([&] {
    const auto start = clock_type::now();
    const bool ok = lock.try_lock_for(300ms);
    return std::pair{ok, clock_type::now() - start};
  });
  EXPECT_FALSE(got);
  EXPECT_GE(waited, 250ms);
  EXPECT_LT(waited, 5s);
  lock.unlock();
  // Free: the timed form succeeds at once.
  EXPECT_TRUE(on_other_thread([&] {
    const bool ok = lock.try_lock_for(300ms);
    if (ok) lock.unlock();
    return ok;
  }));
}

TEST(blocking, try_lock_until_times_out_while_another_thread_holds) {
  rlock::blocking::client redis(make_config());
  auto lock = redis.get_lock("account");
  lock.lock();
  const auto [got, waited] = on_other_thread([&] {
    const auto start = clock_type::now();
    const bool ok = lock.try_lock_until(start + 300ms);
    return std::pair{ok, clock_type::now() - start};
  });
  EXPECT_FALSE(got);
  EXPECT_GE(waited, 250ms);
  EXPECT_LT(waited, 5s);
  // A deadline already past is one attempt, as for std::timed_mutex.
  EXPECT_FALSE(on_other_thread([&] { return lock.try_lock_until(clock_type::now() - 1s); }));
  // Another clock works too.
  EXPECT_FALSE(on_other_thread(
      [&] { return lock.try_lock_until(std::chrono::system_clock::now() + 50ms); }));
  lock.unlock();
  EXPECT_TRUE(on_other_thread([&] {
    const bool ok = lock.try_lock_until(clock_type::now() + 300ms);
    if (ok) lock.unlock();
    return ok;
  }));
}

TEST(blocking, unlock_from_another_thread_is_not_owner) {
  rlock::blocking::client redis(make_config());
  auto lock = redis.get_lock("account");
  lock.lock();
  EXPECT_EQ(on_other_thread([&] { return thrown_by([&] { lock.unlock(); }); }),
            rlock::errc::not_owner);
  EXPECT_EQ(lock.hold_count(), 1);  // the refused unlock changed nothing
  lock.unlock();
  EXPECT_EQ(thrown_by([&] { lock.unlock(); }), rlock::errc::not_owner);  // not held any more
}

TEST(blocking, condition_variable_any_round_trip) {
  rlock::blocking::client redis(make_config());
  auto lock = redis.get_lock("account");
  std::condition_variable_any cv;
  // Only read and written under `lock` (atomic only so a broken lock cannot be UB).
  std::atomic<bool> ping{false};
  std::atomic<bool> pong{false};

  auto other = std::async(std::launch::async, [&] {
    std::unique_lock guard(lock);
    const bool got_ping = cv.wait_for(guard, 20s, [&] { return ping.load(); });
    EXPECT_TRUE(lock.is_held());  // re-acquired by this thread on wake-up
    pong = true;
    cv.notify_all();
    return got_ping;
  });

  bool got_pong = false;
  {
    std::unique_lock guard(lock);
    ping = true;
    cv.notify_all();
    got_pong = cv.wait_for(guard, 20s, [&] { return pong.load(); });
    EXPECT_TRUE(lock.is_held());
  }
  ASSERT_EQ(other.wait_for(30s), std::future_status::ready);
  EXPECT_TRUE(other.get());
  EXPECT_TRUE(got_pong);
  EXPECT_FALSE(lock.is_locked());
}

TEST(blocking, a_waiting_caller_runs_the_client_itself) {
  // The point of the driver design: while a thread is blocked in a call, the client's handlers
  // (its reply, its wake-up) run on that thread, not on a separate io thread.
  rlock::blocking::client redis(make_config());
  auto lock = redis.get_lock("account");
  lock.lock();
  const auto attempts_before = redis.async_client().stats().acquire_attempts;
  std::promise<std::thread::id> waiter_id;
  auto waiter = std::async(std::launch::async, [&] {
    waiter_id.set_value(std::this_thread::get_id());
    return lock.try_lock(20s, 30s);
  });
  const auto waiter_thread = waiter_id.get_future().get();
  // Asleep in its wait once it has made its first attempt and the retry after subscribing.
  for (int i = 0; i < 2000 && redis.async_client().stats().acquire_attempts < attempts_before + 2;
       ++i) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_GE(redis.async_client().stats().acquire_attempts, attempts_before + 2);
  std::promise<std::thread::id> ran_on;
  auto ran_on_future = ran_on.get_future();
  asio::post(redis.async_client().get_executor(),
             [&] { ran_on.set_value(std::this_thread::get_id()); });
  ASSERT_EQ(ran_on_future.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(ran_on_future.get(), waiter_thread);
  lock.unlock();
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
  // The waiter's thread is gone with its hold (a 30 s lease): clear it.
  EXPECT_TRUE(lock.force_unlock());
}

TEST(blocking, watchdog_renews_while_no_call_is_in_progress) {
  // Between calls the background thread runs the client: a watchdog lease outlives several
  // lease periods with the holder doing nothing but sleeping (the scenario, not a sync point).
  auto cfg = make_config();
  cfg.watchdog_timeout = 600ms;
  rlock::blocking::client redis(cfg);
  auto lock = redis.get_lock("account");
  lock.lock();
  std::this_thread::sleep_for(2s);
  EXPECT_TRUE(lock.is_held());
  EXPECT_GT(lock.remaining_ttl(), 0ms);
  EXPECT_GE(redis.async_client().stats().renewal_calls, 3u);
  lock.unlock();
}

TEST(blocking, call_from_own_io_thread_is_would_deadlock) {
  rlock::blocking::client redis(make_config());
  auto lock = redis.get_lock("account");
  std::promise<std::error_code> outcome;
  auto result = outcome.get_future();
  asio::post(redis.async_client().get_executor(), [&] {
    try {
      (void)lock.try_lock();
      outcome.set_value({});
    } catch (const boost::system::system_error& e) {
      outcome.set_value(e.code());
    } catch (...) {
      outcome.set_exception(std::current_exception());
    }
  });
  ASSERT_EQ(result.wait_for(10s), std::future_status::ready) << "the blocking call hung";
  EXPECT_EQ(result.get(), rlock::errc::would_deadlock);
  // The client still works from an ordinary thread.
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
}

TEST(blocking, destruction_is_prompt_and_joins_the_io_thread) {
  const int before = thread_count();
  ASSERT_GT(before, 0);
  auto redis = std::make_unique<rlock::blocking::client>(make_config());
  EXPECT_GT(thread_count(), before);  // its io thread (and Asio's resolver thread)
  {
    // Lock handles share the client's machinery: let them go first, holding a watchdog lease
    // (a renewal timer is pending) and a plain one.
    auto lock = redis->get_lock("account");
    lock.lock();
    auto other = redis->get_lock("other");
    EXPECT_TRUE(other.try_lock(10s, 30s));
  }
  const auto start = clock_type::now();
  redis.reset();
  EXPECT_LT(clock_type::now() - start, 5s);
  // pthread_join returns when the thread has exited, but the kernel drops its /proc/self/task
  // entry a moment later; there is no event for that, so poll, bounded.
  for (int i = 0; i < 2000 && thread_count() != before; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(thread_count(), before);
}

}  // namespace blocking_test

namespace blocking_test {

TEST(blocking, a_throwing_handler_reaches_a_caller_only_after_its_own_operation) {
  // A handler of the caller's (posted on async_client()'s executor) throws while some thread
  // runs the io_context. The exception must not unwind a caller whose operation still points
  // into its stack, and must not leave an acquisition nobody knows about.
  const auto cfg = make_config();
  rlock::blocking::client redis(cfg);
  auto lock = redis.get_lock("account");
  int thrown = 0;
  auto taking_handler_errors = [&](auto f) {
    try {
      f();
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "a handler's bug");
      ++thrown;
    }
  };
  for (int i = 0; i < 20; ++i) {
    asio::post(redis.async_client().get_executor(),
               [] { throw std::runtime_error("a handler's bug"); });
    // unlock() never throws it (it runs in guards' destructors): the next other call does.
    taking_handler_errors([&] {
      if (lock.try_lock()) lock.unlock();
    });
    // An acquisition that met the exception was given back.
    taking_handler_errors([&] { EXPECT_FALSE(lock.is_held()); });
  }
  taking_handler_errors([&] { (void)lock.is_locked(); });
  EXPECT_EQ(thrown, 20);  // each exception reached exactly one caller
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
  EXPECT_FALSE(lock.is_locked());
}

}  // namespace blocking_test
