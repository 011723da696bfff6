#include "lock/latch_sweeper.hpp"

#include "resp3/request.hpp"

#include <boost/asio/post.hpp>

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
  // Standalone: one DEL for all. (Cluster will need one per hash slot.)
  std::vector<std::string_view> args{"DEL"};
  args.insert(args.end(), keys_.begin(), keys_.end());
  std::string command;
  resp3::append_command(command, std::span<const std::string_view>(args));
  request_options opts;
  opts.deadline = std::chrono::steady_clock::now() + timeout_;
  session_.exec(keys_.front(), std::move(command), opts, [](std::error_code, resp3::value) {});
  keys_.clear();
}

}  // namespace rlock::detail
