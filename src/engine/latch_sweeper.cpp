#include "engine/latch_sweeper.hpp"

#include <algorithm>
#include <span>
#include <utility>

namespace rlock::detail {

void latch_sweeper::add(std::string_view key) {
  keys_.append(key);
  ends_.push_back(static_cast<std::uint32_t>(keys_.size()));
  if (ends_.size() >= max_batch) return sweep();
  if (armed_) return;
  armed_ = true;
  timer_.expires_after(max_delay);
  // Weak: the timer is cancelled when the client (which holds this object) is destroyed, and
  // its handler then must not touch it.
  timer_.async_wait([this, owner = owner_](boost::system::error_code ec) {
    const auto keep = owner.lock();
    if (!keep || ec == boost::asio::error::operation_aborted) return;
    armed_ = false;
    sweep();
  });
}

void latch_sweeper::sweep() {
  if (armed_) {
    armed_ = false;
    timer_.cancel();
  }
  if (ends_.empty()) return;
  // One DEL per key group: all of them on one server, one per hash slot on a cluster (a DEL
  // over keys of several slots is refused, CROSSSLOT).
  std::vector<std::pair<std::uint16_t, std::string_view>> grouped;
  grouped.reserve(ends_.size());
  bool mixed = false;  // one server: never, and nothing to sort
  std::uint32_t begin = 0;
  for (const auto end : ends_) {
    const std::string_view k(keys_.data() + begin, end - begin);
    begin = end;
    grouped.emplace_back(session_.group_of(k), k);
    mixed = mixed || grouped.back().first != grouped.front().first;
  }
  if (mixed) {
    std::stable_sort(grouped.begin(), grouped.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  request_options opts;
  opts.deadline = std::chrono::steady_clock::now() + timeout_;
  std::vector<std::string_view> keys;
  for (std::size_t i = 0; i < grouped.size();) {
    keys.clear();
    const std::uint16_t group = grouped[i].first;
    for (; i < grouped.size() && grouped[i].first == group; ++i) keys.push_back(grouped[i].second);
    ++in_flight_;
    // Weak: the answer may come while the client is being destroyed (the session fails what it
    // still holds), when this object is gone.
    session_.exec(command(command_kind::cleanup, "DEL", keys), opts,
                  [owner = owner_, this](std::error_code, resp3::value) {
                    if (const auto keep = owner.lock()) answered();
                  });
  }
  keys_.clear();
  ends_.clear();
}

void latch_sweeper::answered() {
  if (--in_flight_ != 0 || !drained_) return;
  auto f = std::exchange(drained_, {});
  f();
}

}  // namespace rlock::detail
