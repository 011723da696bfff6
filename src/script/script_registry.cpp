#include "script/script_registry.hpp"

#include "resp3/request.hpp"
#include "rlock/error.hpp"
#include "session/redis_error.hpp"

#include <fmt/format.h>

#include <charconv>
#include <iterator>
#include <system_error>

namespace rlock::detail {

namespace {

bool is_noscript(const resp3::value& v) { return v.is_error() && v.str.starts_with("NOSCRIPT"); }

/// `SCRIPT LOAD source`, for the node of `route`.
command load_command(script s, std::string_view route = {}) {
  return command::about(command_kind::load, route, "SCRIPT", {"LOAD", script_source(s)});
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

script_registry::script_registry(session& s) : session_(s) {
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
