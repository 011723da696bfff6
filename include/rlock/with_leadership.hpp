#pragma once

#include "rlock/election.hpp"
#include "rlock/quorum_election.hpp"
#include "rlock/with_lock.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/deferred.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace rlock {

namespace detail {

// The coroutine holds its election through a shared_ptr parameter and names what it passes on
// (g++ 12 and temporaries in co_await expressions: with_lock.hpp).
template <typename Election, typename Fn>
auto lead_and_run(std::shared_ptr<Election> e, std::string value, Fn fn) -> boost::asio::awaitable<
    typename awaitable_value<std::invoke_result_t<Fn&, std::int64_t>>::type> {
  namespace asio = boost::asio;
  const std::int64_t term = co_await e->campaign(std::move(value));
  auto work = [fn = std::move(fn), term]() mutable { return fn(term); };
  auto watch = e->async_lost(asio::deferred);
  auto release = [e]() { return e->resign(); };
  std::string what =
      "the lead of election '" + std::string(e->name()) + "' (term " + std::to_string(term) + ")";
  auto held = run_held(std::move(work), std::move(watch), std::move(release), std::move(what));
  co_return co_await std::move(held);
}

}  // namespace detail

/// Runs `fn(term)` (a function returning `asio::awaitable<T>`) while `e` leads, the way
/// with_lock() runs work under a lock: campaigns with `value` (waiting, woken by push, until it
/// leads), runs the job with its term, and if the lead is lost meanwhile (lost(): before another
/// instance can lead) cancels the job (total cancellation) and throws
/// `boost::system::system_error` carrying errc::lock_lost. Otherwise resigns and returns the
/// job's result; the job's own exception is rethrown after the resignation.
///
///   co_await rlock::with_leadership(election, my_address, [&](std::int64_t term)
///       -> asio::awaitable<void> { co_await run_scheduler(term); });
///
/// Cancelling with_leadership cancels the campaign or the job, then resigns as above.
template <typename Fn>
auto with_leadership(election e, std::string value, Fn fn) {
  return detail::lead_and_run(std::make_shared<election>(std::move(e)), std::move(value),
                              std::move(fn));
}

/// with_leadership() for an election over a quorum of independent masters: the same, with its
/// lead lost when the majority's validity ends.
template <typename Fn>
auto with_leadership(quorum_election e, std::string value, Fn fn) {
  return detail::lead_and_run(std::make_shared<quorum_election>(std::move(e)), std::move(value),
                              std::move(fn));
}

}  // namespace rlock
