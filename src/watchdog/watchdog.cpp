#include "watchdog/watchdog.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <string_view>
#include <utility>
#include <vector>

namespace rlock::detail {

namespace asio = boost::asio;

watchdog::watchdog(asio::any_io_executor ex, script_registry& scripts,
                   std::chrono::milliseconds lease_ms)
    : executor_(std::move(ex)), scripts_(scripts), lease_(lease_ms), timer_(executor_) {}

watchdog::id watchdog::add(std::string key, std::string field, lost_handler on_lost) {
  const id lease_id = next_id_++;
  leases_.emplace(lease_id,
                  lease{std::move(key), std::move(field), std::move(on_lost), clock::now()});
  if (!running_) {
    running_ = true;
    asio::co_spawn(
        executor_, [this, keep = owner_.lock()]() { return run(); }, asio::detached);
  }
  return lease_id;
}

void watchdog::remove(id lease_id) { leases_.erase(lease_id); }

void watchdog::stop() {
  leases_.clear();
  timer_.cancel();
}

void watchdog::report_lost(id lease_id) {
  auto it = leases_.find(lease_id);
  if (it == leases_.end()) return;
  auto on_lost = std::move(it->second.on_lost);
  leases_.erase(it);
  if (on_lost) on_lost();
}

asio::awaitable<void> watchdog::run() {
  while (!leases_.empty()) {
    timer_.expires_after(lease_ / 3);
    co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    if (leases_.empty()) break;
    co_await renew_round();
  }
  running_ = false;
}

asio::awaitable<void> watchdog::renew_batch(std::vector<id> ids, clock::time_point sent) {
  // Copies, not views: leases may be removed while the call is in flight.
  std::vector<std::string> strings;
  strings.reserve(1 + 2 * ids.size());
  strings.push_back(std::to_string(lease_.count()));
  for (id lease_id : ids) {
    const lease& l = leases_.at(lease_id);
    strings.push_back(l.key);
    strings.push_back(l.field);
  }
  std::vector<std::string_view> keys;
  std::vector<std::string_view> args{strings[0]};
  for (std::size_t i = 0; i < ids.size(); ++i) {
    keys.push_back(strings[1 + 2 * i]);
    args.push_back(strings[2 + 2 * i]);
  }
  ++renew_calls_;
  try {
    auto reply = co_await scripts_.run(script::renew, keys, args);
    for (std::size_t i = 0; i < ids.size() && i < reply.elements.size(); ++i) {
      auto it = leases_.find(ids[i]);
      if (it == leases_.end()) continue;  // unlocked meanwhile
      if (reply.elements[i].integer == 1) {
        it->second.confirmed = sent;
      } else {
        report_lost(ids[i]);
      }
    }
  } catch (const std::system_error&) {
    // Connection trouble or a timeout: retried at the next tick; the expiry check in
    // renew_round still tells holders whose lease ran out meanwhile.
  }
}

asio::awaitable<void> watchdog::renew_round() {
  const auto sent = clock::now();
  std::vector<id> batch;
  for (auto it = leases_.begin(); it != leases_.end();) {
    batch.push_back(it->first);
    ++it;
    if (batch.size() == batch_size || it == leases_.end()) {
      // Ids are snapshotted per batch: leases come and go while a batch is in flight.
      const id next = it == leases_.end() ? 0 : it->first;
      co_await renew_batch(std::exchange(batch, {}), sent);
      it = next == 0 ? leases_.end() : leases_.lower_bound(next);
    }
  }

  // A lease not confirmed for a whole lease period has expired on the server, whatever kept us
  // from renewing it: tell the holder rather than pretend.
  const auto now = clock::now();
  std::vector<id> expired;
  for (auto& [lease_id, l] : leases_) {
    if (l.confirmed + lease_ <= now) expired.push_back(lease_id);
  }
  for (id lease_id : expired) report_lost(lease_id);
}

}  // namespace rlock::detail
