#include "lock/latch_sweeper.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <span>
#include <string_view>
#include <utility>

namespace rlock::detail {

void latch_sweeper::add(std::string key) {
  keys_.push_back(std::move(key));
  if (scheduled_) return;
  scheduled_ = true;
  // Posted: the unlocks completing in this turn join the same DEL, and the callers they resume
  // get their next commands written first.
  boost::asio::post(executor_, [this, keep = owner_.lock()] { sweep(); });
}

void latch_sweeper::sweep() {
  scheduled_ = false;
  if (keys_.empty()) return;
  // One DEL per key group: all of them on one server, one per hash slot on a cluster (a DEL
  // over keys of several slots is refused, CROSSSLOT).
  std::vector<std::pair<std::uint16_t, std::string_view>> grouped;
  grouped.reserve(keys_.size());
  bool mixed = false;  // one server: never, and nothing to sort
  for (const auto& k : keys_) {
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
}

void latch_sweeper::answered() {
  if (--in_flight_ != 0 || !drained_) return;
  auto f = std::exchange(drained_, {});
  f();
}

}  // namespace rlock::detail
