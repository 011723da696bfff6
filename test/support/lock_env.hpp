#pragma once

// Helpers every lock test shares: its config, error capture, a sleep, the channel of a lock.

#include "rlock/rlock.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <sstream>
#include <string>
#include <system_error>

namespace rlock::test {

/// A config for this binary's private server, with a key prefix of the running test's own.
inline rlock::config make_config() {
  rlock::config cfg;
  cfg.port = shared_server().port();
  cfg.key_prefix = unique_prefix();
  return cfg;
}

/// The error an awaitable throws, or no error.
template <typename Awaitable>
boost::asio::awaitable<std::error_code> error_of(Awaitable op) {
  try {
    co_await std::move(op);
  } catch (const boost::system::system_error& e) {
    co_return e.code();
  }
  co_return std::error_code{};
}

/// The error `f()` throws, or no error.
template <typename F>
std::error_code thrown_by(F&& f) {
  try {
    f();
  } catch (const boost::system::system_error& e) {
    return e.code();
  }
  return {};
}

inline boost::asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration d) {
  boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, d);
  co_await t.async_wait(boost::asio::use_awaitable);
}

/// Completes once `done()` holds, looking every 2 ms, or after about `limit`; whether it held.
/// For states nothing announces (a waiter parked on its channel, a counter that moved, a
/// coroutine spawned beside the test that finished); wait_until when an event can ring a bell.
template <typename Pred>
boost::asio::awaitable<bool> poll_until(
    Pred done, std::chrono::steady_clock::duration limit = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) co_return false;
    co_await sleep_for(std::chrono::milliseconds(2));
  }
  co_return true;
}

/// Completes once `redis` has made `attempts` acquire attempts in all (at most 5 s; whether it
/// did), then asks `probe` a question on the same connection: its answer comes after theirs, so
/// a waiter whose attempts were refused is asleep on its channel by then. A waiter makes two
/// before it sleeps: its first attempt, and the retry once its channel is confirmed.
inline boost::asio::awaitable<bool> until_asleep(rlock::client& redis, rlock::lock_handle& probe,
                                                 std::uint64_t attempts) {
  const bool made = co_await poll_until([&] { return redis.stats().acquire_attempts >= attempts; });
  (void)co_await probe.is_locked();
  co_return made;
}

/// Completes once `done()` holds, or after about `limit`. Whoever makes it hold cancels `bell`
/// (a timer used as a condition variable), so the wait is woken by the event, not a poll.
template <typename Pred>
boost::asio::awaitable<void> wait_until(boost::asio::steady_timer& bell, Pred done,
                                        std::chrono::steady_clock::duration limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (int round = 0; round < 10'000 && !done() && std::chrono::steady_clock::now() < deadline;
       ++round) {
    bell.expires_at(deadline);
    co_await bell.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  }
}

/// `holder`, which holds its lock, is released by `release()` (an awaitable) while `waiter`
/// (another owner on the same client) is asleep on it: spawns the waiter's lock(), waits until
/// it sleeps, releases, and waits (at most `limit`) until the waiter holds the lock. Whether it
/// does; `waiter.last_wake()` tells how.
template <rlock::owned_lock Lock, typename Release>
boost::asio::awaitable<bool> pass_to_sleeping_waiter(
    rlock::client& redis, Lock holder, Lock waiter, Release release,
    std::chrono::steady_clock::duration limit = std::chrono::seconds(5)) {
  namespace asio = boost::asio;
  bool got = false;
  asio::steady_timer bell(co_await asio::this_coro::executor,
                          std::chrono::steady_clock::time_point::max());
  const auto attempts = redis.stats().acquire_attempts;
  asio::co_spawn(
      bell.get_executor(),
      [&]() -> asio::awaitable<void> {
        co_await waiter.lock();
        got = true;
        bell.cancel();
      },
      asio::detached);
  if (!co_await until_asleep(redis, holder, attempts + 2)) co_return false;
  co_await release();
  co_await wait_until(
      bell, [&] { return got; }, limit);
  co_return got;
}

/// The same, released by the holder's own unlock(). Not a coroutine itself: g++ 12 mishandles
/// temporaries (here the lambda) inside co_await expressions.
template <rlock::owned_lock Lock>
boost::asio::awaitable<bool> pass_to_sleeping_waiter(rlock::client& redis, Lock holder,
                                                     Lock waiter) {
  return pass_to_sleeping_waiter(redis, holder, waiter,
                                 [holder]() mutable { return holder.unlock(); });
}

/// Kills the connections of the client named `name` (config::client_name); returns how many.
inline int kill_client(raw_client& raw, const std::string& name) {
  const auto list = raw.command({"CLIENT", "LIST"}).str;
  std::istringstream lines(list);
  std::string line;
  int killed = 0;
  while (std::getline(lines, line)) {
    if (line.find(" name=" + name + " ") == std::string::npos) continue;
    const auto id_at = line.find("id=");
    const auto id = line.substr(id_at + 3, line.find(' ', id_at) - id_at - 3);
    killed += static_cast<int>(raw.command_int({"CLIENT", "KILL", "ID", id}));
  }
  return killed;
}

/// Redisson's unlock channel of a lock whose key has no '{'.
inline std::string channel_of(const rlock::lock_handle& l) {
  return "redisson_lock__channel:{" + std::string(l.key()) + "}";
}

/// Subscribers of `channel` on the server, all clients together.
inline std::int64_t numsub(raw_client& raw, const std::string& channel) {
  auto reply = raw.command({"PUBSUB", "NUMSUB", channel});
  if (reply.elements.size() != 2u) {
    ADD_FAILURE() << "PUBSUB NUMSUB: " << describe(reply);
    return -1;
  }
  return reply.elements[1].integer;
}

}  // namespace rlock::test
