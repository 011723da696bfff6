// The lock kinds' descriptors without a server: the decoding of their acquire replies and the
// judgement of their reconcile answers.
#include "engine/lock_kind.hpp"

#include "engine/engine_config.hpp"
#include "kinds/registry.hpp"
#include "support/resp3_values.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <utility>

namespace {

using rlock::detail::acquire_reply;
using rlock::detail::fenced_kind;
using rlock::detail::reconcile_result;
using rlock::detail::reentrant_kind;
namespace resp3 = rlock::detail::resp3;
using outcome = acquire_reply::outcome;
using rlock::test::array;
using rlock::test::number;
using namespace std::chrono_literals;

resp3::value null() { return {}; }

TEST(lock_kind, reentrant_nil_is_acquired_a_number_is_busy) {
  EXPECT_EQ(reentrant_kind.decode(null()).what, outcome::acquired);
  EXPECT_EQ(reentrant_kind.decode(null()).token, 0);
  const auto busy = reentrant_kind.decode(number(2500));
  EXPECT_EQ(busy.what, outcome::busy);
  EXPECT_EQ(busy.ttl, 2500ms);
  EXPECT_EQ(reentrant_kind.decode(number(-1)).ttl, -1ms);
  // The fenced shape is not a reentrant reply.
  EXPECT_EQ(reentrant_kind.decode(array({number(-1), number(3)})).what, outcome::malformed);
}

TEST(lock_kind, fenced_pairs) {
  const auto got = fenced_kind.decode(array({number(-1), number(42)}));
  EXPECT_EQ(got.what, outcome::acquired);
  EXPECT_EQ(got.token, 42);
  const auto busy = fenced_kind.decode(array({number(900), number(-1)}));
  EXPECT_EQ(busy.what, outcome::busy);
  EXPECT_EQ(busy.ttl, 900ms);
  EXPECT_EQ(busy.token, 0);
  // A holder's key without a TTL: {-1, -1} is busy (PTTL -1), not a token.
  const auto no_ttl = fenced_kind.decode(array({number(-1), number(-1)}));
  EXPECT_EQ(no_ttl.what, outcome::busy);
  EXPECT_EQ(no_ttl.ttl, -1ms);
  const auto zero_ttl = fenced_kind.decode(array({number(0), number(-1)}));
  EXPECT_EQ(zero_ttl.what, outcome::busy);
  EXPECT_EQ(zero_ttl.ttl, 0ms);
}

TEST(lock_kind, every_decoder_bounds_the_wait_the_server_answers) {
  // A Redisson permit taken without a lease scores 922337203685477: a semaphore's attempt
  // answers a wait of about 9.2 x 10^14 ms from it. Whatever the number, each kind's decoder
  // hands the engine a wait in [-1, longest_server_wait]: nanoseconds of a steady_clock hold it.
  using rlock::detail::longest_server_wait;
  const std::int64_t huge[] = {922337203685477, std::numeric_limits<std::int64_t>::max(),
                               std::int64_t{1} << 40, longest_server_wait.count() + 1};
  const std::pair<const rlock::detail::lock_kind*, bool> kinds[] = {
      {&reentrant_kind, false},
      {&fenced_kind, true},
      {&rlock::detail::non_reentrant_kind, false},
      {&rlock::detail::fair_kind, false},
      {&rlock::detail::non_reentrant_fair_kind, false},
      {&rlock::detail::spin_kind, false},
      {&rlock::detail::read_kind, false},
      {&rlock::detail::write_kind, false},
      {&rlock::detail::read_kind_writers_first, false},
      {&rlock::detail::write_kind_writers_first, false},
      {&rlock::detail::semaphore_kind, false}};
  for (const auto& [kind, pair] : kinds) {
    for (const auto ms : huge) {
      const auto got = kind->decode(pair ? array({number(ms), number(-1)}) : number(ms));
      EXPECT_EQ(got.what, outcome::busy) << kind->name << " " << ms;
      EXPECT_EQ(got.ttl, longest_server_wait) << kind->name << " " << ms;
    }
    const auto exact = kind->decode(pair ? array({number(1234), number(-1)}) : number(1234));
    EXPECT_EQ(exact.ttl, 1234ms) << kind->name;
  }
  EXPECT_EQ(rlock::detail::server_wait(-1), -1ms);
  EXPECT_EQ(rlock::detail::server_wait(std::numeric_limits<std::int64_t>::min()), -1ms);
  EXPECT_EQ(rlock::detail::server_wait(0), 0ms);
  // The longest wait is a time point's distance many times over: adding it cannot overflow.
  const auto now = std::chrono::steady_clock::now();
  EXPECT_GT(now + longest_server_wait, now);
}

TEST(lock_kind, fenced_rejects_every_other_shape) {
  resp3::value text;
  text.type = resp3::type::blob_string;
  text.str = "-1";
  for (const auto& bad :
       {null(), number(-1), array({}), array({number(-1)}),
        array({number(-1), number(1), number(2)}), array({number(-1), number(0)}),
        array({number(-1), number(-7)}), array({number(5), number(6)}),
        array({number(-2), number(-1)}), array({text, number(3)}), array({number(-1), text})}) {
    EXPECT_EQ(fenced_kind.decode(bad).what, outcome::malformed);
  }
}

TEST(lock_kind, a_reconciled_attempt_ran_when_the_server_counts_more_holds_than_answers_did) {
  using ran = reconcile_result::outcome;
  resp3::value count2;
  count2.type = resp3::type::blob_string;  // HGET answers a string
  count2.str = "2";
  EXPECT_EQ(reentrant_kind.judge(1, count2).what, ran::ran);
  EXPECT_EQ(reentrant_kind.judge(2, count2).what, ran::not_run);
  EXPECT_EQ(reentrant_kind.judge(0, null()).what, ran::not_run);
  EXPECT_EQ(reentrant_kind.judge(0, number(1)).what, ran::ran);
  // Fenced: the hold count and the token counter in one answer.
  const auto got = fenced_kind.judge(0, array({number(1), number(17)}));
  EXPECT_EQ(got.what, ran::ran);
  EXPECT_EQ(got.token, 17);
  EXPECT_EQ(fenced_kind.judge(1, array({number(1), number(17)})).what, ran::not_run);
  // It ran, but the counter is gone: the hold cannot be handed out with a token.
  EXPECT_EQ(fenced_kind.judge(0, array({number(1), null()})).what, ran::ran_no_token);
  // A malformed answer is not taken for a run.
  EXPECT_EQ(fenced_kind.judge(0, number(1)).what, ran::not_run);
}

TEST(lock_kind, the_calls_are_redissons_keys_and_arguments) {
  using rlock::detail::acquire_script_call;
  using rlock::detail::lock_identity;
  using rlock::detail::release_inputs;
  using rlock::detail::release_script_call;
  using rlock::detail::script;
  const lock_identity id{"acct", "uuid:7"};
  rlock::detail::acquire_inputs lease;
  lease.lease_ms = "30000";
  acquire_script_call acquire;
  reentrant_kind.acquire_call(id, lease, acquire);
  EXPECT_EQ(acquire.which, script::acquire);
  ASSERT_EQ(acquire.key_span().size(), 1u);
  EXPECT_EQ(acquire.keys[0], "acct");
  ASSERT_EQ(acquire.arg_span().size(), 2u);
  EXPECT_EQ(acquire.args[0], "30000");
  EXPECT_EQ(acquire.args[1], "uuid:7");
  acquire_script_call fenced;
  fenced_kind.acquire_call(id, lease, fenced);
  EXPECT_EQ(fenced.which, script::acquire_fenced);
  ASSERT_EQ(fenced.key_span().size(), 2u);
  EXPECT_EQ(fenced.keys[1], "redisson_lock_token:{acct}");
  EXPECT_EQ(fenced.arg_span().size(), 2u);
  // With config::fenced_lock's token_idle_ttl: the clock-bounded acquire, told the counter's TTL.
  auto expiring = lease;
  expiring.token_ttl_ms = "3600000";
  acquire_script_call clocked;
  fenced_kind.acquire_call(id, expiring, clocked);
  EXPECT_EQ(clocked.which, script::acquire_fenced_clocked);
  ASSERT_EQ(clocked.key_span().size(), 2u);
  EXPECT_EQ(clocked.keys[1], "redisson_lock_token:{acct}");
  ASSERT_EQ(clocked.arg_span().size(), 3u);
  EXPECT_EQ(clocked.args[2], "3600000");
  // Other kinds keep no counter: the input changes nothing for them.
  acquire_script_call plain;
  reentrant_kind.acquire_call(id, expiring, plain);
  EXPECT_EQ(plain.which, script::acquire);
  EXPECT_EQ(plain.arg_span().size(), 2u);
  // The release (Redisson's latched unlock), and the handoff, which only the reentrant kind has.
  const release_inputs in{
      "redisson_lock__channel:{acct}", "latch", "9000", "10000", "publish", "uuid:8", "5000"};
  release_script_call release;
  reentrant_kind.release_call(id, in, release);
  EXPECT_EQ(release.which, script::release);
  ASSERT_EQ(release.key_span().size(), 3u);
  EXPECT_EQ(release.keys[1], "redisson_lock__channel:{acct}");
  EXPECT_EQ(release.keys[2], "latch");
  ASSERT_EQ(release.arg_span().size(), 5u);
  EXPECT_EQ(release.args[0], "0");
  EXPECT_EQ(release.args[2], "uuid:7");
  release_script_call transfer;
  reentrant_kind.transfer_call(id, in, transfer);
  EXPECT_EQ(transfer.which, script::transfer);
  ASSERT_EQ(transfer.arg_span().size(), 7u);
  EXPECT_EQ(transfer.args[5], "uuid:8");
  EXPECT_EQ(transfer.args[6], "5000");
  EXPECT_EQ(fenced_kind.transfer_call, nullptr);  // a fenced acquisition takes a new token
  // The reconcile question is one round trip on the lock key's node: the fenced one asks two.
  EXPECT_EQ(reentrant_kind.reconcile_question(id).route(), "acct");
  EXPECT_EQ(reentrant_kind.reconcile_question(id).answers(), 1u);
  EXPECT_EQ(fenced_kind.reconcile_question(id).answers(), 2u);
}

TEST(lock_kind, unlock_messages_wake_one_and_forced_ones_all) {
  using rlock::detail::wake_policy;
  std::uint32_t ticket = 0;
  EXPECT_EQ(reentrant_kind.on_message("0", ticket), wake_policy::one);
  EXPECT_EQ(reentrant_kind.on_message("1", ticket), wake_policy::all);
  EXPECT_EQ(fenced_kind.on_message("0", ticket), wake_policy::one);
  // A reentrant lock's channel carries Redisson's messages only: nothing is a grant there.
  EXPECT_EQ(reentrant_kind.on_message("g7", ticket), wake_policy::one);
  EXPECT_EQ(ticket, 0u);
  std::string channel = "kept:";
  reentrant_kind.channel("a", channel);
  EXPECT_EQ(channel, "kept:redisson_lock__channel:{a}");  // appended
}

TEST(lock_kind, non_reentrant_refuses_its_holder_with_redissons_words) {
  using rlock::detail::non_reentrant_kind;
  using rlock::detail::script;
  const rlock::detail::lock_identity id{"acct", "uuid:7"};
  rlock::detail::acquire_inputs in;
  in.lease_ms = "30000";
  rlock::detail::acquire_script_call call;
  non_reentrant_kind.acquire_call(id, in, call);
  EXPECT_EQ(call.which, script::acquire_non_reentrant);
  ASSERT_EQ(call.arg_span().size(), 3u);
  EXPECT_EQ(call.args[2], "NON_REENTRANT_REACQUIRE");
  EXPECT_EQ(non_reentrant_kind.decode(null()).what, outcome::acquired);
  EXPECT_EQ(non_reentrant_kind.decode(number(40)).what, outcome::busy);
}

TEST(lock_kind, writers_first_calls_add_the_marks_in_the_locks_slot_and_keep_redissons_layout) {
  namespace d = rlock::detail;
  const d::lock_identity reader{"doc", "uuid:7"};
  const d::lock_identity writer{"doc", "uuid:7:write"};
  d::acquire_inputs in{};
  in.lease_ms = "30000";
  in.mark_ms = "10000";
  d::acquire_script_call redisson_read;
  d::read_kind.acquire_call(reader, in, redisson_read);
  d::acquire_script_call read;
  d::read_kind_writers_first.acquire_call(reader, in, read);
  EXPECT_EQ(read.which, d::script::acquire_read_writers_first);
  // Redisson's keys and arguments first, then the marks: one slot ({doc}) for all.
  ASSERT_EQ(read.key_span().size(), 3u);
  EXPECT_EQ(read.keys[0], "doc");
  EXPECT_EQ(read.keys[1], "{doc}:uuid:7:rwlock_timeout");
  EXPECT_EQ(read.keys[2], "{doc}:rlock_writers");
  ASSERT_EQ(redisson_read.key_span().size(), 2u);
  EXPECT_EQ(redisson_read.keys[1], read.keys[1]);
  ASSERT_EQ(read.arg_span().size(), 3u);
  EXPECT_EQ(read.args[0], "30000");
  EXPECT_EQ(read.args[1], "uuid:7");
  EXPECT_EQ(read.args[2], "uuid:7:write");
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(read.args[i], redisson_read.args[i]);

  d::acquire_script_call write;
  d::write_kind_writers_first.acquire_call(writer, in, write);
  EXPECT_EQ(write.which, d::script::acquire_write_writers_first);
  ASSERT_EQ(write.key_span().size(), 3u);
  EXPECT_EQ(write.keys[1], "{doc}:rlock_writers");
  EXPECT_EQ(write.keys[2], "{doc}:rlock_writer_queue");
  ASSERT_EQ(write.arg_span().size(), 5u);
  EXPECT_EQ(write.args[1], "uuid:7:write");
  EXPECT_EQ(write.args[2], "uuid:7");
  EXPECT_EQ(write.args[4], "10000");
  // A single attempt waits for nothing: it marks nothing.
  in.mark_ms = {};
  d::write_kind_writers_first.acquire_call(writer, in, write);
  EXPECT_EQ(write.args[4], "");

  // A name with its own hash tag keeps it, so the marks share the lock's slot.
  const d::lock_identity tagged{"a{x}b", "uuid:7:write"};
  d::write_kind_writers_first.acquire_call(tagged, in, write);
  EXPECT_EQ(write.keys[1], "a{x}b:rlock_writers");
  EXPECT_EQ(write.keys[2], "a{x}b:rlock_writer_queue");

  d::acquire_inputs attempt{};
  attempt.publish = "publish";
  const d::leave_inputs leave{"redisson_rwlock:{doc}", attempt};
  d::release_script_call call;
  d::write_kind_writers_first.leave_call(writer, leave, call);
  EXPECT_EQ(call.which, d::script::leave_write);
  ASSERT_EQ(call.key_span().size(), 4u);
  EXPECT_EQ(call.keys[1], "{doc}:rlock_writers");
  EXPECT_EQ(call.keys[2], "redisson_rwlock:{doc}");
  EXPECT_EQ(call.keys[3], "{doc}:rlock_writer_queue");
  ASSERT_EQ(call.arg_span().size(), 2u);
  EXPECT_EQ(call.args[0], "uuid:7:write");
  // Only the writer is woken first, and only under writers first.
  EXPECT_TRUE(d::write_kind_writers_first.woken_first);
  EXPECT_FALSE(d::write_kind.woken_first);
  EXPECT_FALSE(d::read_kind_writers_first.woken_first);
}

TEST(lock_kind, fair_calls_name_redissons_queue_and_rlocks_handoff_registrations) {
  using rlock::detail::fair_kind;
  using rlock::detail::non_reentrant_fair_kind;
  using rlock::detail::script;
  const rlock::detail::lock_identity id{"acct", "uuid:7"};
  rlock::detail::acquire_inputs in{};
  in.lease_ms = "30000";
  in.publish = "publish";
  in.wait_ms = "60000";
  in.nap_base_ms = "2000";
  in.ticket = "12";
  in.handoff = "30000:60000";
  rlock::detail::acquire_script_call call;
  fair_kind.acquire_call(id, in, call);
  EXPECT_EQ(call.which, script::acquire_fair);
  ASSERT_EQ(call.key_span().size(), 4u);
  EXPECT_EQ(call.keys[0], "acct");
  EXPECT_EQ(call.keys[1], "redisson_lock_queue:{acct}");
  EXPECT_EQ(call.keys[2], "redisson_lock_timeout:{acct}");
  EXPECT_EQ(call.keys[3], "rlock_fair_handoff:{acct}");
  ASSERT_EQ(call.arg_span().size(), 7u);
  EXPECT_EQ(call.args[1], "uuid:7");
  EXPECT_EQ(call.args[2], "60000");  // the allowance: wait_timeout, for every waiter
  EXPECT_EQ(call.args[3], "12");
  EXPECT_EQ(call.args[4], "30000:60000");
  EXPECT_EQ(call.args[5], "");
  EXPECT_EQ(call.args[6], "2000");  // the caller's wait: its naps are halves of it
  rlock::detail::acquire_script_call refusing;
  non_reentrant_fair_kind.acquire_call(id, in, refusing);
  EXPECT_EQ(refusing.args[5], "NON_REENTRANT_REACQUIRE");
  // A name with its own hash tag keeps it (Redisson's prefixName): one slot for every key.
  const rlock::detail::lock_identity tagged{"{t}x", "uuid:7"};
  fair_kind.acquire_call(tagged, in, call);
  EXPECT_EQ(call.keys[1], "redisson_lock_queue:{t}x");
  // The release, the leave and the forced unlock take the same keys and the unlock channel.
  const rlock::detail::release_inputs rel{
      "redisson_lock__channel:{acct}", "latch", "9000", "10000", "publish", {}, {}};
  rlock::detail::release_script_call release;
  fair_kind.release_call(id, rel, release);
  EXPECT_EQ(release.which, script::release_fair);
  ASSERT_EQ(release.key_span().size(), 6u);
  EXPECT_EQ(release.keys[4], "redisson_lock__channel:{acct}");
  EXPECT_EQ(release.keys[5], "latch");
  rlock::detail::release_script_call leave;
  fair_kind.leave_call(id, {"redisson_lock__channel:{acct}", in}, leave);
  EXPECT_EQ(leave.which, script::leave_fair);
  ASSERT_EQ(leave.arg_span().size(), 4u);
  EXPECT_EQ(leave.args[1], "60000");  // the allowance its attempts gave, given back
  EXPECT_EQ(leave.args[2], "12");
  EXPECT_EQ(leave.args[3], "publish");
  EXPECT_EQ(fair_kind.transfer_call, nullptr);  // the queue's head is next, not a local waiter
  EXPECT_EQ(fair_kind.waiting, rlock::detail::wait_mode::queue);
  // Busy replies are how long to sleep; -3 is a handoff the attempt found.
  EXPECT_EQ(fair_kind.decode(null()).what, outcome::acquired);
  EXPECT_EQ(fair_kind.decode(number(-3)).what, outcome::acquired);
  EXPECT_EQ(fair_kind.decode(number(250)).what, outcome::busy);
  EXPECT_EQ(fair_kind.decode(number(-1)).what, outcome::busy);
  EXPECT_EQ(fair_kind.decode(number(-7)).what, outcome::malformed);
}

// A kind's own settings become its attempt's arguments in its own file (prepare_attempt): the
// engine passes the settings and the acquisition's facts, and knows none of these fields.
TEST(lock_kind, fair_attempts_take_the_queue_allowance_their_ticket_and_a_claim_from_the_kind) {
  namespace d = rlock::detail;
  d::engine_config cfg;
  cfg.watchdog_timeout = std::chrono::milliseconds(30000);
  cfg.fair_lock.wait_timeout = std::chrono::milliseconds(60000);
  cfg.fair_lock.handoff_claim = std::chrono::milliseconds(5000);
  cfg.fair_lock.handoff_by_push = true;
  const auto prepared = [&](std::optional<std::chrono::milliseconds> lease,
                            std::optional<std::chrono::milliseconds> wait, auto&& check) {
    d::attempt_room room;
    d::acquire_inputs in{};
    in.lease_ms = lease ? "7000" : "30000";
    d::fair_kind.prepare_attempt({cfg, lease, wait, 12}, room, in);
    check(in);
  };
  // Renewed by the watchdog, waiting 2 s: the allowance is wait_timeout whatever the wait, its
  // naps halves of its own wait, and a grant by push gives it the claim only.
  prepared(std::nullopt, std::chrono::milliseconds(2000), [](const d::acquire_inputs& in) {
    EXPECT_EQ(in.wait_ms, "60000");
    EXPECT_EQ(in.nap_base_ms, "2000");
    EXPECT_EQ(in.ticket, "12");
    EXPECT_EQ(in.handoff, "5000:60000");
    EXPECT_EQ(in.trace_lasts, std::chrono::milliseconds(60000));
  });
  // With a lease of its own, a grant gives that lease; without a bound, it naps on the allowance.
  prepared(std::chrono::milliseconds(7000), std::nullopt, [](const d::acquire_inputs& in) {
    EXPECT_EQ(in.handoff, "7000:60000");
    EXPECT_EQ(in.nap_base_ms, "60000");
  });
  // A single attempt is never queued: no ticket, no registration.
  prepared(std::nullopt, std::chrono::milliseconds(0), [](const d::acquire_inputs& in) {
    EXPECT_EQ(in.ticket, "");
    EXPECT_EQ(in.handoff, "");
  });
  EXPECT_EQ(d::fair_kind.push_claim(cfg), std::chrono::milliseconds(5000));
  // The claim stays within the watchdog's lease and above four margins (4 × 305 ms).
  cfg.fair_lock.handoff_claim = std::chrono::milliseconds(1);
  EXPECT_EQ(d::fair_kind.push_claim(cfg), std::chrono::milliseconds(1220));
  cfg.fair_lock.handoff_claim = std::chrono::milliseconds(90000);
  EXPECT_EQ(d::fair_kind.push_claim(cfg), std::chrono::milliseconds(30000));
  // Redisson's protocol (no handoff by push), or sync_replicas (a grant would skip the
  // replicas): no claim and no registration.
  cfg.sync_replicas.replicas = 1;
  EXPECT_EQ(d::non_reentrant_fair_kind.push_claim(cfg), std::chrono::milliseconds(0));
  prepared(std::nullopt, std::nullopt, [](const d::acquire_inputs& in) {
    EXPECT_EQ(in.ticket, "12");
    EXPECT_EQ(in.handoff, "");
  });
}

TEST(lock_kind, a_waiting_writer_marks_for_its_lease_and_a_fenced_counter_lives_its_idle_ttl) {
  namespace d = rlock::detail;
  d::engine_config cfg;
  cfg.read_write_lock.writer_mark_lease = std::chrono::milliseconds(10000);
  const auto mark = [&](std::optional<std::chrono::milliseconds> wait) {
    d::attempt_room room;
    d::acquire_inputs in{};
    d::write_kind_writers_first.prepare_attempt({cfg, std::nullopt, wait, 1}, room, in);
    return std::pair(std::string(in.mark_ms), in.trace_lasts);
  };
  EXPECT_EQ(mark(std::nullopt), std::pair(std::string("10000"), std::chrono::milliseconds(10000)));
  EXPECT_EQ(mark(std::chrono::milliseconds(0)).first, "");  // a single attempt marks nothing
  // Redisson's halves, and the reader, add nothing.
  EXPECT_EQ(d::write_kind.prepare_attempt, nullptr);
  EXPECT_EQ(d::read_kind_writers_first.prepare_attempt, nullptr);

  const auto token_ttl = [&] {
    d::attempt_room room;
    d::acquire_inputs in{};
    d::fenced_kind.prepare_attempt({cfg, std::nullopt, std::nullopt, 1}, room, in);
    return std::string(in.token_ttl_ms);
  };
  EXPECT_EQ(token_ttl(), "");  // Redisson's counter, kept forever
  cfg.fenced_lock.token_idle_ttl = std::chrono::milliseconds(3600000);
  EXPECT_EQ(token_ttl(), "3600000");
}

TEST(lock_kind, fair_waiter_messages_are_redissons_zero_or_a_grant_to_a_ticket) {
  using rlock::detail::fair_kind;
  using rlock::detail::wake_policy;
  std::uint32_t ticket = 0;
  EXPECT_EQ(fair_kind.on_message("0", ticket), wake_policy::one);
  EXPECT_EQ(fair_kind.on_message("g42", ticket), wake_policy::grant);
  EXPECT_EQ(ticket, 42u);
  EXPECT_EQ(fair_kind.on_message("g", ticket), wake_policy::one);
  EXPECT_EQ(fair_kind.on_message("g4x", ticket), wake_policy::none);
  EXPECT_EQ(fair_kind.on_message("g99999999999", ticket), wake_policy::none);  // not a ticket
}

TEST(lock_kind, spin_releases_publish_nothing_and_its_waiters_poll) {
  using rlock::detail::script;
  using rlock::detail::spin_kind;
  const rlock::detail::lock_identity id{"acct", "uuid:7"};
  rlock::detail::acquire_inputs in;
  in.lease_ms = "30000";
  rlock::detail::acquire_script_call acquire;
  spin_kind.acquire_call(id, in, acquire);
  EXPECT_EQ(acquire.which, script::acquire);  // RSpinLock's acquire is RLock's
  const rlock::detail::release_inputs rel{
      "redisson_lock__channel:{acct}", "latch", "9000", "10000", "publish", {}, {}};
  rlock::detail::release_script_call release;
  spin_kind.release_call(id, rel, release);
  EXPECT_EQ(release.which, script::release_spin);
  ASSERT_EQ(release.key_span().size(), 2u);  // the lock and its latch: no channel
  EXPECT_EQ(release.keys[1], "latch");
  for (auto a : release.arg_span()) EXPECT_NE(a, "publish");
  rlock::detail::release_script_call force;
  spin_kind.force_call(id, rel, force);
  EXPECT_EQ(force.which, script::force_unlock_spin);
  ASSERT_EQ(force.key_span().size(), 2u);  // the lock and its latch: no channel
  EXPECT_EQ(force.keys[1], "latch");
  for (auto a : force.arg_span()) EXPECT_NE(a, "publish");
  EXPECT_EQ(spin_kind.waiting, rlock::detail::wait_mode::poll);
  EXPECT_EQ(spin_kind.transfer_call, nullptr);
  EXPECT_EQ(rlock::detail::reentrant_kind.waiting, rlock::detail::wait_mode::lock_channel);
}

}  // namespace

namespace {

TEST(lock_kind, each_kind_names_its_own_refusals) {
  namespace d = rlock::detail;
  const auto server_error = rlock::make_error_code(rlock::errc::server_error);
  auto code = [&](const d::lock_kind& k, std::string_view text) {
    return d::refusal_code(k, text, server_error);
  };
  // As Redis 7.0 passes a script's error_reply on, and bare.
  EXPECT_EQ(code(d::non_reentrant_kind, "ERR NON_REENTRANT_REACQUIRE script: ..."),
            rlock::errc::reentry_refused);
  EXPECT_EQ(code(d::non_reentrant_fair_kind, "NON_REENTRANT_REACQUIRE"),
            rlock::errc::reentry_refused);
  EXPECT_EQ(code(d::write_kind, "WRITE_AFTER_READ the owner holds this lock's read half"),
            rlock::errc::upgrade_refused);
  EXPECT_EQ(code(d::semaphore_kind, "PERMITS_EXCEED_TOTAL ..."), rlock::errc::invalid_argument);
  // Another kind's word, or any other error, is what the session made of it.
  EXPECT_EQ(code(d::reentrant_kind, "NON_REENTRANT_REACQUIRE"), server_error);
  EXPECT_EQ(code(d::read_kind, "WRITE_AFTER_READ"), server_error);
  EXPECT_EQ(code(d::write_kind_writers_first, "WRITE_AFTER_READ"), rlock::errc::upgrade_refused);
  EXPECT_EQ(code(d::non_reentrant_kind, "ERR wrong number of arguments"), server_error);
}

}  // namespace

namespace {

TEST(lock_kind, a_kinds_wait_mode_and_its_hooks_agree) {
  namespace d = rlock::detail;
  for (const d::lock_kind* k :
       {&d::reentrant_kind, &d::fenced_kind, &d::non_reentrant_kind, &d::fair_kind,
        &d::non_reentrant_fair_kind, &d::spin_kind, &d::read_kind, &d::write_kind,
        &d::read_kind_writers_first, &d::write_kind_writers_first, &d::semaphore_kind}) {
    SCOPED_TRACE(k->name);
    // Queued waiters leave their queue when they give up, and a writer that readers wait behind
    // (the one kind woken first) takes back its mark; nobody else leaves anything to undo.
    EXPECT_EQ(k->waiting == d::wait_mode::queue || k->woken_first, k->leave_call != nullptr);
    // A polling kind's waiters are in no channel: a release has nobody here to hand over to.
    if (k->waiting == d::wait_mode::poll) {
      EXPECT_TRUE(k->transfer_call == nullptr);
    }
  }
}

}  // namespace
