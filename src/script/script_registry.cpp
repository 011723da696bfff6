#include "script/script_registry.hpp"

#include "resp3/request.hpp"
#include "rlock/error.hpp"
#include "script/loaded_source.hpp"
#include "session/redis_error.hpp"

#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <system_error>

namespace rlock::detail {

namespace {

bool is_noscript(const resp3::value& v) { return v.is_error() && v.str.starts_with("NOSCRIPT"); }

/// `SCRIPT LOAD source`, for the node of `route`.
command load_command(script s, std::string_view route = {}) {
  return command::about(command_kind::load, route, "SCRIPT", {"LOAD", loaded_source(s)});
}

/// A SCRIPT LOAD reply checked: the SHA1, or why not.
std::error_code sha_of(resp3::value& reply, std::string& sha, std::string& diagnostic) {
  if (reply.is_error()) {
    diagnostic = "SCRIPT LOAD failed: " + reply.str;
    return make_error_code(errc_of_reply(reply.str));
  }
  if (reply.type != resp3::type::blob_string && reply.type != resp3::type::simple_string) {
    diagnostic = "SCRIPT LOAD did not return a SHA1";
    return make_error_code(errc::protocol_error);
  }
  sha = std::move(reply.str);
  return {};
}

}  // namespace

script_registry::script_registry(session& s, boost::asio::any_io_executor ex)
    : session_(s), executor_(std::move(ex)) {
  const auto& sync = session_.cfg().sync_replicas;
  if (sync.replicas > 0) {
    replicas_ = sync.replicas;
    wait_command_ =
        command::about(command_kind::query, {}, "WAIT",
                       {std::to_string(sync.replicas), std::to_string(sync.timeout.count())})
            .take_payload();
  }
  for (std::size_t i = 0; i < script_count; ++i) {
    session_.add_handshake_step({load_command(static_cast<script>(i)).take_payload(),
                                 [this, i](resp3::value& reply, std::string& diagnostic) {
                                   evicted_[i] = false;
                                   return sha_of(reply, sha_[i], diagnostic);
                                 }});
  }
}

bool script_registry::not_run(const resp3::value& answer) noexcept { return is_noscript(answer); }

void script_registry::load(script s, std::string_view route, clock_type::time_point deadline,
                           reply_handler then) {
  request_options opts;
  opts.deadline = deadline;
  session_.exec(load_command(s, route), opts,
                [this, s, h = std::move(then)](std::error_code ec, resp3::value&& reply) mutable {
                  if (ec) return std::move(h)(ec, resp3::value{});
                  const auto i = static_cast<std::size_t>(s);
                  std::string diagnostic;
                  if (auto e = sha_of(reply, sha_[i], diagnostic)) {
                    return std::move(h)(e, resp3::error_reply(std::move(diagnostic)));
                  }
                  evicted_[i] = false;
                  std::move(h)(std::error_code{}, resp3::value{});
                });
}

void script_registry::load_then_call_again(script s, std::string_view route,
                                           clock_type::time_point deadline, reply_handler handler) {
  load(s, route, deadline,
       [h = std::move(handler)](std::error_code ec, resp3::value&& failure) mutable {
         if (ec) return std::move(h)(ec, std::move(failure));
         std::move(h)(make_error_code(errc::server_error),
                      resp3::error_reply("NOSCRIPT not loaded before this call; it is now"));
       });
}

bool script_registry::synced(script s) const noexcept {
  return !wait_command_.empty() && script_table[static_cast<std::size_t>(s)].changes_lock;
}

command script_registry::call_of(script s, std::span<const std::string_view> keys,
                                 std::span<const std::string_view> args) const {
  command c = command::script(script_table[static_cast<std::size_t>(s)].kind,
                              sha_[static_cast<std::size_t>(s)], keys, args);
  if (synced(s)) c.then(wait_command_);  // one request: both run on one connection, in order
  return c;
}

script_registry::settled script_registry::settle(bool with_wait, bool may_reload,
                                                 std::error_code& ec, resp3::value& answer) const {
  // A router's error (cluster_down, too_many_redirects) carries Redis's text as a value.
  if (ec) return settled::deliver;
  bool acknowledged = true;
  if (with_wait) {
    if (answer.elements.size() != 2) {
      ec = make_error_code(errc::protocol_error);
      answer = resp3::value{};
      return settled::deliver;
    }
    // A WAIT refused (an ACL user without +wait) acknowledges nothing either.
    const auto& acks = answer.elements[1];
    acknowledged = acks.type == resp3::type::number && acks.integer >= replicas_;
    resp3::value reply = std::move(answer.elements[0]);
    answer = std::move(reply);
  }
  if (may_reload && is_noscript(answer)) return settled::reload;
  if (answer.is_error()) {
    ec = make_error_code(errc_of_reply(answer.str));
  } else if (!acknowledged) {
    ec = make_error_code(errc::replicas_not_synced);
  }
  return settled::deliver;
}

void script_registry::reload_and_send(script s, std::span<const std::string_view> keys,
                                      std::span<const std::string_view> args, request_options opts,
                                      reply_handler handler) {
  const std::string_view key = keys.empty() ? std::string_view{} : keys.front();
  load(s, key, opts.deadline,
       [this, s, keys, args, opts, h = std::move(handler)](std::error_code ec,
                                                           resp3::value&& failure) mutable {
         if (ec) return std::move(h)(ec, std::move(failure));
         send(s, keys, args, opts, std::move(h), false);
       });
}

}  // namespace rlock::detail

namespace rlock::detail {

// --- batches ------------------------------------------------------------------------------------

void script_registry::add_to_batch(script s, std::span<const std::string_view> keys,
                                   std::span<const std::string_view> args, request_options opts,
                                   reply_handler handler, bool once) {
  const std::uint16_t group = keys.empty() ? 0 : group_of(keys.front());
  auto& batches = pending_->batches;
  auto it = std::find_if(batches.begin(), batches.end(), [&](const auto& b) {
    return b->which == s && b->group == group && b->once == once;
  });
  if (it == batches.end()) {
    auto b = std::make_shared<batch>();
    b->which = s;
    b->group = group;
    b->once = once;
    b->calls.reserve(16);
    batches.push_back(std::move(b));
    it = std::prev(batches.end());
    if (batches.size() == 1) {
      // After the handlers already queued: the operations started with this one add theirs.
      boost::asio::post(executor_, [this, alive = std::weak_ptr<pending_batches>(pending_)] {
        if (!alive.expired()) flush_batches();
      });
    }
  }
  (*it)->arguments.add(keys, args);
  (*it)->calls.push_back({opts, std::move(handler)});
}

void script_registry::flush_batches() {
  auto batches = std::move(pending_->batches);
  pending_->batches.clear();
  for (auto& b : batches) send_batch(std::move(b));
}

void script_registry::send_batch(std::shared_ptr<batch> b) {
  if (b->calls.size() > 1) return send_batch_script(std::move(b));
  // Alone: its own script call. The batch keeps the bytes its views read until the answer.
  b->keys = b->arguments.keys();
  b->args = b->arguments.call_args();
  auto& c = b->calls.front();
  auto h = [b, h = std::move(c.handler)](std::error_code ec, resp3::value&& answer) mutable {
    std::move(h)(ec, std::move(answer));
  };
  if (b->once) {
    async_run_once(b->which, b->keys, b->args, c.opts, std::move(h));
  } else {
    async_run(b->which, b->keys, b->args, c.opts, std::move(h));
  }
}

void script_registry::send_batch_script(std::shared_ptr<batch> b) {
  const auto i = static_cast<std::size_t>(b->which);
  auto deadline = clock_type::time_point::max();
  bool hooks = true;
  for (const auto& c : b->calls) {
    deadline = std::min(deadline, c.opts.deadline);
    hooks = hooks && c.opts.on_deadline != nullptr;
  }
  if (b->keys.empty()) {
    b->keys = b->arguments.keys();
    b->args = b->arguments.args();
  }
  const std::string_view route = b->keys.empty() ? std::string_view{} : b->keys.front();
  if (batch_sha_[i].empty() || batch_evicted_[i]) {
    // Loaded on first use (the handshake loads only the scripts themselves), then sent.
    request_options o;
    o.deadline = deadline;
    session_.exec(
        command::about(command_kind::load, route, "SCRIPT", {"LOAD", batch_source(b->which)}), o,
        [this, b, i](std::error_code ec, resp3::value&& reply) mutable {
          std::string diagnostic;
          if (!ec) ec = sha_of(reply, batch_sha_[i], diagnostic);
          if (ec) {
            auto failure =
                diagnostic.empty() ? resp3::value{} : resp3::error_reply(std::move(diagnostic));
            return deliver_batch(*b, ec, std::move(failure));
          }
          batch_evicted_[i] = false;
          send_batch_script(std::move(b));
        });
    return;
  }
  command c = command::script(script_table[i].kind, batch_sha_[i], b->keys, b->args);
  const bool with_wait = synced(b->which);
  if (with_wait) c.then(wait_command_);
  request_options o = c.options(deadline);
  o.written_at = &b->written;
  if (hooks) {
    o.on_deadline = &script_registry::on_batch_deadline;
    o.context = b.get();
  }
  session_.exec(std::move(c), o,
                [this, b, i, with_wait](std::error_code ec, resp3::value&& answer) mutable {
                  // A NOSCRIPT answer: nothing ran, and the batch keeps its bytes, so it is
                  // sent again after a load on this node, once, attempts included (a cluster's
                  // other nodes have not got a batch script the first time it reaches them).
                  if (settle(with_wait, !b->reloaded, ec, answer) == settled::reload) {
                    b->reloaded = true;
                    batch_evicted_[i] = true;
                    return send_batch_script(std::move(b));
                  }
                  if (not_run(answer)) batch_evicted_[i] = true;
                  deliver_batch(*b, ec, std::move(answer));
                });
}

void script_registry::deliver_batch(batch& b, std::error_code ec, resp3::value&& answer) {
  // The script ran (answered, or answered with too few replicas' acknowledgements): each call
  // gets its own reply. Otherwise each gets the batch's failure.
  const bool ran = (!ec || ec == errc::replicas_not_synced) && !answer.is_error();
  std::vector<batch_reply> replies;
  if (ran) replies = split_batch_reply(std::move(answer), b.calls.size());
  for (std::size_t k = 0; k < b.calls.size(); ++k) {
    auto& c = b.calls[k];
    if (c.opts.written_at != nullptr) *c.opts.written_at = b.written;
    auto h = std::move(c.handler);
    if (ran) {
      auto& r = replies[k];
      std::move(h)(r.ec ? r.ec : ec, std::move(r.value));
    } else {
      std::move(h)(ec, resp3::value(answer));
    }
  }
}

void script_registry::on_batch_deadline(void* context) {
  auto* b = static_cast<batch*>(context);
  for (const auto& c : b->calls) c.opts.on_deadline(c.opts.context);
}

}  // namespace rlock::detail
