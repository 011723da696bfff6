#include "rlock/blocking.hpp"

#include "client_impl.hpp"
#include "lock/lock_state.hpp"
#include "rlock/error.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>

namespace rlock::blocking {

namespace asio = boost::asio;
using std::chrono::milliseconds;

namespace detail {

/// The io thread and the asynchronous client it runs. Shared with the locks so that a lock
/// handle never outlives the machinery it calls.
struct client_state {
  explicit client_state(config cfg)
      : work(asio::make_work_guard(io)), async(io.get_executor(), std::move(cfg)) {
    thread = std::thread([this] { io.run(); });
  }

  ~client_state() {
    if (thread.joinable()) {
      // Close on the io thread, where the client's state lives, then let run() return.
      asio::co_spawn(async.get_executor(), async.close(), asio::use_future).wait();
      work.reset();
      io.stop();
      thread.join();
    }
  }

  /// Starts an operation on the io thread through `start(handler)` and waits for its
  /// completion (std::exception_ptr[, T]); rethrows its exception. A mutex and condition
  /// variable on the caller's stack, not a std::future: no shared state to allocate.
  template <typename T, typename Start>
  T wait_for(Start start) {
    if (std::this_thread::get_id() == thread.get_id()) {
      throw_error(errc::would_deadlock, "blocking rlock call from the client's own io thread");
    }
    struct outcome {
      std::mutex m;
      std::condition_variable cv;
      bool done = false;
      std::exception_ptr error;
      std::optional<std::conditional_t<std::is_void_v<T>, char, T>> value;
    } out;
    start([&out](std::exception_ptr e, auto... v) {
      std::lock_guard guard(out.m);
      out.error = std::move(e);
      if constexpr (sizeof...(v) > 0 && !std::is_void_v<T>) out.value.emplace(std::move(v)...);
      out.done = true;
      out.cv.notify_one();
    });
    std::unique_lock guard(out.m);
    out.cv.wait(guard, [&out] { return out.done; });
    if (out.error) std::rethrow_exception(out.error);
    if constexpr (!std::is_void_v<T>) return std::move(*out.value);
  }

  /// Runs the coroutine `op` on the io thread and waits for it.
  template <typename T>
  T run(asio::awaitable<T> op) {
    return wait_for<T>([&](auto finish) {
      asio::co_spawn(async.get_executor(), std::move(op), std::move(finish));
    });
  }

  /// The hot operations start the callback operations directly, with no coroutine at all.
  template <typename T>
  T acquire(std::shared_ptr<rlock::detail::lock_state> s, std::optional<milliseconds> wait,
            std::optional<milliseconds> lease) {
    return wait_for<T>([&](auto finish) {
      rlock::detail::async_acquire(std::move(s), wait, lease, std::move(finish));
    });
  }
  void release(std::shared_ptr<rlock::detail::lock_state> s) {
    wait_for<void>(
        [&](auto finish) { rlock::detail::async_release(std::move(s), std::move(finish)); });
  }

  /// One owner id per thread, from the same counter as get_lock(name): like Redisson's
  /// thread id, but unique in the process even when the OS reuses thread ids.
  static std::uint64_t thread_owner() {
    thread_local const std::uint64_t id = rlock::detail::next_owner_id();
    return id;
  }

  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> work;
  rlock::client async;
  std::thread thread;
};

}  // namespace detail

client::client(config cfg) : state_(std::make_shared<detail::client_state>(std::move(cfg))) {
  state_->run(state_->async.connect());
}

client::~client() = default;

reentrant_lock client::get_lock(std::string_view name) {
  // Validate now, in the caller's thread: a bad name is a programming error to report early.
  (void)state_->async.get_lock(name, detail::client_state::thread_owner());
  return reentrant_lock(state_, std::string(name));
}

rlock::client& client::async_client() noexcept { return state_->async; }

reentrant_lock::reentrant_lock(std::shared_ptr<detail::client_state> state, std::string name)
    : state_(std::move(state)), name_(std::move(name)) {}

rlock::reentrant_lock reentrant_lock::for_this_thread() const {
  return state_->async.get_lock(name_, detail::client_state::thread_owner());
}

std::shared_ptr<rlock::detail::lock_state> reentrant_lock::own_state() const {
  return rlock::detail::state_of(for_this_thread());
}

void reentrant_lock::lock() { state_->acquire<void>(own_state(), std::nullopt, std::nullopt); }

void reentrant_lock::lock(milliseconds lease) {
  state_->acquire<void>(own_state(), std::nullopt, lease);
}

bool reentrant_lock::try_lock() {
  return state_->acquire<bool>(own_state(), milliseconds::zero(), std::nullopt);
}

bool reentrant_lock::try_lock(milliseconds wait, milliseconds lease) {
  return state_->acquire<bool>(own_state(), wait, lease);
}

bool reentrant_lock::try_lock_wait(milliseconds wait) {
  // A deadline already past means one attempt, as for std::timed_mutex.
  return state_->acquire<bool>(own_state(), std::max(wait, milliseconds::zero()), std::nullopt);
}

void reentrant_lock::unlock() { state_->release(own_state()); }

bool reentrant_lock::force_unlock() { return state_->run(for_this_thread().force_unlock()); }

bool reentrant_lock::is_locked() { return state_->run(for_this_thread().is_locked()); }

bool reentrant_lock::is_held() { return state_->run(for_this_thread().is_held()); }

std::int64_t reentrant_lock::hold_count() { return state_->run(for_this_thread().hold_count()); }

milliseconds reentrant_lock::remaining_ttl() {
  return state_->run(for_this_thread().remaining_ttl());
}

}  // namespace rlock::blocking
