#pragma once

// Waiters asleep until a deadline, ordered by it, so that one timer (armed for the earliest)
// serves every waiter of a client. Each waiter used to own a steady_timer and a pending wait:
// about 200 bytes per parked waiter, which bench S6 (100 000 waiters) counts. Sans-I/O: the hub
// arms its timer for next_deadline() and takes what is due when it fires.
#include <boost/intrusive/set.hpp>

#include <chrono>
#include <cstddef>

namespace rlock::detail {

class sleep_set {
 public:
  using clock = std::chrono::steady_clock;

  /// Lives in the sleeping object: sleeping allocates nothing. Unlinked on destruction is the
  /// owner's job (remove()).
  struct sleeper : boost::intrusive::set_base_hook<boost::intrusive::optimize_size<true>> {
    clock::time_point until{};
    bool asleep() const noexcept { return is_linked(); }
  };

  sleep_set() = default;
  sleep_set(const sleep_set&) = delete;
  sleep_set& operator=(const sleep_set&) = delete;
  ~sleep_set() { set_.clear(); }

  /// Puts `s` (not asleep) to sleep until `until`; equal deadlines wake in the order they slept.
  void add(sleeper& s, clock::time_point until) {
    s.until = until;
    set_.insert(s);
  }
  /// Wakes `s` early; nothing if it is not asleep.
  void remove(sleeper& s) noexcept {
    if (s.asleep()) set_.erase(set_.iterator_to(s));
  }
  /// The earliest deadline, or time_point::max() when nobody sleeps.
  clock::time_point next_deadline() const noexcept {
    return set_.empty() ? clock::time_point::max() : set_.begin()->until;
  }
  /// The earliest sleeper whose deadline is at or before `now`, taken out; null if none.
  sleeper* take_due(clock::time_point now) noexcept {
    if (set_.empty() || set_.begin()->until > now) return nullptr;
    sleeper& s = *set_.begin();
    set_.erase(set_.begin());
    return &s;
  }
  std::size_t size() const noexcept { return set_.size(); }
  bool empty() const noexcept { return set_.empty(); }

 private:
  struct by_deadline {
    bool operator()(const sleeper& a, const sleeper& b) const noexcept { return a.until < b.until; }
  };
  boost::intrusive::multiset<sleeper, boost::intrusive::compare<by_deadline>> set_;
};

}  // namespace rlock::detail
