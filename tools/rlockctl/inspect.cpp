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

#include <rlock/client.hpp>
#include <rlock/error.hpp>
#include <rlock/inspect.hpp>
#include <rlock/reentrant_lock.hpp>

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
