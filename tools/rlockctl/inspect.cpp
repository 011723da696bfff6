// status, list and unlock: one-shot commands.
#include "admin_connection.hpp"
#include "commands.hpp"
#include "lock_view.hpp"
#include "run.hpp"

#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <fmt/format.h>

#include <map>
#include <memory>
#include <rlock/client.hpp>
#include <rlock/error.hpp>
#include <rlock/inspect.hpp>
#include <rlock/reentrant_lock.hpp>
#include <set>

namespace rlockctl {

namespace asio = boost::asio;

namespace {

// One-shot commands do not wait for a server that is down: one attempt, then an error.
rlock::config one_shot(rlock::config cfg) {
  cfg.reconnect.enabled = false;
  cfg.fail_fast = true;
  return cfg;
}

// SCAN's MATCH is a glob: the prefix is matched literally.
std::string glob_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace

int run_status(const context& ctx, const std::vector<std::string>& names) {
  return run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<int> {
    rlock::client client(ex, one_shot(ctx.cfg));
    co_await client.connect();
    for (const auto& name : names) {
      const lock_view view = co_await rlock::inspect(client, name);
      ctx.out.emit(describe(view), to_json(view));
    }
    co_await client.close();
    co_return exit_ok;
  });
}

/// A quorum lock's status: each node's view of each name (a node that cannot be read says why),
/// then whether a majority of the nodes is held by one owner id (a quorum lock's owner has one id
/// on every node, after the node's client uuid: `<uuid_i>:<id>`).
int run_quorum_status(const context& ctx, const std::vector<std::string>& urls,
                      const std::vector<std::string>& names) {
  return run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<int> {
    struct node {
      std::string url;
      std::unique_ptr<rlock::client> client;
      std::string unreachable;  // why it could not be read (empty: connected)
    };
    std::vector<node> nodes;
    for (const auto& url : urls) {
      rlock::config cfg = rlock::config::from_url(url);
      cfg.key_prefix = ctx.cfg.key_prefix;
      cfg.client_name = ctx.cfg.client_name;
      if (cfg.tls.enabled && ctx.cfg.tls.enabled) cfg.tls = ctx.cfg.tls;
      nodes.push_back({url, std::make_unique<rlock::client>(ex, one_shot(cfg)), {}});
    }
    for (auto& n : nodes) {
      try {
        co_await n.client->connect();
      } catch (const boost::system::system_error& e) {
        n.unreachable = e.what();
      }
    }
    const std::size_t majority = nodes.size() / 2 + 1;
    for (const auto& name : names) {
      std::map<std::string, std::size_t> by_owner_id;  // holders' owner ids -> nodes held
      std::size_t held_on = 0;
      for (auto& n : nodes) {
        if (!n.unreachable.empty()) {
          boost::json::object o{{"name", name},
                                {"node", n.url},
                                {"state", "unreachable"},
                                {"message", n.unreachable}};
          ctx.out.emit(fmt::format("{} @ {}: unreachable ({})", name, n.url, n.unreachable), o);
          continue;
        }
        const lock_view view = co_await rlock::inspect(*n.client, name);
        auto o = to_json(view);
        o["node"] = n.url;
        // "<name> @ <node>: ..." (describe() begins with the name).
        const std::string text = describe(view);
        const bool named = text.rfind(name, 0) == 0;
        ctx.out.emit(named ? fmt::format("{} @ {}{}", name, n.url, text.substr(name.size()))
                           : fmt::format("{} @ {}: {}", name, n.url, text),
                     o);
        if (!view.held()) continue;
        ++held_on;
        std::set<std::string> ids;
        for (const auto& h : view.holders) ids.insert(h.owner.substr(h.owner.rfind(':') + 1));
        for (const auto& id : ids) ++by_owner_id[id];
      }
      std::string owner;
      std::size_t most = 0;
      for (const auto& [id, count] : by_owner_id) {
        if (count > most) {
          owner = id;
          most = count;
        }
      }
      const bool holds = most >= majority;
      boost::json::object q{{"name", name},       {"nodes", nodes.size()}, {"majority", majority},
                            {"held_on", held_on}, {"quorum_holds", holds}, {"owner_id", owner}};
      ctx.out.emit(
          holds ? fmt::format("{}: a quorum holds it: owner id {} on {} of {} nodes (majority {})",
                              name, owner, most, nodes.size(), majority)
                : fmt::format("{}: no quorum holds it: held on {} of {} nodes, at most {} by one "
                              "owner id (majority {})",
                              name, held_on, nodes.size(), most, majority),
          boost::json::object{{"quorum", q}});
    }
    for (auto& n : nodes) {
      if (n.unreachable.empty()) co_await n.client->close();
    }
    co_return exit_ok;
  });
}

namespace {

/// The locks `names` read at once (one pipeline each, all in flight together); a failure is
/// read again alone, so that its exception carries Redis's words.
asio::awaitable<std::vector<lock_view>> inspect_all(rlock::client& client,
                                                    const std::vector<std::string>& names) {
  using op = decltype(rlock::async_inspect(client, std::string_view(), asio::deferred));
  std::vector<op> ops;
  ops.reserve(names.size());
  for (const auto& name : names) ops.push_back(rlock::async_inspect(client, name, asio::deferred));
  auto [order, errors, views] =
      co_await asio::experimental::make_parallel_group(std::move(ops))
          .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
  (void)order;
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (errors[i]) views[i] = co_await rlock::inspect(client, names[i]);
  }
  co_return std::move(views);
}

}  // namespace

int run_list(const context& ctx, const list_options& opts) {
  return run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<int> {
    // SCAN on each node through the admin connection; the locks read through a client.
    admin_connection redis(ex, one_shot(ctx.cfg));
    co_await redis.connect();
    rlock::client client(ex, one_shot(ctx.cfg));
    co_await client.connect();
    const std::string match = glob_escape(ctx.cfg.key_prefix) + opts.pattern;
    const std::string count = std::to_string(opts.page);
    std::uint64_t shown = 0;
    // Every node that serves keys: the server, or each master of a cluster (SCAN is per node).
    for (const auto& node : redis.masters()) {
      std::string cursor = "0";
      // SCAN ends when the cursor comes back to 0; every call returns at most about `page` keys,
      // so no call blocks the server for long, whatever the keyspace.
      do {
        command scan{"SCAN", cursor, "MATCH", match, "COUNT", count, "TYPE", "hash"};
        const reply page = co_await redis.run_on(node, std::move(scan));
        if (page.elements.size() != 2) {
          throw boost::system::system_error(make_error_code(rlock::errc::protocol_error),
                                            "SCAN: unexpected answer");
        }
        cursor = page.elements[0].str;
        std::vector<std::string> names;
        for (const auto& k : page.elements[1].elements) {
          names.push_back(k.str.substr(ctx.cfg.key_prefix.size()));
        }
        if (names.empty()) continue;
        const auto views = co_await inspect_all(client, names);
        for (const auto& view : views) {
          // Other hashes, and locks released since SCAN saw them, are not listed.
          if (view.kind == rlock::key_kind::other || !view.held()) continue;
          ctx.out.emit(describe(view), to_json(view));
          ++shown;
          if (opts.limit && shown >= *opts.limit) {
            co_await client.close();
            co_return exit_ok;
          }
        }
      } while (cursor != "0");
    }
    co_await client.close();
    if (!ctx.out.json()) fmt::print("{} lock(s) held\n", shown);
    co_return exit_ok;
  });
}

int run_unlock(const context& ctx, const std::string& name, bool force) {
  if (!force) {
    ctx.out.error("usage", fmt::format("refusing to unlock '{}' without --force: it releases the "
                                       "lock whoever holds it, and its holder will not know",
                                       name));
    return exit_error;
  }
  return run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<int> {
    rlock::client client(ex, one_shot(ctx.cfg));
    co_await client.connect();
    auto lock = client.get_lock(name);
    const bool was_locked = co_await lock.force_unlock();
    ctx.out.emit(fmt::format("{}: {}", name, was_locked ? "force-unlocked" : "was not locked"),
                 {{"event", "force-unlock"}, {"lock", name}, {"was_locked", was_locked}});
    co_await client.close();
    co_return exit_ok;
  });
}

}  // namespace rlockctl
