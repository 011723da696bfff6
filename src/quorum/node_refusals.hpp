#pragma once

// A node's answer that no retry changes: the server refused this client a right (an ACL key,
// command or channel), the credentials, or the request itself. A quorum lock whose nodes refuse
// it so widely that a majority cannot be had fails its acquisition at once with that error and
// the nodes' words, as a single lock fails on its one node, instead of waiting for a majority
// that cannot come. Sans I/O: the shell records each node's latest answer here.
#include "rlock/detail/failure.hpp"
#include "rlock/error.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace rlock::detail {

/// Whether `f` is a refusal no retry changes (see above).
inline bool is_refusal(const failure& f) noexcept {
  for (const errc e : {errc::permission_denied, errc::command_not_permitted,
                       errc::key_not_permitted, errc::auth_failed, errc::unsupported_server,
                       errc::reentry_refused, errc::upgrade_refused}) {
    if (f.code == e) return true;
  }
  return false;
}

class node_refusals {
 public:
  explicit node_refusals(std::size_t nodes) : latest_(nodes) {}

  /// Node `i` answered with `f` (no failure: it answered usefully, so it refuses nothing now).
  void on_answer(std::size_t i, const failure& f) {
    if (i >= latest_.size()) return;
    latest_[i] = is_refusal(f) ? f : failure();
  }
  /// When so many nodes refuse that fewer than `quorum` are left: the first refusal's code with
  /// every refusing node's words (`labels[i]` names node i); no failure otherwise.
  failure hopeless(std::size_t quorum, const std::vector<std::string>& labels,
                   const std::string& what) const {
    std::size_t refusing = 0;
    const failure* first = nullptr;
    std::string words;
    for (std::size_t i = 0; i < latest_.size(); ++i) {
      if (!latest_[i]) continue;
      ++refusing;
      if (first == nullptr) first = &latest_[i];
      words += (words.empty() ? " " : "; ") + (i < labels.size() ? labels[i] : std::string("?")) +
               ": " + std::string(latest_[i].text());
    }
    if (first == nullptr || latest_.size() - refusing >= quorum) return {};
    return failure(first->code, what + words);
  }

 private:
  std::vector<failure> latest_;
};

}  // namespace rlock::detail
