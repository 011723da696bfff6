#pragma once

#include <chrono>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace rlock::test {

/// For fixtures that wait for a topology (Sentinel, Cluster) to reach a state nothing announces:
/// polls `check` every 50 ms until it returns an empty string (an exception counts as its
/// message) or `limit` passes, then throws std::runtime_error "<who>: <what> within N s; last:
/// <what check said last>".
template <typename Check>
void settle(std::string_view who, std::string_view what, std::chrono::seconds limit, Check check) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::string last;
  for (int round = 0; round < 100'000; ++round) {
    try {
      last = check();
    } catch (const std::exception& e) {
      last = e.what();
    }
    if (last.empty()) return;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error(std::string(who) + ": " + std::string(what) + " within " +
                           std::to_string(limit.count()) + " s; last: " + last);
}

}  // namespace rlock::test
