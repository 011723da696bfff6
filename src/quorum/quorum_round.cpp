#include "quorum/quorum_round.hpp"

#include <stdexcept>
#include <utility>

namespace rlock::detail {

quorum_round::quorum_round(std::vector<std::chrono::milliseconds> leases, drift_policy drift,
                           time_point sent, time_point bound)
    : leases_(std::move(leases)),
      drift_(drift),
      sent_(sent),
      bound_(bound),
      tally_(leases_.size()) {
  if (leases_.empty() || leases_.size() > 32) {
    throw std::invalid_argument("a quorum round needs 1 to 32 nodes");
  }
}

quorum_step quorum_round::start() {
  started_ = true;
  return {.what = quorum_step::kind::attempt, .nodes = all_nodes(leases_.size())};
}

node_set quorum_round::pending() const {
  node_set s = 0;
  for (std::size_t i = 0; i < tally_.nodes(); ++i) {
    if (tally_.at(i) == vote::pending) s |= node_bit(i);
  }
  return s;
}

quorum_round::time_point quorum_round::valid_until() const {
  std::vector<node_grant> grants;
  for (std::size_t i = 0; i < leases_.size(); ++i) {
    if ((granted_ & node_bit(i)) != 0) grants.push_back({sent_, leases_[i]});
  }
  return detail::valid_until(grants, tally_.quorum(), drift_);
}

quorum_step quorum_round::on_answer(std::size_t i, vote v, time_point now) {
  if (i >= tally_.nodes() || v == vote::pending) return {};
  if (over_ || losing_) {
    // Decided already: a late grant is the hold's (won) or is given back (lost).
    if (v != vote::granted) return {};
    if (won_) {
      granted_ |= node_bit(i);
      return {};
    }
    releasing_ |= node_bit(i);
    return {.what = quorum_step::kind::release, .nodes = node_bit(i)};
  }
  tally_.record(i, v);
  if (v == vote::granted) granted_ |= node_bit(i);
  return decide(now);
}

quorum_step quorum_round::on_bound(time_point now) {
  if (over_ || losing_ || !started_) return {};
  const node_set late = pending();
  for (std::size_t i = 0; i < tally_.nodes(); ++i) {
    if ((late & node_bit(i)) != 0) tally_.record(i, vote::failed);
  }
  auto step = decide(now);
  step.cancel |= late;
  return step;
}

quorum_step quorum_round::decide(time_point now) {
  if (tally_.reached()) {
    // A majority worth nothing by now (it took longer than its leases less the drift, or the
    // round's bound) is a loss: Redlock's "validity time <= 0".
    const auto until = valid_until();
    if (until <= now || now > bound_) return lose();
    won_ = true;
    over_ = true;
    return {.what = quorum_step::kind::complete, .won = true, .valid_until = until};
  }
  if (tally_.hopeless() || now > bound_) return lose();
  return {};
}

quorum_step quorum_round::lose() {
  losing_ = true;
  const node_set cancel = pending();
  if (granted_ == 0) {
    over_ = true;
    return {.what = quorum_step::kind::complete, .cancel = cancel};
  }
  releasing_ = granted_;
  granted_ = 0;
  return {.what = quorum_step::kind::release, .nodes = releasing_, .cancel = cancel};
}

quorum_step quorum_round::on_released(std::size_t i) {
  if (i >= tally_.nodes()) return {};
  releasing_ &= ~node_bit(i);
  if (losing_ && !over_ && releasing_ == 0) {
    over_ = true;
    return {.what = quorum_step::kind::complete};
  }
  return {};
}

}  // namespace rlock::detail
