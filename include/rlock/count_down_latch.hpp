#pragma once

#include "rlock/blocking.hpp"
#include "rlock/client.hpp"
#include "rlock/detail/completion.hpp"
#include "rlock/export.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace rlock {

/// A Redisson-compatible count-down latch (Redisson's RCountDownLatch): a count that processes
/// set once, count down, and wait to reach zero. Java and C++ processes share it.
///
/// **Layout.** The count is the string key `<key>` (absent: 0); the channel
/// `redisson_countdownlatch__channel__{<key>}` hears `0` when a count-down reaches zero and `1`
/// when a count is set or the latch is deleted, exactly as Redisson's. A waiter is woken by that
/// message, never by polling: it looks at the count once when it starts (after subscribing), once
/// per message, and, in case a message was lost with a connection, once more when its
/// subscription is confirmed again and at least every config::watchdog_timeout.
///
/// **Faults.** try_set_count, count_down and remove are latched as an unlock is: a retry after a
/// lost answer is answered from the first run, so a count-down is never counted twice (Redisson
/// does not retry countDown at all). The waits are bounded by the caller's wait and cancellable
/// (terminal, partial, total: operation_aborted, nothing left subscribed). A key that holds
/// something other than a count is an error with Redis's words (server_error), never a hang.
///
/// Forms: awaitable (a failure is thrown as boost::system::system_error with Redis's words) and
/// async_* with any completion token and signature `void(error_code[, T])`. A handle: copies
/// name the same latch. Made from a client; blocking::count_down_latch is the same for threads.
class RLOCK_EXPORT count_down_latch {
 public:
  /// Waits, in whole milliseconds.
  using milliseconds = std::chrono::milliseconds;
  /// The client's executor type: Asio's type-erased I/O executor.
  using executor_type = boost::asio::any_io_executor;

  /// The latch `name` (config::key_prefix is prepended) on `c`. Makes no request.
  count_down_latch(client& c, std::string_view name);

  /// Redisson's trySetCount: sets the count if the latch has none (it is open); false if it has
  /// one already. `count` at most 2^63 - 1 (errc::invalid_argument otherwise).
  boost::asio::awaitable<bool> try_set_count(std::uint64_t count);
  /// Redisson's countDown: one less; at zero the key goes and every waiter (of any process) is
  /// woken. On an open latch it changes nothing.
  boost::asio::awaitable<void> count_down();
  /// The count now (0: open).
  boost::asio::awaitable<std::int64_t> count();
  /// Waits until the count is zero. No bound but the caller's cancellation.
  boost::asio::awaitable<void> wait();
  /// Waits until the count is zero, at most `wait` (0: one look); whether it is.
  boost::asio::awaitable<bool> try_wait(milliseconds wait);
  /// Redisson's delete: removes the count (the latch opens); whether there was one.
  boost::asio::awaitable<bool> remove();

  /// try_set_count() with a completion token; completes with `void(error_code, bool)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_set_count(std::uint64_t count, CompletionToken&& token = {}) {
    return detail::initiate<bool>(std::forward<CompletionToken>(token), *this,
                                  [count](const count_down_latch& l, detail::handler<bool> h) {
                                    start_try_set(l, count, std::move(h));
                                  });
  }
  /// count_down() with a completion token; completes with `void(error_code)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_count_down(CompletionToken&& token = {}) {
    return detail::initiate<>(
        std::forward<CompletionToken>(token), *this,
        [](const count_down_latch& l, detail::handler<> h) { start_count_down(l, std::move(h)); });
  }
  /// count() with a completion token; completes with `void(error_code, std::int64_t)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_count(CompletionToken&& token = {}) {
    return detail::initiate<std::int64_t>(
        std::forward<CompletionToken>(token), *this,
        [](const count_down_latch& l, detail::handler<std::int64_t> h) {
          start_count(l, std::move(h));
        });
  }
  /// wait() with a completion token; completes with `void(error_code)` once the count is zero.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_wait(CompletionToken&& token = {}) {
    return detail::initiate<>(
        std::forward<CompletionToken>(token), *this,
        [](const count_down_latch& l, detail::handler<> h) { start_wait(l, std::move(h)); });
  }
  /// try_wait() with a completion token; completes with `void(error_code, bool)`: whether the
  /// count reached zero within `wait`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_try_wait(milliseconds wait, CompletionToken&& token = {}) {
    return detail::initiate<bool>(std::forward<CompletionToken>(token), *this,
                                  [wait](const count_down_latch& l, detail::handler<bool> h) {
                                    start_try_wait(l, wait, std::move(h));
                                  });
  }
  /// remove() with a completion token; completes with `void(error_code, bool)`.
  template <detail::completion_token CompletionToken = default_completion_token>
  auto async_remove(CompletionToken&& token = {}) {
    return detail::initiate<bool>(
        std::forward<CompletionToken>(token), *this,
        [](const count_down_latch& l, detail::handler<bool> h) { start_remove(l, std::move(h)); });
  }

  /// The latch's name (without the key prefix).
  std::string_view name() const noexcept;
  /// Its Redis key: key prefix + name.
  std::string_view key() const noexcept;
  /// Its channel: `redisson_countdownlatch__channel__{<key>}`.
  std::string channel() const;
  /// The client's executor, where the latch's operations run.
  executor_type get_executor() const noexcept;
  /// The words of the latest failed operation of this latch's handles (the async_* forms
  /// complete with an error_code only). Empty if none failed. May be called from any thread.
  std::string last_error() const;

 private:
  static void start_try_set(const count_down_latch& l, std::uint64_t count,
                            detail::handler<bool> h);
  static void start_count_down(const count_down_latch& l, detail::handler<> h);
  static void start_count(const count_down_latch& l, detail::handler<std::int64_t> h);
  static void start_wait(const count_down_latch& l, detail::handler<> h);
  static void start_try_wait(const count_down_latch& l, milliseconds wait, detail::handler<bool> h);
  static void start_remove(const count_down_latch& l, detail::handler<bool> h);

  std::shared_ptr<detail::lock_state> state_;  // names the latch; holds nothing
};

namespace blocking {

/// rlock::count_down_latch for threads, in std::latch's shape: count_down(), try_wait() (a
/// look, no wait), wait(), arrive_and_wait(); plus Redisson's try_set_count(), count(),
/// remove() and a bounded try_wait_for(). Failures throw boost::system::system_error.
class count_down_latch {
 public:
  /// The latch `name` on `c`'s asynchronous client. Makes no request.
  count_down_latch(client& c, std::string_view name)
      : client_(&c), latch_(c.async_client(), name) {}

  /// Redisson's trySetCount: sets the count if the latch has none; false if it has one already.
  bool try_set_count(std::uint64_t count) { return client_->run(latch_.try_set_count(count)); }
  /// Redisson's countDown: one less; at zero every waiter is woken.
  void count_down() { client_->run(latch_.count_down()); }
  /// The count now (0: open).
  std::int64_t count() { return client_->run(latch_.count()); }
  /// Whether the count is zero now (std::latch::try_wait: it does not wait).
  bool try_wait() { return client_->run(latch_.try_wait(std::chrono::milliseconds(0))); }
  /// Waits until the count is zero, as long as it takes.
  void wait() { client_->run(latch_.wait()); }
  /// Waits until the count is zero, at most `wait` (rounded up to whole milliseconds); whether
  /// it is.
  template <typename Rep, typename Period>
  bool try_wait_for(const std::chrono::duration<Rep, Period>& wait) {
    const auto ms =
        std::max(std::chrono::ceil<std::chrono::milliseconds>(wait), std::chrono::milliseconds(0));
    return client_->run(latch_.try_wait(ms));
  }
  /// try_wait_for() the time from now to `deadline` (read on `Clock`).
  template <typename Clock, typename Duration>
  bool try_wait_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return try_wait_for(deadline - Clock::now());
  }
  /// count_down(), then wait().
  void arrive_and_wait() {
    count_down();
    wait();
  }
  /// Redisson's delete: removes the count (the latch opens); whether there was one.
  bool remove() { return client_->run(latch_.remove()); }
  /// The asynchronous latch underneath.
  rlock::count_down_latch& async_latch() noexcept { return latch_; }

 private:
  client* client_;
  rlock::count_down_latch latch_;
};

}  // namespace blocking

}  // namespace rlock
