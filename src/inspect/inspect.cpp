// rlock::inspect: the lock probe's commands pipelined on the key's node (read-only queries,
// written again after a reconnect), its answers decoded by the sans-I/O probe.
#include "rlock/inspect.hpp"

#include "engine/delivery.hpp"
#include "engine/kind_access.hpp"
#include "inspect/lock_probe.hpp"
#include "resp3/request.hpp"
#include "session/command.hpp"

#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include <memory>
#include <span>

namespace rlock {

namespace detail {

namespace {

/// One probe in flight: the answers as they come, completed when the last is in. The client's
/// settings and executor come from its public side; the engine's context serves its I/O only.
struct probe_batch {
  probe_batch(std::shared_ptr<engine_context> c, boost::asio::any_io_executor e,
              handler<lock_info> h)
      : ctx(std::move(c)), ex(std::move(e)), done(std::move(h)) {}
  std::shared_ptr<engine_context> ctx;
  boost::asio::any_io_executor ex;  // the client's
  handler<lock_info> done;
  lock_info info;
  std::vector<resp3::value> answers;
  std::size_t left = 0;
  std::error_code ec;  // the first transport failure (a refusal is an answer)

  void answered(std::size_t i, std::error_code e, resp3::value v) {
    if (e && !ec) ec = e;
    answers[i] = std::move(v);
    if (--left != 0) return;
    failure f;
    if (ec) {
      const auto last = ctx->session.last_error();
      f = failure(ec, last.empty()
                          ? fmt::format("inspect '{}': {}", info.name, ec.message())
                          : fmt::format("inspect '{}': {} ({})", info.name, ec.message(), last));
    } else {
      f = read_probe(answers, info);
    }
    if (f) info = lock_info{};
    ops::deliver(ex, std::move(done), boost::asio::cancellation_slot(), false, std::move(f),
                 std::move(info));
  }
};

}  // namespace

void start_inspect(const inspect_target& t, handler<lock_info> h) {
  auto ctx = kind_access::context(*t.c);
  const auto ex = t.c->get_executor();
  const auto& settings = t.c->get_config();
  // Started from the client's executor, never inside the initiating call.
  boost::asio::post(
      ex, [ctx = std::move(ctx), ex, key = settings.key_prefix + t.name,
           bound = settings.command_timeout, name = t.name, h = std::move(h)]() mutable {
        auto b = std::make_shared<probe_batch>(ctx, ex, std::move(h));
        b->info.name = name;
        b->info.key = std::move(key);
        const bool sharded = ctx->session.publish_command() == "spublish";
        const auto cmds = probe_commands(b->info.key, sharded);
        b->answers.resize(cmds.size());
        b->left = cmds.size();
        request_options opts;
        opts.deadline = std::chrono::steady_clock::now() + bound;
        // Every command is queued before any answer can come (this runs on the client's
        // executor): the connection writes them together, and all go to the key's node.
        for (std::size_t i = 0; i < cmds.size(); ++i) {
          std::string payload;
          resp3::append_command(payload, std::span<const std::string>(cmds[i]));
          ctx->session.exec(
              command::encoded(command_kind::query, b->info.key, std::move(payload)), opts,
              [b, i](std::error_code e, resp3::value v) { b->answered(i, e, std::move(v)); });
        }
      });
}

}  // namespace detail

boost::asio::awaitable<lock_info> inspect(client& c, std::string_view name) {
  return detail::awaitable_of<lock_info>(
      detail::inspect_target{&c, std::string(name)},
      [](const detail::inspect_target& t, detail::handler<lock_info> h) {
        detail::start_inspect(t, std::move(h));
      });
}

}  // namespace rlock
