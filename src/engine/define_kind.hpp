#pragma once

// The rules every lock kind keeps, checked when its descriptor is defined: a kind is written as
// `constinit const lock_kind my_kind = define_kind({.name = "...", ...});`, and a descriptor that
// leaves out a hook the engine will call (or sets one it never will) does not compile. The
// compiler's error names the rule: the non-constexpr function of namespace `kind_rule_broken`
// that define_kind reached.
#include "engine/lock_kind.hpp"
#include "engine/probe_row.hpp"

#include <cstdint>
#include <string_view>

namespace rlock::detail {

enum class kind_rule : std::uint8_t {
  kept,
  named,                      // a kind has a name (logs, the owner table)
  attempts,                   // it builds an attempt and reads its reply
  reconciles,                 // a lost attempt's answer is asked for, and judged
  names_its_channel,          // where its unlocks publish (and its latch's neighbour)
  releases_its_holds,         // a kind that takes holds releases and force-unlocks them
  holdless_releases_nothing,  // a kind without holds (a latch) releases, hands over, leaves none
  polling_backs_off,          // a polling kind, and only it, says how long to sleep
  listener_reads_messages,    // a kind whose waiters listen says whom a message wakes
  queue_is_left,              // a queued waiter that gives up leaves its queue
  count_has_reader,           // a count question comes with the reader of its answer
  poll_hands_nothing_over,    // a polling kind's waiters are not in the hub: no local handoff
  push_needs_queue,           // only a queue's releases grant by push
  probe_is_whole,             // an inspect row claims, asks what it says, for a hash or a string
};

/// The first rule `k` breaks; kind_rule::kept when it keeps them all.
constexpr kind_rule broken_rule(const lock_kind& k) noexcept {
  if (k.name.empty()) return kind_rule::named;
  if (k.acquire_call == nullptr || k.decode == nullptr) return kind_rule::attempts;
  if (k.reconcile_question == nullptr || k.judge == nullptr) return kind_rule::reconciles;
  if (k.channel == nullptr) return kind_rule::names_its_channel;
  if (k.takes_hold && (k.release_call == nullptr || k.force_call == nullptr)) {
    return kind_rule::releases_its_holds;
  }
  if (!k.takes_hold && (k.release_call != nullptr || k.transfer_call != nullptr ||
                        k.force_call != nullptr || k.leave_call != nullptr)) {
    return kind_rule::holdless_releases_nothing;
  }
  if ((k.waiting == wait_mode::poll) != (k.backoff != nullptr)) return kind_rule::polling_backs_off;
  if (k.waiting != wait_mode::poll && k.on_message == nullptr) {
    return kind_rule::listener_reads_messages;
  }
  if (k.waiting == wait_mode::queue && k.leave_call == nullptr) return kind_rule::queue_is_left;
  if ((k.count_question == nullptr) != (k.count_of == nullptr)) return kind_rule::count_has_reader;
  if (k.waiting == wait_mode::poll && k.transfer_call != nullptr) {
    return kind_rule::poll_hands_nothing_over;
  }
  if (k.push_claim != nullptr && k.waiting != wait_mode::queue) return kind_rule::push_needs_queue;
  if (k.probe != nullptr && (k.probe->claim == nullptr ||
                             (k.probe->commands == nullptr) != (k.probe->command_count == 0) ||
                             (k.probe->stored_as != "hash" && k.probe->stored_as != "string"))) {
    return kind_rule::probe_is_whole;
  }
  return kind_rule::kept;
}

/// Not constexpr: reaching one in define_kind stops the build, and its name is the rule.
namespace kind_rule_broken {
inline void a_kind_has_a_name() {}
inline void it_needs_acquire_call_and_decode() {}
inline void it_needs_reconcile_question_and_judge() {}
inline void it_needs_channel() {}
inline void a_kind_that_takes_holds_needs_release_call_and_force_call() {}
inline void a_kind_without_holds_has_no_release_transfer_force_or_leave_call() {}
inline void wait_mode_poll_if_and_only_if_backoff() {}
inline void a_listening_kind_needs_on_message() {}
inline void wait_mode_queue_needs_leave_call() {}
inline void count_question_if_and_only_if_count_of() {}
inline void a_polling_kind_has_no_transfer_call() {}
inline void push_claim_needs_wait_mode_queue() {}
inline void a_probe_row_needs_claim_commands_iff_command_count_and_a_hash_or_string_type() {}
}  // namespace kind_rule_broken

/// `k`, checked against every rule at compile time.
consteval lock_kind define_kind(lock_kind k) {
  namespace broken = kind_rule_broken;
  switch (broken_rule(k)) {
    case kind_rule::kept:
      break;
    case kind_rule::named:
      broken::a_kind_has_a_name();
      break;
    case kind_rule::attempts:
      broken::it_needs_acquire_call_and_decode();
      break;
    case kind_rule::reconciles:
      broken::it_needs_reconcile_question_and_judge();
      break;
    case kind_rule::names_its_channel:
      broken::it_needs_channel();
      break;
    case kind_rule::releases_its_holds:
      broken::a_kind_that_takes_holds_needs_release_call_and_force_call();
      break;
    case kind_rule::holdless_releases_nothing:
      broken::a_kind_without_holds_has_no_release_transfer_force_or_leave_call();
      break;
    case kind_rule::polling_backs_off:
      broken::wait_mode_poll_if_and_only_if_backoff();
      break;
    case kind_rule::listener_reads_messages:
      broken::a_listening_kind_needs_on_message();
      break;
    case kind_rule::queue_is_left:
      broken::wait_mode_queue_needs_leave_call();
      break;
    case kind_rule::count_has_reader:
      broken::count_question_if_and_only_if_count_of();
      break;
    case kind_rule::poll_hands_nothing_over:
      broken::a_polling_kind_has_no_transfer_call();
      break;
    case kind_rule::push_needs_queue:
      broken::push_claim_needs_wait_mode_queue();
      break;
    case kind_rule::probe_is_whole:
      broken::a_probe_row_needs_claim_commands_iff_command_count_and_a_hash_or_string_type();
      break;
  }
  return k;
}

}  // namespace rlock::detail
