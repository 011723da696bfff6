#include "chaos/workload.hpp"

#include "chaos/recorded_steps.hpp"
#include "support/raw_client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <future>
#include <list>
#include <optional>
#include <random>
#include <rlock/blocking.hpp>
#include <rlock/client.hpp>
#include <rlock/detail/kind_list.hpp>
#include <rlock/election.hpp>
#include <rlock/error.hpp>
#include <rlock/log.hpp>
#include <rlock/multi_lock.hpp>
#include <rlock/rlock.hpp>
#include <rlock/semaphore.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace rlock::chaos {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

nanos to_ns(std::chrono::milliseconds d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

struct shared_state {
  const workload_options* opts = nullptr;
  recorder* rec = nullptr;
  std::chrono::steady_clock::time_point stop_at;
  /// The bounds the checker holds the workload to, with slack over the stated ones
  /// (docs/guide/faults.md): try_lock(wait) within wait + command_timeout, an unlock within
  /// command_timeout.
  nanos try_bound = 0;
  nanos unlock_bound = 0;
  std::atomic<bool> drain_expired{false};
};

/// An unlock whose outcome is unknown (timed out, connection lost) is called again; a second call
/// after a release that did happen answers not_owner, which ends the retries. Bounded: a fault
/// lasts seconds, each call up to command_timeout.
constexpr int max_unlock_attempts = 30;
bool worth_retrying(const std::string& outcome) {
  return outcome == make_error_code(rlock::errc::timeout).message() ||
         outcome == make_error_code(rlock::errc::connection_lost).message();
}

/// Unlocks `l` (any handle: a lock, a permit) for acquisition `a` of `owner`: an unlock that
/// timed out or lost its connection is called again at once (recorded_steps.hpp).
template <typename Handle>
asio::awaitable<void> unlock_until_known(shared_state& st, const std::string& name,
                                         const std::string& owner, recorder::id a, Handle& l) {
  return rlock::chaos::unlock_until_known(*st.rec, name, owner, a, l, st.unlock_bound,
                                          retry_while(worth_retrying, max_unlock_attempts));
}

/// One round of a coroutine worker on lock `name`: acquire (lock() or try_lock(wait)), hold a
/// random while, unlock. `shared`: the acquisition is a read hold, which the checker lets overlap
/// other read holds.
template <typename Lock>
asio::awaitable<void> coroutine_round(rlock::client& c, shared_state& st, int index,
                                      const std::string& name, std::mt19937_64& rng, bool shared) {
  const auto& o = *st.opts;
  auto& rec = *st.rec;
  const std::string owner = o.process + "/c" + std::to_string(index);
  auto ex = co_await asio::this_coro::executor;
  asio::steady_timer hold(ex);
  auto l =
      rlock::blocking::detail::get_lock<Lock>(c, name, 1000 + static_cast<std::uint64_t>(index));
  rec.named(l.owner_field(), owner);  // for the fair lock's FIFO rule
  const bool try_it = rng() % 3 != 0;
  const nanos requested = now_ns();
  const auto op = rec.started(try_it ? op_kind::try_lock : op_kind::lock, name, owner,
                              try_it ? st.try_bound : -1);
  bool acquired = false;
  try {
    if (try_it) {
      acquired = co_await l.try_lock(o.try_wait);
    } else {
      co_await l.lock();
      acquired = true;
    }
    rec.finished(op, acquired ? "acquired" : "not acquired");
  } catch (const std::exception& e) {
    // Cancelled by the drain deadline: leave it recorded as never completed.
    if (st.drain_expired) throw;
    rec.finished(op, describe(e));
  }
  if (!acquired) {
    // An error (server down): do not spin; a fault lasts far longer than this.
    hold.expires_after(std::chrono::milliseconds(5 + rng() % 20));
    co_await hold.async_wait(asio::use_awaitable);
    co_return;
  }
  const auto a = rec.acquired(name, owner, requested, shared);
  asio::co_spawn(ex, watch_lost(l, &rec, a), asio::detached);
  hold.expires_after(std::chrono::milliseconds(rng() % (o.max_hold.count() + 1)));
  co_await hold.async_wait(asio::use_awaitable);
  co_await unlock_until_known(st, name, owner, a, l);
}

/// A coroutine worker: rounds of `Lock`, or (a read-write lock) two in three of `Shared`.
template <typename Lock, typename Shared>
asio::awaitable<void> coroutine_worker(rlock::client& c, shared_state& st, int index) {
  const auto& o = *st.opts;
  std::mt19937_64 rng(o.seed * 1000 + static_cast<std::uint64_t>(index));
  try {
    for (int it = 0; it < o.max_iterations && std::chrono::steady_clock::now() < st.stop_at; ++it) {
      const auto& name = o.names[rng() % o.names.size()];
      if constexpr (!std::is_void_v<Shared>) {
        if (rng() % 3 != 0) {
          co_await coroutine_round<Shared>(c, st, index, name, rng, true);
          continue;
        }
      }
      co_await coroutine_round<Lock>(c, st, index, name, rng, false);
    }
  } catch (const std::exception&) {
    if (!st.drain_expired) throw;
  }
}

/// One round of a multi-lock worker: two distinct names, given in a random order (the multi-lock
/// takes them in its global order, so opposite orders never deadlock: a hang would leave a
/// lock() never completed), held and released together; one acquisition recorded per member.
asio::awaitable<void> coroutine_multi_round(rlock::client& c, shared_state& st, int index,
                                            std::mt19937_64& rng) {
  const auto& o = *st.opts;
  auto& rec = *st.rec;
  const std::string owner = o.process + "/c" + std::to_string(index);
  auto ex = co_await asio::this_coro::executor;
  asio::steady_timer hold(ex);
  const std::size_t first = rng() % o.names.size();
  const std::size_t second = (first + 1 + rng() % (o.names.size() - 1)) % o.names.size();
  const std::array<std::string, 2> names{o.names[first], o.names[second]};
  const auto id = 1000 + static_cast<std::uint64_t>(index);
  std::vector<rlock::reentrant_lock> locks{c.get_lock(names[0], id), c.get_lock(names[1], id)};
  rlock::multi_lock m({locks[0], locks[1]});
  const std::string both = names[0] + "+" + names[1];
  const bool try_it = rng() % 3 != 0;
  const nanos requested = now_ns();
  const auto op = rec.started(try_it ? op_kind::try_lock : op_kind::lock, both, owner,
                              try_it ? st.try_bound : -1);
  bool acquired = false;
  try {
    if (try_it) {
      acquired = co_await m.try_lock(o.try_wait);
    } else {
      co_await m.lock();
      acquired = true;
    }
    rec.finished(op, acquired ? "acquired" : "not acquired");
  } catch (const std::exception& e) {
    if (st.drain_expired) throw;
    rec.finished(op, describe(e));
  }
  if (!acquired) {
    hold.expires_after(std::chrono::milliseconds(5 + rng() % 20));
    co_await hold.async_wait(asio::use_awaitable);
    co_return;
  }
  std::array<recorder::id, 2> a{rec.acquired(names[0], owner, requested),
                                rec.acquired(names[1], owner, requested)};
  for (std::size_t i = 0; i < 2; ++i) {
    asio::co_spawn(ex, watch_lost(locks[i], &rec, a[i]), asio::detached);
  }
  hold.expires_after(std::chrono::milliseconds(rng() % (o.max_hold.count() + 1)));
  co_await hold.async_wait(asio::use_awaitable);
  // Each member's belief ends at the first unlock call; a member whose unlock failed for an
  // unknown reason is released again on its own.
  const nanos invoked = now_ns();
  const auto uop = rec.started(op_kind::unlock, both, owner, 2 * st.unlock_bound);
  std::string outcome = "released";
  try {
    co_await m.unlock();
  } catch (const boost::system::system_error& e) {
    outcome = outcome_of(e);
  }
  rec.finished(uop, outcome);
  for (std::size_t i = 0; i < 2; ++i) {
    std::string member_outcome = outcome == "released" ? outcome : "";
    for (int attempt = 0; member_outcome.empty() && attempt < max_unlock_attempts; ++attempt) {
      member_outcome = "released";
      try {
        co_await locks[i].unlock();
      } catch (const boost::system::system_error& e) {
        member_outcome = outcome_of(e);
        if (worth_retrying(member_outcome)) member_outcome.clear();
      }
    }
    rec.end_at(a[i], member_outcome == "not_owner" ? end_kind::not_owner : end_kind::released,
               invoked);
  }
}

asio::awaitable<void> coroutine_multi_worker(rlock::client& c, shared_state& st, int index) {
  const auto& o = *st.opts;
  std::mt19937_64 rng(o.seed * 1000 + static_cast<std::uint64_t>(index));
  try {
    for (int it = 0; it < o.max_iterations && std::chrono::steady_clock::now() < st.stop_at; ++it) {
      co_await coroutine_multi_round(c, st, index, rng);
    }
  } catch (const std::exception&) {
    if (!st.drain_expired) throw;
  }
}

/// The permits every semaphore of the semaphore workload has.
constexpr std::int64_t semaphore_capacity = 2;

/// One round of a semaphore worker: 1 or 2 of the semaphore's permits (try_acquire(n, wait) or
/// acquire(n)), held a random while and given back; recorded as a hold of that many permits.
asio::awaitable<void> coroutine_semaphore_round(rlock::client& c, shared_state& st, int index,
                                                const std::string& name, std::mt19937_64& rng) {
  const auto& o = *st.opts;
  auto& rec = *st.rec;
  const std::string owner = o.process + "/c" + std::to_string(index);
  auto ex = co_await asio::this_coro::executor;
  asio::steady_timer hold(ex);
  auto sem = c.get_semaphore(name);
  const auto n = static_cast<std::uint32_t>(1 + rng() % semaphore_capacity);
  const bool try_it = rng() % 3 != 0;
  const nanos requested = now_ns();
  const auto op = rec.started(try_it ? op_kind::try_lock : op_kind::lock, name, owner,
                              try_it ? st.try_bound : -1);
  std::optional<rlock::permit> p;
  try {
    if (try_it) {
      p = co_await sem.try_acquire(n, o.try_wait);
    } else {
      p = co_await sem.acquire(n);
    }
    rec.finished(op, p ? "acquired" : "not acquired");
  } catch (const std::exception& e) {
    if (st.drain_expired) throw;
    rec.finished(op, describe(e));
  }
  if (!p) {
    hold.expires_after(std::chrono::milliseconds(5 + rng() % 20));
    co_await hold.async_wait(asio::use_awaitable);
    co_return;
  }
  const auto a = rec.acquired(name, owner, requested, false, n);
  asio::co_spawn(ex, watch_lost(*p, &rec, a), asio::detached);
  hold.expires_after(std::chrono::milliseconds(rng() % (o.max_hold.count() + 1)));
  co_await hold.async_wait(asio::use_awaitable);
  co_await unlock_until_known(st, name, owner, a, *p);
}

asio::awaitable<void> coroutine_semaphore_worker(rlock::client& c, shared_state& st, int index) {
  const auto& o = *st.opts;
  std::mt19937_64 rng(o.seed * 1000 + static_cast<std::uint64_t>(index));
  try {
    for (int it = 0; it < o.max_iterations && std::chrono::steady_clock::now() < st.stop_at; ++it) {
      co_await coroutine_semaphore_round(c, st, index, o.names[rng() % o.names.size()], rng);
    }
  } catch (const std::exception&) {
    if (!st.drain_expired) throw;
  }
}

/// An election candidate as the workload's steps see a lock: lost() and, to give the lead up,
/// unlock() (its resignation).
struct candidate {
  rlock::election e;
  asio::awaitable<void> lost() { return e.lost(); }
  asio::awaitable<void> unlock() { return e.resign(); }
};

/// One round of an election worker: campaign (or try_campaign(wait)) with the owner's name as
/// the value, recorded as an acquisition whose token is the term; sometimes proclaim; resign.
asio::awaitable<void> coroutine_election_round(rlock::client& c, shared_state& st, int index,
                                               const std::string& name, std::mt19937_64& rng) {
  const auto& o = *st.opts;
  auto& rec = *st.rec;
  const std::string owner = o.process + "/c" + std::to_string(index);
  auto ex = co_await asio::this_coro::executor;
  asio::steady_timer hold(ex);
  candidate l{rlock::election(c, name, 1000 + static_cast<std::uint64_t>(index))};
  rec.named(l.e.owner(), owner);
  const bool try_it = rng() % 3 != 0;
  const nanos requested = now_ns();
  const auto op = rec.started(try_it ? op_kind::try_lock : op_kind::lock, name, owner,
                              try_it ? st.try_bound : -1);
  std::optional<std::int64_t> term;
  try {
    if (try_it) {
      term = co_await l.e.try_campaign(owner, o.try_wait);
    } else {
      term = co_await l.e.campaign(owner);
    }
    rec.finished(op, term ? "acquired" : "not acquired");
  } catch (const std::exception& e) {
    if (st.drain_expired) throw;
    rec.finished(op, describe(e));
  }
  if (!term) {
    hold.expires_after(std::chrono::milliseconds(5 + rng() % 20));
    co_await hold.async_wait(asio::use_awaitable);
    co_return;
  }
  const auto a = rec.acquired(name, owner, requested, false, 0, *term);
  asio::co_spawn(ex, watch_lost(l, &rec, a), asio::detached);
  hold.expires_after(std::chrono::milliseconds(rng() % (o.max_hold.count() + 1)));
  co_await hold.async_wait(asio::use_awaitable);
  if (rng() % 2 == 0) {
    try {
      co_await l.e.proclaim(owner);  // the same value: nothing to tell, no new change
    } catch (const std::exception&) {
      // Not leading any more (lost meanwhile): the watch records it.
    }
  }
  co_await unlock_until_known(st, name, owner, a, l);
}

asio::awaitable<void> coroutine_election_worker(rlock::client& c, shared_state& st, int index) {
  const auto& o = *st.opts;
  std::mt19937_64 rng(o.seed * 1000 + static_cast<std::uint64_t>(index));
  try {
    for (int it = 0; it < o.max_iterations && std::chrono::steady_clock::now() < st.stop_at; ++it) {
      co_await coroutine_election_round(c, st, index, o.names[rng() % o.names.size()], rng);
    }
  } catch (const std::exception&) {
    if (!st.drain_expired) throw;
  }
}

/// An observer of election `name` for the observer rule: records every change it is told until
/// it is closed (or its client closes).
asio::awaitable<void> observe_election(rlock::election_observer obs, recorder* rec,
                                       std::string observer, std::string name,
                                       std::atomic<std::uint64_t>* told) {
  for (;;) {
    auto [ec, c] = co_await obs.async_next(asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;
    *told = c.seq;
    static constexpr const char* words[] = {"elected", "proclaimed", "resigned", "snapshot"};
    rec->observed({observer, name, 0, c.seq, c.term, words[static_cast<int>(c.what)], c.leading,
                   c.value, c.skipped});
  }
}

/// Threads take no part in the semaphore workload: the blocking facade keeps its holds inside,
/// with no lost() to end a belief the watchdog gave up on.
void no_thread_worker(rlock::blocking::client&, shared_state&, int) {}

/// One round of a thread worker (see coroutine_round).
template <typename Lock>
void thread_round(rlock::blocking::client& bc, shared_state& st, int index, const std::string& name,
                  std::mt19937_64& rng, bool shared) {
  const auto& o = *st.opts;
  auto& rec = *st.rec;
  const std::string owner = o.process + "/t" + std::to_string(index);
  auto l = bc.get<Lock>(name);
  rec.named(l.for_this_thread().owner_field(), owner);
  // Mostly bounded: a blocking lock() cannot be cancelled at the drain deadline.
  const bool try_it = rng() % 4 != 0;
  const nanos requested = now_ns();
  const auto op = rec.started(try_it ? op_kind::try_lock : op_kind::lock, name, owner,
                              try_it ? st.try_bound : -1);
  bool acquired = false;
  try {
    if (try_it) {
      acquired = l.try_lock_for(o.try_wait);
    } else {
      l.lock();
      acquired = true;
    }
    rec.finished(op, acquired ? "acquired" : "not acquired");
  } catch (const std::exception& e) {
    rec.finished(op, describe(e));
  }
  if (!acquired) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 20));  // no spinning
    return;
  }
  const auto a = rec.acquired(name, owner, requested, shared);
  asio::co_spawn(bc.async_client().get_executor(), watch_lost(l.for_this_thread(), &rec, a),
                 asio::detached);
  std::this_thread::sleep_for(std::chrono::milliseconds(rng() % (o.max_hold.count() + 1)));
  const nanos invoked = now_ns();
  for (int attempt = 0; attempt < max_unlock_attempts; ++attempt) {
    const auto uop = rec.started(op_kind::unlock, name, owner, st.unlock_bound);
    std::string outcome = "released";
    try {
      l.unlock();
    } catch (const boost::system::system_error& e) {
      outcome = outcome_of(e);
    }
    record_unlock(rec, a, uop, invoked, outcome);
    if (!worth_retrying(outcome)) break;
  }
}

template <typename Lock, typename Shared>
void thread_worker(rlock::blocking::client& bc, shared_state& st, int index) {
  const auto& o = *st.opts;
  std::mt19937_64 rng(o.seed * 1000 + 500 + static_cast<std::uint64_t>(index));
  for (int it = 0; it < o.max_iterations && std::chrono::steady_clock::now() < st.stop_at; ++it) {
    const auto& name = o.names[rng() % o.names.size()];
    if constexpr (!std::is_void_v<Shared>) {
      if (rng() % 3 != 0) {
        thread_round<Shared>(bc, st, index, name, rng, true);
        continue;
      }
    }
    thread_round<Lock>(bc, st, index, name, rng, false);
  }
}

std::string describe(const std::string& who, const client_activity& a) {
  std::ostringstream out;
  out << who << ":";
  auto field = [&](const char* name, std::size_t v) {
    if (v != 0) out << ' ' << name << '=' << v;
  };
  field("renewed_locks", a.renewed_locks);
  field("renewal_batches", a.renewal_batches);
  field("watchdog_armed", a.watchdog_armed ? 1 : 0);
  field("waiters", a.waiters);
  field("waiter_channels", a.waiter_channels);
  field("subscriptions", a.subscriptions);
  field("requests", a.requests);
  field("latches", a.latches);
  return out.str();
}

client_activity activity_of(rlock::client& c) {
  return asio::post(c.get_executor(), asio::use_future([&c] { return c.activity(); })).get();
}

}  // namespace

/// The workers of one kind: a coroutine worker and a thread worker.
struct workers {
  asio::awaitable<void> (*coroutine)(rlock::client&, shared_state&, int);
  void (*thread)(rlock::blocking::client&, shared_state&, int);
};

template <typename Lock, typename Shared = void>
constexpr workers workers_of() {
  return {&coroutine_worker<Lock, Shared>, &thread_worker<Lock, Shared>};
}

workers workers_for(const std::string& kind) {
  // Every owned kind by its word (rlock/detail/kind_list.hpp): the checker's rule, exclusion.
  // The read half alone is shared, which that rule would call a violation: read-write runs it.
  if (kind == "read")
    throw std::invalid_argument("workload: 'read' holds are shared; use read-write");
#define WORKLOAD_KIND(type, word) \
  if (kind == (word)) return workers_of<rlock::type>();
  RLOCK_OWNED_LOCK_KINDS(WORKLOAD_KIND)
#undef WORKLOAD_KIND
  if (kind == "read-write") return workers_of<rlock::write_lock, rlock::read_lock>();
  // Multi-locks over two reentrant locks (coroutines); the threads take plain locks beside them.
  if (kind == "multi")
    return {&coroutine_multi_worker, &thread_worker<rlock::reentrant_lock, void>};
  if (kind == "semaphore") return {&coroutine_semaphore_worker, &no_thread_worker};
  // Elections: coroutines campaign; observers (run_workload) record what they are told.
  if (kind == "election") return {&coroutine_election_worker, &no_thread_worker};
  throw std::invalid_argument("workload: unknown lock kind '" + kind + "'");
}

history run_workload(const workload_options& opts, recorder& rec, std::chrono::milliseconds drain) {
  const workers work = workers_for(opts.kind);
  shared_state st;
  st.opts = &opts;
  st.rec = &rec;
  st.try_bound = to_ns(opts.try_wait + opts.cfg.command_timeout);
  st.unlock_bound = to_ns(opts.cfg.command_timeout);
  const bool semaphores = opts.kind == "semaphore";
  const bool elections = opts.kind == "election";

  // Both clients connect before any worker starts: connect() is one attempt by design, and a
  // fault aimed at the workload must not hit a client that is still connecting.
  // Every line the clients log goes into the history: a violation's report shows what the
  // engine did around it (rec outlives both clients).
  rlock::config cfg = opts.cfg;
  cfg.log = [&rec, outer = opts.cfg.log](rlock::log_level level, std::string_view line) {
    rec.noted(std::string(rlock::to_string(level)) + " " + std::string(line));
    if (outer) outer(level, line);
  };
  asio::io_context ioc;
  auto guard = asio::make_work_guard(ioc);
  rlock::client c(ioc.get_executor(), cfg);
  std::thread io([&] { ioc.run(); });
  std::unique_ptr<rlock::blocking::client> bc;
  try {
    asio::co_spawn(ioc, c.connect(), asio::use_future).get();
    if (semaphores) {
      // Every process sets the same capacity; the first one's try_set_permits wins.
      for (const auto& name : opts.names) {
        auto sem = c.get_semaphore(name);
        (void)asio::co_spawn(ioc, sem.try_set_permits(semaphore_capacity), asio::use_future).get();
        rec.capacity_of(name, semaphore_capacity);
      }
    }
    if (opts.threads > 0) bc = std::make_unique<rlock::blocking::client>(cfg);
  } catch (...) {
    guard.reset();
    ioc.stop();
    io.join();
    throw;
  }

  // An observer per election, on the coroutines' client, from before the first campaign.
  std::vector<rlock::election_observer> observers;
  std::vector<std::atomic<std::uint64_t>> told(opts.names.size());
  std::atomic<int> observing{0};
  std::promise<void> observers_done;
  if (elections) {
    for (const auto& name : opts.names) {
      rec.election(name);
      rlock::election view(c, name);
      observers.push_back(view.observe());
    }
    observing = static_cast<int>(observers.size());
    for (std::size_t i = 0; i < observers.size(); ++i) {
      asio::co_spawn(
          ioc, observe_election(observers[i], &rec, opts.process + "/o", opts.names[i], &told[i]),
          [&](std::exception_ptr) {
            if (--observing == 0) observers_done.set_value();
          });
    }
  }

  st.stop_at = std::chrono::steady_clock::now() + opts.duration;
  std::vector<std::thread> threads;
  for (int i = 0; i < opts.threads; ++i) {
    threads.emplace_back([&, i] { work.thread(*bc, st, i); });
  }

  std::list<asio::cancellation_signal> signals;
  std::atomic<int> running{opts.coroutines};
  asio::steady_timer drain_timer(ioc);
  std::promise<void> workers_done;
  asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        for (int i = 0; i < opts.coroutines; ++i) {
          auto& sig = signals.emplace_back();
          asio::co_spawn(ioc, work.coroutine(c, st, i),
                         asio::bind_cancellation_slot(sig.slot(), [&](std::exception_ptr) {
                           if (--running == 0) drain_timer.cancel();
                         }));
        }
        // Workers stop starting at stop_at; a lock() still waiting at stop_at + drain is
        // cancelled and stays recorded as never completed.
        drain_timer.expires_at(st.stop_at + drain);
        boost::system::error_code ec;
        if (running > 0) {
          co_await drain_timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
        if (running > 0) {
          st.drain_expired = true;
          for (auto& s : signals) s.emit(asio::cancellation_type::terminal);
        }
      },
      [&](std::exception_ptr) { workers_done.set_value(); });
  for (auto& t : threads) t.join();
  workers_done.get_future().get();
  if (!observers.empty()) {
    // The observers stop once told the record's last change (bounded: 5 s in all; one that is
    // not told it by then shows as a gap, never as a violation).
    rlock::test::raw_client raw(opts.cfg.port);
    const auto until = std::chrono::steady_clock::now() + 5s;
    for (std::size_t i = 0; i < observers.size(); ++i) {
      const auto seq = raw.command(
          {"HGET", "rlock_election:{" + opts.cfg.key_prefix + opts.names[i] + "}", "seq"});
      const std::uint64_t last = seq.is_null() ? 0 : std::stoull(seq.str);
      while (told[i] < last && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(5ms);  // no event to await across the two threads
      }
    }
    for (auto& o : observers) o.close();
    observers_done.get_future().get();
    observers.clear();
  }

  // Quiescence has no event to wait for: poll it, bounded (unlock latches are deleted on the
  // next event-loop turn, lost() watchers end when their locks are released).
  client_activity mine{}, theirs{};
  for (int i = 0; i < 500; ++i) {
    mine = activity_of(c);
    theirs = bc ? activity_of(bc->async_client()) : client_activity{};
    if (mine.idle() && theirs.idle()) break;
    std::this_thread::sleep_for(10ms);
  }
  // How the workers got their locks, for the reader of a soak's log: the local handoff is on by
  // default, and its fault paths (a transfer whose answer is lost) are what the soak exercises.
  const auto stats =
      asio::post(c.get_executor(), asio::use_future([&c] { return c.stats(); })).get();
  std::fprintf(stderr, "%s: %llu acquire attempts, %llu local handoffs (%llu given back)\n",
               opts.process.c_str(), static_cast<unsigned long long>(stats.acquire_attempts),
               static_cast<unsigned long long>(stats.local_handoffs),
               static_cast<unsigned long long>(stats.handoffs_given_back));
  auto h = rec.finish();
  if (!mine.idle()) h.left.client_activity.push_back(describe(opts.process + " async", mine));
  if (!theirs.idle()) {
    h.left.client_activity.push_back(describe(opts.process + " blocking", theirs));
  }
  bc.reset();
  asio::co_spawn(ioc, c.close(), asio::detached);
  guard.reset();
  io.join();
  return h;
}

void record_server_leftovers(std::uint16_t port, const std::string& prefix, history& h) {
  rlock::test::raw_client raw(port);
  const auto channels = raw.command({"PUBSUB", "CHANNELS", "*" + prefix + "*"});
  for (const auto& ch : channels.elements) h.left.channels.push_back(ch.str);
  // Sharded channels (Redis 7; Cluster mode subscribes those).
  const auto shard = raw.command({"PUBSUB", "SHARDCHANNELS", "*" + prefix + "*"});
  for (const auto& ch : shard.elements) h.left.channels.push_back(ch.str);
  // A semaphore rests as its counter and its total: with every permit back, they are not left
  // behind; with permits missing, the semaphore is reported.
  std::vector<std::string> resting;
  for (const auto& cap : h.capacities) {
    const std::string counter = prefix + cap.lock;
    const auto value = raw.command({"GET", counter});
    if (value.str == std::to_string(cap.permits)) {
      resting.push_back(counter);
      resting.push_back("rlock_semaphore_total:{" + counter + "}");
    } else {
      h.left.keys.push_back("semaphore " + cap.lock + ": " + value.str + " of " +
                            std::to_string(cap.permits) + " permits available at the end");
    }
  }
  // An election rests as its token counter and its leader record (Redisson's counter is kept
  // forever; the record keeps the change counter observers order by).
  for (const auto& name : h.elections) {
    resting.push_back("redisson_lock_token:{" + prefix + name + "}");
    resting.push_back("rlock_election:{" + prefix + name + "}");
  }
  std::string cursor = "0";
  for (int i = 0; i < 10'000; ++i) {
    const auto page = raw.command({"SCAN", cursor, "MATCH", "*" + prefix + "*", "COUNT", "1000"});
    if (page.elements.size() != 2) break;
    for (const auto& k : page.elements[1].elements) {
      if (std::find(resting.begin(), resting.end(), k.str) == resting.end()) {
        h.left.keys.push_back(k.str);
      }
    }
    cursor = page.elements[0].str;
    if (cursor == "0") break;
  }
}

}  // namespace rlock::chaos
