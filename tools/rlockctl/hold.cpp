// hold: acquire, hold for --for or until Ctrl-C, release; tell when the lock is lost meanwhile.
#include "commands.hpp"
#include "run.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <fmt/format.h>

#include <csignal>
#include <cstdint>
#include <memory>
#include <optional>
#include <rlock/client.hpp>
#include <rlock/detail/kind_list.hpp>
#include <rlock/error.hpp>
#include <rlock/fenced_lock.hpp>
#include <rlock/rlock.hpp>
#include <variant>

namespace rlockctl {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {

// What the signal and lost() handlers share with the command; owned by them too, so a handler
// that runs after the command has finished touches nothing freed.
struct hold_state {
  explicit hold_state(const asio::any_io_executor& ex)
      : signals(ex, SIGINT, SIGTERM), until(ex, steady_clock::time_point::max()) {}
  asio::signal_set signals;
  // Expires at the end of the hold; cancelled early by a signal or by lost().
  asio::steady_timer until;
  asio::cancellation_signal cancel_acquire;
  asio::cancellation_signal cancel_lost;
  bool acquiring = true;
  bool interrupted = false;
  bool lost = false;
};

// Leaves nothing pending on the io_context whichever way the command ends.
struct stop_all {
  std::shared_ptr<hold_state> st;
  ~stop_all() {
    boost::system::error_code ignored;
    st->signals.cancel(ignored);
    st->until.cancel();
    st->cancel_lost.emit(asio::cancellation_type::terminal);
  }
};

std::int64_t since(steady_clock::time_point t) {
  return std::chrono::duration_cast<milliseconds>(steady_clock::now() - t).count();
}

/// The kinds `hold --kind` takes: every owned lock kind (rlock/detail/kind_list.hpp; a
/// read-write lock's halves too), whose acquisitions complete alike. Index 0 is the reentrant
/// lock, the default.
template <typename Leading, typename... Kinds>
struct variant_of_the_rest {
  using type = std::variant<Kinds...>;
};
#define RLOCKCTL_TYPE(type, word) , rlock::type
using exclusive = variant_of_the_rest<void RLOCK_OWNED_LOCK_KINDS(RLOCKCTL_TYPE)>::type;
#undef RLOCKCTL_TYPE

exclusive exclusive_of(rlock::client& c, const std::string& kind, const std::string& name) {
#define RLOCKCTL_MAKE(type, word) \
  if (kind == (word)) return c.get<rlock::type>(name);
  RLOCK_OWNED_LOCK_KINDS(RLOCKCTL_MAKE)
#undef RLOCKCTL_MAKE
  return c.get<rlock::reentrant_lock>(name);  // main.cpp takes only the list's words
}

rlock::lock_handle handle_of(const exclusive& l) {
  return std::visit([](const auto& k) { return rlock::lock_handle(k); }, l);
}

}  // namespace

int run_hold(const context& ctx, const hold_options& opts) {
  return run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<int> {
    const output& out = ctx.out;
    const std::string& name = opts.name;
    rlock::client client(ex, ctx.cfg);
    auto st = std::make_shared<hold_state>(ex);
    const stop_all guard{st};
    st->signals.async_wait([st](boost::system::error_code ec, int) {
      if (ec) return;
      st->interrupted = true;
      if (st->acquiring) st->cancel_acquire.emit(asio::cancellation_type::terminal);
      st->until.cancel();
    });

    co_await client.connect();
    // One owner's handle of its kind: acquired through the kind, then held, watched and released
    // through what every kind shares (lock_handle).
    std::optional<rlock::fenced_lock> fenced;
    std::optional<exclusive> plain;
    if (opts.fenced) {
      fenced.emplace(client.get_fenced_lock(name));
    } else {
      plain.emplace(exclusive_of(client, opts.kind, name));
    }
    rlock::lock_handle lock = fenced ? rlock::lock_handle(*fenced) : handle_of(*plain);
    const std::string owner = fmt::format("{}:{}", client.id(), lock.owner_id());

    // Acquire, waiting up to --wait (or until Ctrl-C).
    const auto t0 = steady_clock::now();
    auto token = asio::bind_cancellation_slot(st->cancel_acquire.slot(),
                                              asio::as_tuple(asio::use_awaitable));
    boost::system::error_code ec;
    bool acquired = false;
    if (st->interrupted) {
      ec = asio::error::operation_aborted;
    } else if (opts.wait && fenced) {
      std::optional<std::int64_t> got;
      std::tie(ec, got) = co_await fenced->async_try_lock(*opts.wait, opts.lease, token);
      acquired = got.has_value();
    } else if (opts.wait) {
      std::tie(ec, acquired) = co_await std::visit(
          [&](auto& l) { return l.async_try_lock(*opts.wait, opts.lease, token); }, *plain);
    } else if (fenced) {
      std::int64_t got = 0;
      std::tie(ec, got) = co_await fenced->async_lock(opts.lease, token);
      acquired = !ec;
    } else {
      std::tie(ec) =
          co_await std::visit([&](auto& l) { return l.async_lock(opts.lease, token); }, *plain);
      acquired = !ec;
    }
    st->acquiring = false;
    const auto acquired_at = steady_clock::now();
    if (ec == asio::error::operation_aborted) {
      out.emit(fmt::format("{}: interrupted before it was acquired", name),
               {{"event", "interrupted"}, {"lock", name}, {"waited_ms", since(t0)}});
      co_return exit_not_acquired;
    }
    if (ec)
      throw boost::system::system_error(ec,
                                        fmt::format("acquiring '{}': {}", name, lock.last_error()));
    if (!acquired) {
      out.emit(fmt::format("{}: not acquired within {} ms", name, opts.wait->count()),
               {{"event", "not-acquired"}, {"lock", name}, {"waited_ms", since(t0)}});
      co_return exit_not_acquired;
    }
    {
      boost::json::object o{
          {"event", "acquired"}, {"lock", name}, {"owner", owner}, {"waited_ms", since(t0)}};
      if (opts.lease) {
        o["lease_ms"] = opts.lease->count();
      } else {
        o["watchdog"] = true;
      }
      if (fenced) o["token"] = fenced->token();
      o["kind"] = opts.fenced ? std::string("fenced") : opts.kind;
      out.emit(fmt::format("{}: acquired by {} ({}{}), after {} ms", name, owner,
                           opts.lease ? fmt::format("lease {} ms", opts.lease->count())
                                      : std::string("watchdog"),
                           fenced ? fmt::format(", token {}", fenced->token()) : std::string(),
                           since(t0)),
               o);
    }

    // Hold until --for is up, Ctrl-C, or the lock is lost. A watchdog lock is told lost by
    // lost(); a lease is over when it runs out, and its holder stops believing a margin before
    // the server can expire it (the lease started at the server before the answer came back).
    auto end = opts.hold_for ? acquired_at + *opts.hold_for : steady_clock::time_point::max();
    bool lease_ends = false;
    if (opts.lease) {
      const auto margin = *opts.lease / 100 + milliseconds(5);
      const auto lease_end = acquired_at + *opts.lease - std::min(margin, *opts.lease);
      if (lease_end <= end) {
        end = lease_end;
        lease_ends = true;
      }
    } else {
      lock.async_lost(
          asio::bind_cancellation_slot(st->cancel_lost.slot(), [st](boost::system::error_code e) {
            if (e) return;
            st->lost = true;
            st->until.cancel();
          }));
    }
    if (!st->interrupted) {
      st->until.expires_at(end);
      auto [wait_ec] = co_await st->until.async_wait(asio::as_tuple(asio::use_awaitable));
      (void)wait_ec;
    }
    const bool ran_out = lease_ends && !st->interrupted && !st->lost;
    if (st->lost || ran_out) {
      const char* why = st->lost ? "lost" : "lease ran out";
      out.emit(fmt::format("{}: {} while held, after {} ms", name, why, since(acquired_at)),
               {{"event", st->lost ? "lost" : "lease-ended"},
                {"lock", name},
                {"owner", owner},
                {"held_ms", since(acquired_at)}});
      co_await client.close();
      co_return exit_lost;
    }

    // Release. not_owner: someone else removed it (force-unlock, expiry) while we held it.
    st->cancel_lost.emit(asio::cancellation_type::terminal);
    auto [unlock_ec] = co_await lock.async_unlock(asio::as_tuple(asio::use_awaitable));
    if (unlock_ec == rlock::errc::not_owner) {
      out.emit(
          fmt::format("{}: lost while held (not held any more at release), after {} ms", name,
                      since(acquired_at)),
          {{"event", "lost"}, {"lock", name}, {"owner", owner}, {"held_ms", since(acquired_at)}});
      co_await client.close();
      co_return exit_lost;
    }
    if (unlock_ec) {
      throw boost::system::system_error(unlock_ec,
                                        fmt::format("releasing '{}': {}", name, lock.last_error()));
    }
    out.emit(fmt::format("{}: released by {}, after {} ms", name, owner, since(acquired_at)),
             {{"event", "released"},
              {"lock", name},
              {"owner", owner},
              {"held_ms", since(acquired_at)},
              {"interrupted", st->interrupted}});
    co_await client.close();
    co_return exit_ok;
  });
}

}  // namespace rlockctl
