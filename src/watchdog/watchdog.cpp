#include "watchdog/watchdog.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <string>
#include <utility>

namespace rlock::detail {

namespace asio = boost::asio;

watchdog::watchdog(asio::any_io_executor ex, script_registry& scripts,
                   std::chrono::milliseconds lease_ms)
    : executor_(std::move(ex)), scripts_(scripts), lease_(lease_ms), timer_(executor_) {}

void watchdog::add(lease& l, std::shared_ptr<void> keep_alive) {
  if (l.renewing()) return;
  l.keep_alive_ = std::move(keep_alive);
  l.generation_ = next_generation_++;
  l.confirmed_ = clock::now();
  l.prev_ = tail_;
  l.next_ = nullptr;
  (tail_ != nullptr ? tail_->next_ : head_) = &l;
  tail_ = &l;
  ++size_;
  if (!running_) {
    running_ = true;
    asio::co_spawn(
        executor_, [this, keep = owner_.lock()]() { return run(); }, asio::detached);
  }
}

void watchdog::remove(lease& l) noexcept {
  if (!l.renewing()) return;
  (l.prev_ != nullptr ? l.prev_->next_ : head_) = l.next_;
  (l.next_ != nullptr ? l.next_->prev_ : tail_) = l.prev_;
  l.prev_ = l.next_ = nullptr;
  --size_;
  // Last: this may destroy the owner, and with it `l`.
  auto keep = std::move(l.keep_alive_);
}

void watchdog::stop() noexcept {
  while (head_ != nullptr) {
    lease& l = *head_;
    auto keep = l.keep_alive_;
    remove(l);
    l.on_watchdog_stopped();
  }
  timer_.cancel();
}

void watchdog::report_lost(lease& l) {
  auto keep = l.keep_alive_;  // the owner must survive its own notification
  remove(l);
  l.on_lease_lost();
}

asio::awaitable<void> watchdog::run() {
  while (head_ != nullptr) {
    timer_.expires_after(lease_ / 3);
    co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    if (head_ == nullptr) break;
    co_await renew_round();
  }
  running_ = false;
}

asio::awaitable<void> watchdog::renew_batch(std::vector<snapshot> batch, clock::time_point sent) {
  const std::string lease_ms = std::to_string(lease_.count());
  std::vector<std::string_view> keys;
  std::vector<std::string_view> args{lease_ms};
  keys.reserve(batch.size());
  args.reserve(1 + batch.size());
  // The views point into the owners, which `batch` keeps alive until the reply is in.
  for (const auto& s : batch) {
    keys.push_back(s.l->lease_key());
    args.push_back(s.l->lease_field());
  }
  renew_calls_.fetch_add(1, std::memory_order_relaxed);
  try {
    auto reply = co_await scripts_.run(script::renew, keys, args);
    for (std::size_t i = 0; i < batch.size() && i < reply.elements.size(); ++i) {
      lease& l = *batch[i].l;
      // Unlocked (or unlocked and locked again) while the call was in flight: not ours to judge.
      if (!l.renewing() || l.generation_ != batch[i].generation) continue;
      if (reply.elements[i].integer == 1) {
        l.confirmed_ = sent;
      } else {
        report_lost(l);
      }
    }
  } catch (const std::system_error&) {
    // Connection trouble or a timeout: retried at the next tick; the expiry check in
    // renew_round still tells holders whose lease ran out meanwhile.
  }
}

asio::awaitable<void> watchdog::renew_round() {
  const auto sent = clock::now();
  // Snapshot first: leases come and go while the batches are in flight.
  std::vector<std::vector<snapshot>> batches;
  for (lease* l = head_; l != nullptr; l = l->next_) {
    if (batches.empty() || batches.back().size() == batch_size) {
      batches.emplace_back();
      batches.back().reserve(batch_size);
    }
    batches.back().push_back({l->keep_alive_, l, l->generation_});
  }
  // All batches at once: they are pipelined on the connection, so a round costs about one round
  // trip however many locks are held (sequential batches made a 100 000-lock round take ~0.3 s).
  using op_type = decltype(asio::co_spawn(executor_, renew_batch({}, sent), asio::deferred));
  std::vector<op_type> ops;
  ops.reserve(batches.size());
  for (auto& batch : batches) {
    ops.push_back(asio::co_spawn(executor_, renew_batch(std::move(batch), sent), asio::deferred));
  }
  if (!ops.empty()) {
    (void)co_await asio::experimental::make_parallel_group(std::move(ops))
        .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
  }

  // A lease not confirmed for a whole lease period has expired on the server, whatever kept us
  // from renewing it: tell the holder rather than pretend.
  const auto now = clock::now();
  std::vector<std::shared_ptr<void>> keep;
  std::vector<lease*> expired;
  for (lease* l = head_; l != nullptr; l = l->next_) {
    if (l->confirmed_ + lease_ <= now) {
      keep.push_back(l->keep_alive_);
      expired.push_back(l);
    }
  }
  for (lease* l : expired) {
    if (l->renewing()) report_lost(*l);
  }
}

}  // namespace rlock::detail
