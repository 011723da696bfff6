#include "rlock/blocking.hpp"

#include "engine/owner_table.hpp"
#include "rlock/error.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>

namespace rlock::blocking {

namespace asio = boost::asio;
using std::chrono::milliseconds;

namespace detail {

/// The io_context, the asynchronous client on it, and who runs it. Shared with the locks so that a
/// lock handle never outlives the machinery it calls.
///
/// **Who drives the io_context.** A caller blocked in an operation runs the io_context itself
/// until its operation completes: its command is sent from its own thread and the reply wakes
/// that thread directly, as in a coroutine, instead of two thread switches per call through an
/// io thread. At most one thread drives at a time (`driver_busy`); other callers' operations are
/// run by the current driver and their threads sleep until their completion or until the driver
/// leaves, when one of them takes over. The background thread drives only once no caller has
/// been inside a call for `handover_grace`, so that watchdog renewals and unlock messages are
/// handled between calls; lock/unlock loops never wait for it, and a caller that finds it
/// driving interrupts it.
struct client_state {
  static constexpr std::chrono::milliseconds handover_grace{2};

  explicit client_state(config cfg)
      : work(asio::make_work_guard(io)),
        async(io.get_executor(), std::move(cfg)),
        // While callers drive, the background thread looks every poll_interval for the moment
        // they all left. A third of the lease margin: between callers nobody runs the watchdog's
        // timer, and a holder must hear lost() before the margin runs out.
        poll_interval(std::clamp(async.lease_margin() / 3, std::chrono::milliseconds(1),
                                 std::chrono::milliseconds(20))) {
    background = std::thread([this] { run_background(); });
  }

  ~client_state() {
    if (!background.joinable()) return;
    try {
      run(async.close());
    } catch (...) {
      // Closing is best effort: the connection is going away either way.
    }
    {
      std::lock_guard guard(m);
      stopping = true;
    }
    background_wake.notify_all();
    work.reset();
    io.stop();
    background.join();
  }

  /// A caller asleep until its operation completes or the driver's seat is offered to it. Each
  /// has its own condition variable, so a completion wakes exactly its caller.
  struct sleeper {
    std::condition_variable cv;
    sleeper* next = nullptr;
  };

  /// Starts an operation through `start(handler)` and drives (or waits for the driver of) the
  /// io_context until its completion (`failure[, T]`, or a coroutine's `std::exception_ptr`)
  /// arrives; throws its failure as a boost::system::system_error.
  /// The outcome lives on the caller's stack: no shared state to allocate.
  template <typename T, typename Start>
  T wait_for(Start start) {
    return wait_for<T>(std::move(start), [](auto&&...) {});
  }

  /// How a call takes an exception thrown by a handler of the caller's (posted on
  /// async_client()'s executor) that a blocking call happened to run.
  enum class handler_errors {
    /// After its own operation completed (and was undone): lock, try_lock, queries.
    deliver,
    /// Never: unlock() runs in guards' destructors, where a throw terminates; the exception
    /// waits for the next other call.
    defer,
  };

  /// wait_for, and `undo(result)` if a handler run by this thread threw meanwhile: the caller
  /// then gets that exception instead of its result, so an acquisition must be given back.
  template <typename T, typename Start, typename Undo>
  T wait_for(Start start, Undo undo, handler_errors mode = handler_errors::deliver) {
    if (driving == this) {
      throw_error(errc::would_deadlock, "blocking rlock call from a handler of its own client");
    }
    // A handler the background thread ran threw: its exception goes to the next caller that
    // takes them, before anything is started.
    if (mode == handler_errors::deliver) {
      if (auto e = take_background_error()) std::rethrow_exception(e);
    }
    struct outcome {
      std::atomic<bool> done{false};
      rlock::detail::failure error;
      std::exception_ptr thrown;  // by a coroutine (connect)
      std::optional<std::conditional_t<std::is_void_v<T>, char, T>> value;
      std::thread::id caller = std::this_thread::get_id();
      sleeper bed;
    } out;
    {
      std::lock_guard guard(m);
      ++callers;
    }
    auto on_done = [this, &out](auto e, auto... v) {
      if constexpr (std::is_same_v<decltype(e), std::exception_ptr>) {
        out.thrown = std::move(e);
      } else {
        out.error = std::move(e);
      }
      if constexpr (sizeof...(v) > 0 && !std::is_void_v<T>) out.value.emplace(std::move(v)...);
      if (std::this_thread::get_id() == out.caller) {
        // The driver's own completion: it checks `done` after each handler.
        out.done.store(true, std::memory_order_release);
        return;
      }
      // Under the mutex: the caller cannot see `done` (and leave, taking `out` with it) before
      // the notification is made.
      std::lock_guard guard(m);
      out.done.store(true, std::memory_order_release);
      out.bed.cv.notify_one();
    };
    try {
      start(std::move(on_done));
    } catch (...) {
      // Nothing was started: this caller must not stay counted, or the background thread would
      // never drive again.
      std::lock_guard guard(m);
      --callers;
      throw;
    }
    std::exception_ptr handler_error;
    drive_until(out.done, out.bed, handler_error);
    if (handler_error && mode == handler_errors::defer) {
      std::lock_guard guard(m);
      if (!background_error) background_error = handler_error;
    } else if (handler_error) {
      if (!out.error && !out.thrown) {
        if constexpr (std::is_void_v<T>) {
          undo();
        } else {
          undo(*out.value);
        }
      }
      std::rethrow_exception(handler_error);
    }
    if (out.thrown) std::rethrow_exception(out.thrown);
    if (out.error) out.error.raise();
    if constexpr (!std::is_void_v<T>) return std::move(*out.value);
  }

  std::exception_ptr take_background_error() {
    std::lock_guard guard(m);
    return std::exchange(background_error, nullptr);
  }

  void drive_until(const std::atomic<bool>& done, sleeper& bed, std::exception_ptr& handler_error) {
    std::unique_lock lock(m);
    while (!done.load(std::memory_order_acquire)) {
      if (!driver_busy) {
        driver_busy = true;
        lock.unlock();
        driving = this;
        while (!done.load(std::memory_order_acquire)) {
          try {
            io.run_one();
          } catch (...) {
            // A throwing handler (user code on async_client()'s executor) must not unwind this
            // stack while our own operation still points into it: the caller gets the
            // exception once that operation is complete (see wait_for).
            if (!handler_error) handler_error = std::current_exception();
          }
        }
        driving = nullptr;
        lock.lock();
        release_driver();
        break;
      }
      // The background thread leaves at its next handler; our start (posted) is one.
      if (background_driving) asio::post(io, [] {});
      bed.next = sleepers;
      sleepers = &bed;
      bed.cv.wait(lock);
      unlink(bed);
    }
    // Offered the seat just as our operation completed: pass the offer on.
    if (!driver_busy && sleepers != nullptr) sleepers->cv.notify_one();
    --callers;
    last_exit = std::chrono::steady_clock::now();
  }

  /// Frees the driver's seat and offers it to one sleeping caller (with the mutex held).
  void release_driver() {
    driver_busy = background_driving = false;
    if (sleepers != nullptr) sleepers->cv.notify_one();
  }

  void unlink(sleeper& bed) {
    for (sleeper** p = &sleepers; *p != nullptr; p = &(*p)->next) {
      if (*p == &bed) {
        *p = bed.next;
        break;
      }
    }
    bed.next = nullptr;
  }

  void run_background() {
    std::unique_lock lock(m);
    while (!stopping) {
      // Polled rather than signalled by every leaving caller: a wake-up per call would put a
      // thread switch back on the path this design takes them off.
      if (callers > 0 || driver_busy) {
        background_wake.wait_for(lock, poll_interval);
        continue;
      }
      if (std::chrono::steady_clock::now() - last_exit < handover_grace) {
        background_wake.wait_until(lock, last_exit + handover_grace);
        continue;
      }
      driver_busy = background_driving = true;
      lock.unlock();
      driving = this;
      while (callers_pending() == 0 && !io.stopped()) {
        try {
          io.run_one();
        } catch (...) {
          std::lock_guard guard(m);
          if (!background_error) background_error = std::current_exception();
        }
      }
      driving = nullptr;
      lock.lock();
      release_driver();
    }
  }

  std::size_t callers_pending() {
    std::lock_guard guard(m);
    return callers;
  }

  /// The client_state whose io_context this thread is driving, if any.
  static thread_local const client_state* driving;

  /// Runs the coroutine `op` on the client's executor and waits for it.
  template <typename T>
  T run(asio::awaitable<T> op) {
    return wait_for<T>([&](auto finish) {
      asio::co_spawn(async.get_executor(), std::move(op), std::move(finish));
    });
  }

  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> work;
  rlock::client async;
  const std::chrono::milliseconds poll_interval;

  std::mutex m;
  std::condition_variable background_wake;
  std::size_t callers = 0;      // threads inside a call
  sleeper* sleepers = nullptr;  // of those, the ones asleep
  bool driver_busy = false;
  bool background_driving = false;
  bool stopping = false;
  std::exception_ptr background_error;  // thrown by a handler the background thread ran
  std::chrono::steady_clock::time_point last_exit{};
  std::thread background;
};

thread_local const client_state* client_state::driving = nullptr;

void wait(client_state& s, function_ref<void(rlock::detail::handler<>)> start,
          function_ref<void()> undo, bool deferred_handler_errors) {
  s.wait_for<void>([&](auto finish) { start(rlock::detail::handler<>(std::move(finish))); },
                   [&] { undo(); },
                   deferred_handler_errors ? client_state::handler_errors::defer
                                           : client_state::handler_errors::deliver);
}

rlock::client& async_client_of(client_state& s) noexcept { return s.async; }

std::uint64_t thread_owner() noexcept {
  // From the same counter as get_lock(name).
  thread_local const std::uint64_t id = rlock::detail::next_owner_id();
  return id;
}

}  // namespace detail

client::client(config cfg) : state_(std::make_shared<detail::client_state>(std::move(cfg))) {
  state_->run(state_->async.connect());
}

client::~client() = default;

basic_lock<rlock::reentrant_lock> client::get_lock(std::string_view name) {
  return get<rlock::reentrant_lock>(name);
}

basic_lock<rlock::fenced_lock> client::get_fenced_lock(std::string_view name) {
  return get<rlock::fenced_lock>(name);
}

rlock::client& client::async_client() noexcept { return state_->async; }

}  // namespace rlock::blocking
