// leader: who leads an election (rlock::election::leader()), its term and since when, and how
// many clients have candidates waiting (subscribers of the lock's unlock channel: a client
// subscribes once however many of its candidates wait). With --watch, then every change of
// leader or value, pushed (rlock::election::observe()), until Ctrl-C.
#include "admin_connection.hpp"
#include "commands.hpp"
#include "run.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <rlock/client.hpp>
#include <rlock/election.hpp>

namespace rlockctl {

namespace asio = boost::asio;

namespace {

std::string_view event_word(rlock::election_change::event e) {
  switch (e) {
    case rlock::election_change::event::elected:
      return "elected";
    case rlock::election_change::event::proclaimed:
      return "proclaimed";
    case rlock::election_change::event::resigned:
      return "resigned";
    case rlock::election_change::event::snapshot:
      break;
  }
  return "now";
}

std::string since_text(std::chrono::system_clock::time_point t) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z",
                     std::chrono::time_point_cast<std::chrono::seconds>(t));
}

/// Clients with candidates waiting on the election's lock: its unlock channel's subscribers.
asio::awaitable<std::int64_t> waiting_clients(admin_connection& admin, const std::string& key) {
  const std::string channel = "redisson_lock__channel:{" + key + "}";
  std::vector<command> ask{{"PUBSUB", admin.sharded() ? "SHARDNUMSUB" : "NUMSUB", channel}};
  const auto answers = co_await admin.pipeline(std::move(ask), key);
  const reply& r = answers.front();
  if (r.elements.size() == 2 && r.elements[1].type == rlock::detail::resp3::type::number) {
    co_return r.elements[1].integer;
  }
  co_return -1;
}

}  // namespace

int run_leader(const context& ctx, const std::vector<std::string>& names, bool watch) {
  return run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<int> {
    rlock::config cfg = ctx.cfg;
    if (!watch) {
      cfg.reconnect.enabled = false;  // one-shot: one attempt, then an error
      cfg.fail_fast = true;
    }
    rlock::client client(ex, cfg);
    admin_connection admin(ex, cfg);
    co_await client.connect();
    co_await admin.connect();
    std::vector<rlock::election> elections;
    for (const auto& name : names) {
      rlock::election e(client, name);
      const auto who = co_await e.leader();
      const auto waiting = co_await waiting_clients(admin, std::string(e.key()));
      boost::json::object o{{"election", name}, {"waiting_clients", waiting}};
      if (who) {
        o["leader"] = who->value;
        o["owner"] = who->owner;
        o["term"] = who->term;
        o["since_ms"] =
            std::chrono::duration_cast<std::chrono::milliseconds>(who->since.time_since_epoch())
                .count();
        o["led_for_ms"] = who->led_for.count();
        o["seq"] = who->seq;
        ctx.out.emit(
            fmt::format(
                "{}: led by {} (owner {}), term {}, since {}, for {:.1f} s; {} client(s) "
                "with candidates waiting",
                name, who->value.empty() ? "a holder that never campaigned" : who->value,
                who->owner, who->term,
                who->since.time_since_epoch().count() == 0 ? "unknown" : since_text(who->since),
                std::chrono::duration<double>(who->led_for).count(), waiting),
            o);
      } else {
        o["leader"] = nullptr;
        ctx.out.emit(
            fmt::format("{}: no leader; {} client(s) with candidates waiting", name, waiting), o);
      }
      elections.push_back(std::move(e));
    }
    admin.close();
    if (!watch) {
      co_await client.close();
      co_return exit_ok;
    }
    // --watch: every change, pushed, until Ctrl-C. Each election's observer runs on its own.
    asio::signal_set signals(ex, SIGINT, SIGTERM);
    std::vector<rlock::election_observer> observers;
    for (auto& e : elections) observers.push_back(e.observe());
    int running = static_cast<int>(observers.size());
    for (std::size_t i = 0; i < observers.size(); ++i) {
      asio::co_spawn(
          ex,
          [&, i]() -> asio::awaitable<void> {
            for (;;) {
              auto [ec, c] = co_await observers[i].async_next(asio::as_tuple(asio::use_awaitable));
              if (ec) break;
              boost::json::object o{{"election", names[i]}, {"event", event_word(c.what)},
                                    {"leading", c.leading}, {"value", c.value},
                                    {"term", c.term},       {"seq", c.seq},
                                    {"skipped", c.skipped}, {"at", now_ms()}};
              std::string text =
                  c.what == rlock::election_change::event::snapshot
                      ? fmt::format("{} {}: {} (term {})", clock_text(), names[i],
                                    c.leading ? "led by " + c.value : std::string("no leader"),
                                    c.term)
                      : fmt::format("{} {}: {}{}{} (term {})", clock_text(), names[i],
                                    event_word(c.what), c.value.empty() ? "" : " ", c.value,
                                    c.term);
              if (c.skipped > 0) text += fmt::format(", {} change(s) missed", c.skipped);
              ctx.out.emit(text, o);
            }
            if (--running == 0) signals.cancel();
          },
          asio::detached);
    }
    co_await signals.async_wait(asio::as_tuple(asio::use_awaitable));
    for (auto& o : observers) o.close();
    co_await client.close();
    co_return exit_ok;
  });
}

}  // namespace rlockctl
