#pragma once

// The steps every chaos workload records the same way (the shared workload's kinds, the quorum
// lock's groups): what an operation's failure is written down as, a belief ended by lost(), and
// an unlock called again while its outcome is unknown.
#include "chaos/history.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <exception>
#include <rlock/error.hpp>
#include <string>

namespace rlock::chaos {

/// An operation's failure as the history records it: its error's message, or the exception's.
inline std::string describe(const std::exception& e) {
  if (const auto* se = dynamic_cast<const boost::system::system_error*>(&e))
    return se->code().message();
  return e.what();
}

/// An unlock's failure as the history records it: "not_owner" (the checker's word for a loss the
/// owner was not told of), or its error's message.
inline std::string outcome_of(const boost::system::system_error& e) {
  if (e.code() == rlock::errc::not_owner) return "not_owner";
  return e.code().message();
}

/// Ends acquisition `a` when `l`'s lost() fires. lost() throws not_owner when the lock was
/// released already, and operation_aborted when it is released while waiting: neither is a loss.
template <typename Lock>
boost::asio::awaitable<void> watch_lost(Lock l, recorder* rec, recorder::id a) {
  try {
    co_await l.lost();
    rec->end(a, end_kind::lost);
  } catch (const std::exception&) {
  }
}

/// Records the unlock of acquisition `a` begun at `invoked` with its outcome.
inline void record_unlock(recorder& rec, recorder::id a, recorder::id op, nanos invoked,
                          const std::string& outcome) {
  rec.finished(op, outcome);
  // The owner stopped believing when it called unlock; a not_owner answer marks a loss it was
  // not told of (the report counts them).
  rec.end_at(a, outcome == "not_owner" ? end_kind::not_owner : end_kind::released, invoked);
}

/// How a workload calls an unlock whose outcome is unknown again: while `again(outcome)` says
/// so, at most `attempts` calls, `pause` apart (a second call after a release that did happen
/// answers not_owner, which ends them).
template <typename Again>
struct unlock_retries {
  Again again;
  int attempts;
  std::chrono::milliseconds pause{0};
};
template <typename Again>
unlock_retries<Again> retry_while(Again again, int attempts,
                                  std::chrono::milliseconds pause = std::chrono::milliseconds(0)) {
  return {again, attempts, pause};
}

/// Unlocks `l` (any handle with an awaitable unlock()) for acquisition `a` of `owner` on `lock`,
/// each call bounded by `bound` for the checker: the belief ends at the first call; the calls go
/// on as `retries` says, as a careful caller's would (an unlock never sent leaves the hold).
template <typename Handle, typename Again>
boost::asio::awaitable<void> unlock_until_known(recorder& rec, const std::string& lock,
                                                const std::string& owner, recorder::id a, Handle& l,
                                                nanos bound, unlock_retries<Again> retries) {
  const nanos invoked = now_ns();
  boost::asio::steady_timer pause(co_await boost::asio::this_coro::executor);
  for (int attempt = 0; attempt < retries.attempts; ++attempt) {
    if (attempt > 0 && retries.pause.count() > 0) {
      pause.expires_after(retries.pause);
      co_await pause.async_wait(boost::asio::use_awaitable);
    }
    const auto uop = rec.started(op_kind::unlock, lock, owner, bound);
    std::string outcome = "released";
    try {
      co_await l.unlock();
    } catch (const boost::system::system_error& e) {
      outcome = outcome_of(e);
    }
    record_unlock(rec, a, uop, invoked, outcome);
    if (!retries.again(outcome)) break;
  }
}

}  // namespace rlock::chaos
