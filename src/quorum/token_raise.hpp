#pragma once

// The fencing token of a quorum hold: once a round is won, a proposal p is written on every
// node's counter by a script that writes only what is higher (raise_quorum_token); p is the
// hold's token when a majority wrote it. Why that is strictly greater than every earlier
// holder's token t', whatever the two majorities: t' was written on a majority before that hold
// ended, which was before this hold was won, so every node of that majority counts at least t'
// when this raise runs there; the two majorities share a node, where this raise found a count
// below p, so p > t'. A node that keeps its data never lowers its count, so this holds for any
// majority; a node restarted empty counts 0 and is raised again by the next hold. If a majority
// found p already reached (an earlier holder's raise went further than this one knew), the next
// proposal is the highest count seen plus one. Sans I/O: the shell sends the raises and feeds
// the answers in.
#include "quorum/quorum_tally.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace rlock::detail {

class token_raise {
 public:
  /// A raise of `proposal` on `nodes` nodes.
  token_raise(std::size_t nodes, std::int64_t proposal)
      : nodes_(nodes), proposal_(proposal), highest_(proposal) {}

  /// A node answered: whether it holds the proposal by this raise now, and what it counted
  /// before.
  void on_answer(bool wrote, std::int64_t before) {
    ++answered_;
    if (wrote) ++wrote_;
    highest_ = std::max(highest_, before);
  }
  /// A node gave no usable answer (an error, no answer in time).
  void on_failed() { ++answered_; }

  /// A majority wrote the proposal: it is the token.
  bool confirmed() const noexcept { return wrote_ >= quorum_of(nodes_); }
  /// Not even the nodes still to answer could make a majority.
  bool hopeless() const noexcept { return wrote_ + (nodes_ - answered_) < quorum_of(nodes_); }
  bool all_answered() const noexcept { return answered_ >= nodes_; }
  std::int64_t proposal() const noexcept { return proposal_; }
  /// What to propose next if this raise is hopeless: past every count seen.
  std::int64_t next_proposal() const noexcept { return std::max(highest_, proposal_) + 1; }

 private:
  std::size_t nodes_;
  std::int64_t proposal_;
  std::int64_t highest_;
  std::size_t answered_ = 0;
  std::size_t wrote_ = 0;
};

}  // namespace rlock::detail
