#pragma once

#include "rlock/detail/completion.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace rlock {

struct leader_info;

/// The `async_*` forms every election has (rlock::election, rlock::quorum_election, which derive
/// from it), each starting the election's own operation with any completion token: Asio's
/// callbacks, `use_awaitable`, `use_future`, `deferred`, `as_tuple(...)`.
template <typename Election>
class election_calls {
 public:
  /// campaign() with a completion token; `void(error_code, std::int64_t)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_campaign(std::string value, CompletionToken&& token = {}) {
    return detail::initiate<std::int64_t>(
        std::forward<CompletionToken>(token), self(),
        [value = std::move(value)](const Election& e, detail::handler<std::int64_t> h) mutable {
          Election::start_campaign(e, std::move(value), std::move(h));
        });
  }
  /// try_campaign() with a completion token; `void(error_code, std::optional<std::int64_t>)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_campaign(std::string value, std::chrono::milliseconds wait,
                          CompletionToken&& token = {}) {
    return detail::initiate<std::optional<std::int64_t>>(
        std::forward<CompletionToken>(token), self(),
        [value = std::move(value), wait](const Election& e,
                                         detail::handler<std::optional<std::int64_t>> h) mutable {
          Election::start_try_campaign(e, std::move(value), wait, std::move(h));
        });
  }
  /// proclaim() with a completion token; `void(error_code)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_proclaim(std::string value, CompletionToken&& token = {}) {
    return detail::initiate<>(
        std::forward<CompletionToken>(token), self(),
        [value = std::move(value)](const Election& e, detail::handler<> h) mutable {
          Election::start_proclaim(e, std::move(value), std::move(h));
        });
  }
  /// resign() with a completion token; `void(error_code)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_resign(CompletionToken&& token = {}) {
    return detail::initiate<>(
        std::forward<CompletionToken>(token), self(),
        [](const Election& e, detail::handler<> h) { Election::start_resign(e, std::move(h)); });
  }
  /// leader() with a completion token; `void(error_code, std::optional<leader_info>)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_leader(CompletionToken&& token = {}) {
    return detail::initiate<std::optional<leader_info>>(
        std::forward<CompletionToken>(token), self(),
        [](const Election& e, detail::handler<std::optional<leader_info>> h) {
          Election::start_leader(e, std::move(h));
        });
  }
  /// lost() with a completion token; `void(error_code)`: success when the lead was lost.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_lost(CompletionToken&& token = {}) {
    return detail::initiate<>(
        std::forward<CompletionToken>(token), self(),
        [](const Election& e, detail::handler<> h) { Election::start_lost(e, std::move(h)); });
  }

 private:
  const Election& self() const noexcept { return static_cast<const Election&>(*this); }
};

}  // namespace rlock
