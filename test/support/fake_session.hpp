#pragma once

// A session without a server, for unit tests of the engine's I/O shells (sans-I/O testing, not a
// mock server): it records what the engine asks (requests, subscriptions) and the test answers
// each request as a server or a failing connection would, when it chooses.
#include "session/session.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlock::test {

class fake_session final : public detail::session {
 public:
  explicit fake_session(config c) : detail::session(std::move(c)) {}

  struct request {
    // Constructed with its handler: Boost 1.81's any_completion_handler move assignment recurses.
    request(detail::reply_handler h) : handler(std::move(h)) {}
    request(request&&) noexcept = default;

    detail::multiplexer::id_type id = 0;
    detail::command_kind kind{};
    std::string route;
    std::string payload;  // RESP: read with words()
    detail::request_options opts;
    detail::reply_handler handler;  // empty once answered
    bool withdrawable = false;      // still "queued": withdraw() fails it
    /// The request's words (`EVALSHA <sha> 1 key ...`), decoded from its RESP array.
    std::vector<std::string> words() const;
  };

  /// Every request made, in order (answered ones keep their record).
  std::vector<request> requests;
  /// Channels subscribed now (the engine's (un)subscribe calls), and ever.
  std::set<std::string> channels;
  std::vector<std::string> subscribe_calls;
  std::vector<std::string> unsubscribe_calls;
  /// Channels the "server" confirmed (subscribed() answers from it).
  std::set<std::string> confirmed;
  /// False: requests stay withdrawable (queued) until answered.
  bool written_at_once = true;

  /// Answers the handshake's steps as a server would (SCRIPT LOAD: a made-up SHA per script,
  /// which names the script in later requests: script_of).
  void complete_handshake();
  /// The script a request calls (EVALSHA of a SHA complete_handshake gave), if any.
  std::optional<std::size_t> script_of(const request& r) const;

  /// Requests not answered yet.
  std::vector<std::size_t> pending() const;
  /// Answers request `i` with `v`, or fails it with `ec` (its outcome unknown if it was written).
  void answer(std::size_t i, detail::resp3::value v);
  void fail(std::size_t i, std::error_code ec);
  /// Request `i`'s deadline passes while it is written and unanswered: its on_deadline hook
  /// runs (the request goes on waiting), or it fails with errc::timeout, as the multiplexer does.
  void pass_deadline(std::size_t i);

  // --- session ----------------------------------------------------------------------------------
  void set_listener(detail::connection::listener*) override {}
  void add_handshake_step(detail::handshake_step step) override {
    steps_.push_back(std::move(step));
  }
  void async_connect(detail::connection::connect_handler) override {}
  void close(std::error_code reason) override;
  detail::multiplexer::id_type exec(detail::command c, detail::request_options opts,
                                    detail::reply_handler handler) override;
  bool withdraw(std::string_view key, detail::multiplexer::id_type id,
                std::error_code reason) override;
  void subscribe(std::string_view, std::string_view channel) override {
    channels.emplace(channel);
    subscribe_calls.emplace_back(channel);
  }
  void unsubscribe(std::string_view, std::string_view channel) override {
    channels.erase(std::string(channel));
    confirmed.erase(std::string(channel));
    unsubscribe_calls.emplace_back(channel);
  }
  bool subscribed(std::string_view, std::string_view channel) const override {
    return confirmed.contains(std::string(channel));
  }
  connection_state state() const noexcept override { return state_; }
  std::string last_error() const override { return "fake session"; }
  detail::session_stats stats() const noexcept override { return {}; }
  std::size_t subscriptions() const noexcept override { return channels.size(); }
  std::size_t outstanding() const noexcept override { return pending().size(); }
  std::string node_address() const override { return "fake:0"; }
  std::string tracking_refusal() const override { return {}; }

 private:
  std::vector<detail::handshake_step> steps_;
  std::vector<std::string> shas_;
  connection_state state_ = connection_state::connected;
  detail::multiplexer::id_type next_id_ = 1;
};

}  // namespace rlock::test
