// watch: a live view of locks, from their unlock channels and (where the server sends them)
// keyspace notifications. A deletion or expiry ends the hold seen last; every other event makes
// the view read the lock again (HGETALL, PTTL) and print what changed, so holders, counts and
// TTLs printed are what Redis held, not guesses from event names. A fair lock's queue
// (`redisson_lock_queue:{name}`, list events: class 'l') is read again on each of its events,
// and who joined or left it is printed. A name that is an election's also shows its changes of
// leader, from its channel `rlock_election_channel:{name}` (rlock::election).
#include "admin_connection.hpp"
#include "commands.hpp"
#include "election/observer_sequence.hpp"
#include "inspect/lock_probe.hpp"
#include "lock_story.hpp"
#include "lock_view.hpp"
#include "run.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <deque>
#include <map>
#include <memory>
#include <rlock/inspect.hpp>

namespace rlockctl {

namespace asio = boost::asio;

namespace {

struct watched {
  std::string name;
  std::string key;
  lock_story story{lock_view{}};
  // Its channels: the unlock channel, its key's keyspace events, its election channel and, for
  // a hash lock, its queue's; how many of them are subscribed.
  int channels = 3;
  int subscribed = 0;
  bool shown = false;              // "watching" printed
  std::vector<std::string> queue;  // a fair lock's waiters, as last read
};

/// The waiters that are in `now` and not in `before` (joined), or the other way (left).
std::vector<std::string> missing_from(const std::vector<std::string>& from,
                                      const std::vector<std::string>& in) {
  std::vector<std::string> out;
  for (const auto& w : from)
    if (std::find(in.begin(), in.end(), w) == in.end()) out.push_back(w);
  return out;
}

struct event {
  std::size_t lock;
  std::string what;  // keyspace event, "unlock-message", "subscribed", "resync" or "queue"
};

/// What a subscribed channel tells of its lock.
enum class channel_role { unlock, key_events, queue_events, election };

// Filled by the connection's callbacks, drained by the command in order: one event at a time,
// so every change is computed against the view the previous event left.
struct event_queue {
  explicit event_queue(const asio::any_io_executor& ex)
      : wake(ex, asio::steady_timer::time_point::max()), signals(ex, SIGINT, SIGTERM) {}
  std::deque<event> events;
  asio::steady_timer wake;
  asio::signal_set signals;
  bool stopped = false;
  void push(event e) {
    events.push_back(std::move(e));
    wake.cancel();
  }
  void stop() {
    stopped = true;
    wake.cancel();
  }
};

// Leaves nothing pending on the io_context whichever way the command ends.
struct stop_queue {
  std::shared_ptr<event_queue> q;
  ~stop_queue() {
    boost::system::error_code ignored;
    q->signals.cancel(ignored);
    q->wake.cancel();
  }
};

// Which of the notifications a lock's story needs the server's notify-keyspace-events lacks:
// K (keyspace channel), h (HINCRBY: taken, re-entered), g (DEL, PEXPIRE: released, renewed),
// x (expired). 'A' stands for all classes.
std::string missing_notifications(std::string_view flags) {
  if (flags.find('K') == std::string_view::npos) return "Khgx";
  if (flags.find('A') != std::string_view::npos) return {};
  std::string missing;
  for (char c : std::string_view("hgx"))
    if (flags.find(c) == std::string_view::npos) missing.push_back(c);
  return missing;
}

/// The lock `name` read with rlock::inspect's probe, over the watch's own connection: a second
/// session (a client) would double the reconnections after a server restart, since each
/// session's fence kills its old connection id, which a restarted server may have given to the
/// other.
asio::awaitable<lock_view> read_lock(admin_connection& redis, const context& ctx,
                                     const std::string& name) {
  lock_view info;
  info.name = name;
  info.key = ctx.key(name);
  // Named, not a temporary: g++ 12 miscompiles some temporaries in a co_await expression.
  auto cmds = rlock::detail::probe_commands(info.key, redis.sharded());
  const auto answers = co_await redis.pipeline(std::move(cmds), info.key);
  if (const auto f = rlock::detail::read_probe(answers, info)) f.raise();
  co_return info;
}

asio::awaitable<int> watch_locks(asio::any_io_executor ex, const context& ctx,
                                 std::vector<std::string> names) {
  // Each lock once, however often it was named.
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  const output& out = ctx.out;
  admin_connection redis(ex, ctx.cfg);
  auto q = std::make_shared<event_queue>(ex);
  q->signals.async_wait([q](boost::system::error_code ec, int) {
    if (!ec) q->stop();
  });
  const stop_queue guard{q};

  co_await redis.connect();

  // Ask, never change: the server's configuration belongs to its operators. A refusal
  // (ACL, a renamed CONFIG) comes back as a value: the watch goes on without knowing.
  std::vector<command> config_get{{"CONFIG", "GET", "notify-keyspace-events"}};
  const auto config_answers = co_await redis.pipeline(std::move(config_get));
  const reply& config = config_answers.front();
  const bool notifications_known = !config.is_error();
  std::string missing;
  if (!notifications_known) {
    out.error("notifications",
              fmt::format("cannot read notify-keyspace-events ({}): lock, renewal and expiry "
                          "events are shown only if the server sends them",
                          config.str));
  } else {
    const std::string flags = config.elements.size() == 2 ? config.elements[1].str : std::string();
    missing = missing_notifications(flags);
    if (!missing.empty()) {
      out.error("notifications",
                fmt::format("notify-keyspace-events is \"{}\": without '{}' this view misses "
                            "{}; an operator can enable them with: CONFIG SET "
                            "notify-keyspace-events Khgx",
                            flags, missing,
                            missing == "Khgx" ? "all events but releases (unlock messages)"
                                              : "some events (taken: h; released and renewed: "
                                                "g; expired: x)"));
    }
  }
  // With DEL notifications a release is seen there; the unlock message then tells nothing new.
  const bool sees_releases = notifications_known && missing.find('g') == std::string::npos &&
                             missing.find('K') == std::string::npos;

  std::vector<watched> locks;
  std::map<std::string, std::pair<std::size_t, channel_role>, std::less<>> by_channel;
  for (const auto& name : names) {
    // The names its story is told on: the kind's channel, its key's and its queue's events.
    const lock_view first = co_await read_lock(redis, ctx, name);
    watched w;
    w.name = name;
    w.key = first.key;
    by_channel.emplace(first.channel, std::pair{locks.size(), channel_role::unlock});
    by_channel.emplace(fmt::format("__keyspace@{}__:{}", ctx.cfg.database, first.key),
                       std::pair{locks.size(), channel_role::key_events});
    by_channel.emplace("rlock_election_channel:{" + first.key + "}",
                       std::pair{locks.size(), channel_role::election});
    if (!first.queue_key.empty()) {  // a hash lock's: it may become fair
      w.channels = 4;
      by_channel.emplace(fmt::format("__keyspace@{}__:{}", ctx.cfg.database, first.queue_key),
                         std::pair{locks.size(), channel_role::queue_events});
    }
    locks.push_back(std::move(w));
  }
  redis.events.message = [q, &by_channel](std::string_view channel, std::string_view payload) {
    const auto it = by_channel.find(channel);
    if (it == by_channel.end()) return;
    const auto [lock, role] = it->second;
    q->push({lock, role == channel_role::queue_events ? std::string("queue")
                   : role == channel_role::key_events ? std::string(payload)
                   : role == channel_role::election   ? "election:" + std::string(payload)
                                                      : std::string("unlock-message")});
  };
  redis.events.subscribed = [q, &by_channel](std::string_view channel) {
    const auto it = by_channel.find(channel);
    if (it != by_channel.end()) q->push({it->second.first, "subscribed"});
  };
  redis.events.refused = [&out](std::string_view channel, std::string_view text) {
    out.error("subscription-refused", fmt::format("cannot subscribe {}: {}", channel, text));
  };
  bool was_lost = false;
  redis.events.state = [&, q](rlock::connection_state s, const std::string& diagnostic) {
    if (s == rlock::connection_state::reconnecting && !was_lost) {
      was_lost = true;
      out.error("connection-lost", fmt::format("connection lost ({}); reconnecting", diagnostic));
    } else if (s == rlock::connection_state::connected && was_lost) {
      was_lost = false;
      out.error("reconnected", "reconnected; reading the locks again");
      // Whatever happened meanwhile was not seen: read every lock again.
      for (std::size_t i = 0; i < locks.size(); ++i) q->push({i, "resync"});
    }
  };
  for (const auto& [channel, index] : by_channel) redis.subscribe(channel);

  while (!q->stopped) {
    if (q->events.empty()) {
      q->wake.expires_at(asio::steady_timer::time_point::max());
      auto [ec] = co_await q->wake.async_wait(asio::as_tuple(asio::use_awaitable));
      (void)ec;
      continue;
    }
    const event ev = std::move(q->events.front());
    q->events.pop_front();
    if (ev.what == "unlock-message" && sees_releases) continue;
    watched& w = locks[ev.lock];
    // A deletion of the lock that reached the watch behind this event: a read now would show a
    // later state (lock_story.hpp). Checked again after the read, for one that came meanwhile.
    const auto deletion_queued = [&] {
      return std::any_of(q->events.begin(), q->events.end(),
                         [&](const event& e) { return e.lock == ev.lock && ends_key(e.what); });
    };
    if (ev.what.starts_with("election:")) {
      // A change of leader: told as the election's message says it (the lock's own events
      // follow from its key).
      const auto parsed =
          rlock::detail::parse_election_message(std::string_view(ev.what).substr(9));
      if (!parsed.change) {
        out.error("election-message", fmt::format("{}: {}", w.name, parsed.error));
        continue;
      }
      const auto& c = *parsed.change;
      const auto word = rlock::detail::election_event_word(c.what);
      boost::json::object o{{"lock", w.name},   {"event", fmt::format("leader-{}", word)},
                            {"value", c.value}, {"term", c.term},
                            {"seq", c.seq},     {"at", now_ms()}};
      out.emit(fmt::format("{} {}: leader {}{}{} (term {})", clock_text(), w.name, word,
                           c.value.empty() ? "" : " ", c.value, c.term),
               o);
      continue;
    }
    if (ev.what == "queue") {
      // A fair lock's queue changed: who joined, who left (taken the lock, given up, dropped).
      const lock_view read = co_await read_lock(redis, ctx, w.name);
      std::vector<std::string> now_queue;
      for (const auto& waiter : read.queue) now_queue.push_back(waiter.owner);
      for (const auto& [kind, who] : {std::pair{"queued", missing_from(now_queue, w.queue)},
                                      std::pair{"left-queue", missing_from(w.queue, now_queue)}}) {
        for (const auto& owner : who) {
          boost::json::object o{{"lock", w.name},
                                {"event", kind},
                                {"owner", owner},
                                {"queue_length", now_queue.size()},
                                {"at", now_ms()}};
          out.emit(fmt::format("{} {}: {} {} (queue: {})", clock_text(), w.name, owner,
                               std::string_view(kind) == "queued" ? "queued" : "left the queue",
                               now_queue.size()),
                   o);
        }
      }
      w.queue = std::move(now_queue);
      continue;
    }
    if (ev.what == "subscribed" && (++w.subscribed < w.channels || w.shown)) continue;
    std::optional<lock_view> read;
    if (lock_story::wants_read(ev.what, deletion_queued())) {
      read = co_await read_lock(redis, ctx, w.name);
      const bool always = ev.what == "subscribed" || ev.what == "resync";
      if (!always && deletion_queued()) read.reset();  // it came too late for this event
    }
    const lock_view before = w.story.last();
    const auto change = w.story.next(ev.what, read);
    const lock_view& now = w.story.last();
    boost::json::object o = to_json(now);
    o["at"] = now_ms();
    if (ev.what == "subscribed") {
      // Its channels are subscribed: from here on nothing is missed.
      w.shown = true;
      o["event"] = "watching";
      out.emit(fmt::format("{} watching {}", clock_text(), describe(now)), o);
    } else if (read && now.kind == rlock::key_kind::other &&
               before.kind != rlock::key_kind::other) {
      o["event"] = "not-a-lock";
      out.emit(fmt::format("{} {}", clock_text(), describe(now)), o);
    } else if (change) {
      o["event"] = change->kind;
      o["cause"] = ev.what;
      o["detail"] = change->text;
      out.emit(fmt::format("{} {}: {}", clock_text(), w.name, change->text), o);
    }
  }
  redis.close();
  co_return exit_ok;
}

}  // namespace

int run_watch(const context& ctx, const std::vector<std::string>& names) {
  if (!ctx.cfg.cluster.nodes.empty()) {
    // Keyspace notifications are per node and classic; following them across slot moves is not
    // built yet: say so rather than watch the wrong node.
    ctx.out.error("usage",
                  "watch does not work with --cluster yet (keyspace notifications are "
                  "per node); use status, or watch the master that owns the lock");
    return exit_error;
  }
  return run_coroutine(
      [&](asio::any_io_executor ex) { return watch_locks(std::move(ex), ctx, names); });
}

}  // namespace rlockctl
