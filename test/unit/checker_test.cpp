// The chaos checker fed with hand-written histories: a checker that cannot fail proves nothing,
// so every kind of finding is shown to be found, and its near misses shown to pass.
#include "chaos/checker.hpp"

#include "chaos/history.hpp"

#include <gtest/gtest.h>

namespace {

using namespace rlock::chaos;

constexpr nanos one_ms = 1'000'000;

acquisition acq(std::string owner, nanos from, nanos to, end_kind end = end_kind::released,
                std::string lock = "L") {
  return {std::move(lock), std::move(owner), from * one_ms, from * one_ms, to * one_ms, end};
}

operation op(op_kind kind, nanos from, nanos to, nanos bound, std::string outcome = "ok") {
  return {kind,
          "L",
          "a",
          from * one_ms,
          to < 0 ? -1 : to * one_ms,
          bound < 0 ? -1 : bound * one_ms,
          std::move(outcome)};
}

history base() {
  history h;
  h.begin = 1 * one_ms;  // 0 means "not set" to merge()
  h.end = 1000 * one_ms;
  return h;
}

TEST(checker, sequential_owners_are_clean) {
  auto h = base();
  h.acquisitions = {acq("a", 10, 20), acq("b", 20, 30), acq("a", 31, 40, end_kind::lost),
                    acq("c", 40, 50, end_kind::not_owner)};
  h.operations = {op(op_kind::try_lock, 0, 10, 100), op(op_kind::lock, 5, 20, -1),
                  op(op_kind::unlock, 20, 25, 50)};
  const auto v = check(h);
  EXPECT_TRUE(v.clean()) << v.report();
  EXPECT_EQ(v.acquisitions, 4u);
}

TEST(checker, overlapping_beliefs_are_a_violation) {
  auto h = base();
  h.acquisitions = {acq("a", 10, 20), acq("b", 19, 30)};
  const auto v = check(h);
  ASSERT_EQ(v.violations.size(), 1u) << v.report();
  EXPECT_NE(v.violations[0].find("a ["), std::string::npos);
  EXPECT_NE(v.violations[0].find("b ["), std::string::npos);
  EXPECT_FALSE(v.clean());
}

TEST(checker, a_violation_is_reported_with_what_the_clients_logged_around_it) {
  auto h = base();
  h.acquisitions = {acq("a", 100, 200), acq("b", 150, 300),
                    acq("c", 500, 600, end_kind::released, "M")};
  h.notes = {{90 * one_ms, "debug chaos-p1: lock 'L' (owner x:1): an attempt's answer was lost"},
             {120 * one_ms, "warning chaos-p1: connection lost (eof); reconnecting"},
             {130 * one_ms, "debug chaos-p1: lock 'M' (owner x:2): giving back a hold"},
             {140 * one_ms, "debug chaos-p1: lock 'LL' (owner x:3): giving back a hold"},
             {2000 * one_ms, "debug chaos-p1: lock 'L' (owner x:1): long after"}};
  // Across processes: the notes survive the text form.
  const auto v = check(history::parse(h.serialize()));
  ASSERT_EQ(v.violations.size(), 1u) << v.report();
  const auto report = v.report();
  EXPECT_NE(report.find("an attempt's answer was lost"), std::string::npos) << report;
  EXPECT_NE(report.find("connection lost"), std::string::npos) << report;
  EXPECT_EQ(report.find("lock 'M'"), std::string::npos) << report;   // another lock
  EXPECT_EQ(report.find("lock 'LL'"), std::string::npos) << report;  // a name beginning alike
  EXPECT_EQ(report.find("long after"), std::string::npos) << report;
  // Notes are context, not findings: a clean history with notes stays clean.
  auto quiet = base();
  quiet.acquisitions = {acq("a", 10, 20)};
  quiet.notes = h.notes;
  EXPECT_TRUE(check(quiet).clean());
  EXPECT_TRUE(check(quiet).context.empty());
}

TEST(checker, a_long_belief_is_compared_with_every_later_one) {
  // "b" and "c" do not overlap each other; both overlap "a", which is not the latest interval.
  auto h = base();
  h.acquisitions = {acq("a", 10, 100), acq("b", 20, 30), acq("c", 40, 50)};
  EXPECT_EQ(check(h).violations.size(), 2u);
}

TEST(checker, readers_share_a_read_write_lock_and_a_writer_overlapping_any_of_them_is_a_violation) {
  auto h = base();
  auto read = [](std::string owner, nanos from, nanos to) {
    auto a = acq(std::move(owner), from, to);
    a.shared = true;
    return a;
  };
  h.acquisitions = {read("r1", 10, 50), read("r2", 20, 60), acq("w", 60, 70), read("r3", 70, 80)};
  EXPECT_TRUE(check(h).clean()) << check(h).report();
  h.acquisitions.push_back(acq("w2", 55, 58));  // inside r2's read hold
  const auto v = check(h);
  ASSERT_EQ(v.violations.size(), 1u) << v.report();
  EXPECT_NE(v.violations[0].find("r2 (read) ["), std::string::npos) << v.violations[0];
  // The flag travels with a history across processes.
  const auto parsed = history::parse(h.serialize());
  ASSERT_EQ(parsed.acquisitions.size(), h.acquisitions.size());
  EXPECT_TRUE(parsed.acquisitions[0].shared);
  EXPECT_FALSE(parsed.acquisitions[2].shared);
  EXPECT_EQ(check(parsed).violations.size(), 1u);
}

TEST(checker, a_writer_that_waits_past_its_bound_while_later_readers_enter_starved) {
  auto h = base();
  auto read = [](std::string owner, nanos asked, nanos from, nanos to) {
    auto a = acq(std::move(owner), from, to);
    a.requested = asked * one_ms;
    a.shared = true;
    return a;
  };
  auto write = [](std::string owner, nanos asked, nanos from, nanos to) {
    auto a = acq(std::move(owner), from, to);
    a.requested = asked * one_ms;
    return a;
  };
  checker_options opts;
  opts.writer_wait_bound = 100 * one_ms;
  // The writer asks at 10 and waits for the reader in at 0 and the one that crossed its mark
  // (asked at 12): 60 one_ms, within the bound.
  h.acquisitions = {read("r1", 0, 0, 50), read("r2", 12, 13, 70), write("w", 10, 70, 80)};
  EXPECT_TRUE(check(h, opts).clean()) << check(h, opts).report();
  // Readers keep arriving past it: 300 one_ms, while two later readers entered first.
  h.acquisitions = {read("r1", 0, 0, 150), read("r2", 120, 120, 250), read("r3", 200, 200, 310),
                    write("w", 10, 310, 320)};
  auto v = check(h, opts);
  ASSERT_EQ(v.starved.size(), 1u) << v.report();
  EXPECT_NE(v.starved[0].find("2 reader(s)"), std::string::npos) << v.starved[0];
  EXPECT_FALSE(v.clean());
  EXPECT_TRUE(v.violations.empty());  // never an overlap: exclusion held
  // A long wait behind readers that were all in before it is no starvation (long holds), nor
  // one behind a reader that crossed its mark on the wire (asked 2 one_ms after it).
  h.acquisitions = {read("r1", 0, 0, 300), write("w", 10, 300, 320)};
  EXPECT_TRUE(check(h, opts).clean());
  h.acquisitions = {read("r1", 0, 0, 300), read("r2", 12, 13, 100), write("w", 10, 300, 320)};
  EXPECT_TRUE(check(h, opts).clean()) << check(h, opts).report();
  // Off by default: a run whose faults may cut a writer off.
  h.acquisitions = {read("r1", 0, 0, 150), read("r2", 120, 120, 310), write("w", 10, 310, 320)};
  EXPECT_TRUE(check(h).clean());
  EXPECT_FALSE(check(h, opts).clean());
}

TEST(checker, a_fair_grant_out_of_queue_order_is_a_violation_and_in_order_is_not) {
  auto h = base();
  // a waits (lock()) from 10, b (try_lock) from 12; the queue read at 15 has a ahead of b.
  h.operations = {op(op_kind::lock, 10, 40, -1, "acquired"), op(op_kind::try_lock, 12, 60, 100)};
  h.operations[0].owner = "a";
  h.operations[1].owner = "b";
  h.owner_fields = {{"u:1", "a"}, {"u:2", "b"}};
  h.queues = {{15 * one_ms, "L", {"u:1", "u:2"}}};
  auto grant = [](std::string owner, nanos requested, nanos from, nanos to) {
    auto a = acq(std::move(owner), from, to);
    a.requested = requested * one_ms;
    return a;
  };
  h.acquisitions = {grant("a", 10, 40, 50), grant("b", 12, 60, 70)};
  EXPECT_TRUE(check(h).clean()) << check(h).report();
  // b granted first (and a after it): out of turn.
  h.operations[1].finished = 30 * one_ms;
  h.operations[0].finished = 50 * one_ms;
  h.acquisitions = {grant("b", 12, 30, 35), grant("a", 10, 50, 60)};
  const auto v = check(h);
  ASSERT_EQ(v.violations.size(), 1u) << v.report();
  EXPECT_NE(v.violations[0].find("FIFO"), std::string::npos) << v.violations[0];
  // Not a violation when a only tried (try_lock): a waiter with a short allowance may be dropped.
  h.operations[0].kind = op_kind::try_lock;
  EXPECT_TRUE(check(h).clean()) << check(h).report();
  // The records travel across processes.
  const auto parsed = history::parse(h.serialize());
  ASSERT_EQ(parsed.queues.size(), 1u);
  EXPECT_EQ(parsed.queues[0].fields, (std::vector<std::string>{"u:1", "u:2"}));
  ASSERT_EQ(parsed.owner_fields.size(), 2u);
  EXPECT_EQ(parsed.owner_fields[1].owner, "b");
}

TEST(checker, semaphore_holds_may_overlap_up_to_the_capacity_and_no_further) {
  auto h = base();
  auto hold = [](std::string owner, nanos from, nanos to, std::uint32_t permits) {
    auto a = acq(std::move(owner), from, to);
    a.permits = permits;
    return a;
  };
  h.capacities = {{"L", 3}};
  h.acquisitions = {hold("a", 10, 50, 2), hold("b", 20, 40, 1), hold("c", 50, 60, 2)};
  EXPECT_TRUE(check(h).clean()) << check(h).report();
  h.acquisitions.push_back(hold("d", 30, 35, 1));  // 4 permits believed at 30
  const auto v = check(h);
  ASSERT_EQ(v.violations.size(), 1u) << v.report();
  EXPECT_NE(v.violations[0].find("4 permits"), std::string::npos) << v.violations[0];
  // The report names the holds believed at that instant (a, b, d), not the later one.
  EXPECT_NE(v.violations[0].find("d (1 permits)"), std::string::npos) << v.violations[0];
  EXPECT_EQ(v.violations[0].find("c (2 permits)"), std::string::npos) << v.violations[0];
  const auto parsed = history::parse(h.serialize());
  ASSERT_EQ(parsed.capacities.size(), 1u);
  EXPECT_EQ(parsed.acquisitions[0].permits, 2u);
  EXPECT_EQ(check(parsed).violations.size(), 1u);
}

TEST(checker, different_locks_never_conflict) {
  auto h = base();
  h.acquisitions = {acq("a", 10, 20, end_kind::released, "L1"),
                    acq("b", 10, 20, end_kind::released, "L2")};
  EXPECT_TRUE(check(h).clean());
}

acquisition fenced(std::string owner, nanos requested, nanos from, nanos to, std::int64_t token) {
  auto a = acq(std::move(owner), from, to);
  a.requested = requested * one_ms;
  a.token = token;
  return a;
}

TEST(checker, a_token_not_above_one_granted_before_it_was_asked_for_is_a_violation) {
  auto h = base();
  // b asked at 25, after a was granted at 10: b's token must be above a's.
  h.acquisitions = {fenced("a", 5, 10, 20, 7), fenced("b", 25, 30, 40, 7)};
  const auto v = check(h);
  ASSERT_EQ(v.violations.size(), 1u) << v.report();
  EXPECT_NE(v.violations[0].find("token 7"), std::string::npos) << v.report();
  // Increasing tokens pass; so does a token under one whose grant b may have raced (b asked at
  // 8, before a's grant was seen at 10: the server may have granted b first).
  h.acquisitions = {fenced("a", 5, 10, 20, 7), fenced("b", 25, 30, 40, 8)};
  EXPECT_TRUE(check(h).clean()) << check(h).report();
  h.acquisitions = {fenced("a", 5, 10, 20, 7), fenced("b", 8, 20, 40, 6)};
  EXPECT_TRUE(check(h).clean()) << check(h).report();
  // A restart that lost the data between the two explains a token that went back.
  h.acquisitions = {fenced("a", 5, 10, 20, 7), fenced("b", 25, 30, 40, 1)};
  h.restarts = {{22 * one_ms, false}};
  const auto lost = check(h);
  EXPECT_TRUE(lost.violations.empty()) << lost.report();
  ASSERT_EQ(lost.data_loss.size(), 1u);
  EXPECT_NE(lost.data_loss[0].find("explains 1"), std::string::npos) << lost.report();
}

TEST(checker, an_owner_believes_until_lost_fires) {
  // "a" lost it at 25, after "b" took it at 22: the late lost() is a violation.
  auto h = base();
  h.acquisitions = {acq("a", 10, 25, end_kind::lost), acq("b", 22, 30)};
  EXPECT_EQ(check(h).violations.size(), 1u);
}

TEST(checker, an_open_acquisition_is_believed_to_the_end_and_reported) {
  auto h = base();
  h.acquisitions = {acq("a", 10, 0, end_kind::open), acq("b", 500, 600)};
  const auto v = check(h);
  EXPECT_EQ(v.violations.size(), 1u) << v.report();
  ASSERT_EQ(v.stuck.size(), 1u);
  EXPECT_NE(v.stuck[0].find("never ended"), std::string::npos);
}

TEST(checker, data_loss_is_reported_apart_and_never_passes) {
  auto h = base();
  h.acquisitions = {acq("a", 10, 300, end_kind::lost), acq("b", 200, 250)};
  h.restarts = {{150 * one_ms, false}};
  const auto v = check(h);
  EXPECT_TRUE(v.violations.empty()) << v.report();
  ASSERT_EQ(v.data_loss.size(), 1u);
  EXPECT_NE(v.data_loss[0].find("explains 1 overlap"), std::string::npos) << v.report();
  EXPECT_FALSE(v.clean());
}

TEST(checker, data_loss_without_an_overlap_is_still_reported) {
  auto h = base();
  h.acquisitions = {acq("a", 10, 20)};
  h.restarts = {{150 * one_ms, false}};
  const auto v = check(h);
  ASSERT_EQ(v.data_loss.size(), 1u);
  EXPECT_NE(v.data_loss[0].find("no overlap followed"), std::string::npos);
  EXPECT_FALSE(v.clean());
}

TEST(checker, a_restart_that_kept_its_data_explains_nothing) {
  auto h = base();
  h.acquisitions = {acq("a", 10, 300), acq("b", 200, 250)};
  h.restarts = {{150 * one_ms, true}};
  const auto v = check(h);
  EXPECT_EQ(v.violations.size(), 1u);
  EXPECT_TRUE(v.data_loss.empty());
}

TEST(checker, a_grant_requested_before_the_kill_and_seen_after_it_may_be_the_old_servers) {
  // "a" asked before the kill and read its answer after it: the old server may have granted it.
  auto h = base();
  auto a = acq("a", 160, 300, end_kind::lost);
  a.requested = 140 * one_ms;
  h.acquisitions = {a, acq("b", 200, 250)};
  h.restarts = {{150 * one_ms, false}};
  const auto v = check(h);
  EXPECT_TRUE(v.violations.empty()) << v.report();
  EXPECT_EQ(v.data_loss.size(), 1u);
  // Asked after the kill, it can only be the new server's: then it is a violation.
  h.acquisitions[0].requested = 155 * one_ms;
  EXPECT_EQ(check(h).violations.size(), 1u);
}

TEST(checker, a_loss_after_both_acquisitions_explains_nothing) {
  // Both owners acquired before the restart: the server granted both, data loss or not.
  auto h = base();
  h.acquisitions = {acq("a", 10, 300), acq("b", 200, 250)};
  h.restarts = {{260 * one_ms, false}};
  const auto v = check(h);
  EXPECT_EQ(v.violations.size(), 1u) << v.report();
  EXPECT_EQ(v.data_loss.size(), 1u);
}

TEST(checker, operations_past_their_bound_overrun) {
  auto h = base();
  h.operations = {op(op_kind::try_lock, 0, 100, 50), op(op_kind::unlock, 0, 40, 50),
                  op(op_kind::lock, 0, 900, -1)};
  checker_options opts;
  opts.slack = 10 * one_ms;
  const auto v = check(h, opts);
  ASSERT_EQ(v.overruns.size(), 1u) << v.report();
  EXPECT_NE(v.overruns[0].find("try_lock"), std::string::npos);
  // The slack is what absorbs scheduling: the same history passes with more of it.
  opts.slack = 60 * one_ms;
  EXPECT_TRUE(check(h, opts).clean());
}

TEST(checker, an_operation_that_never_completed_is_stuck) {
  auto h = base();
  h.operations = {op(op_kind::lock, 0, -1, -1)};
  const auto v = check(h);
  ASSERT_EQ(v.stuck.size(), 1u);
  EXPECT_NE(v.stuck[0].find("never completed"), std::string::npos);
}

TEST(checker, leftovers_are_reported) {
  auto h = base();
  h.left.channels = {"redisson_lock__channel:{L}"};
  h.left.keys = {"L"};
  h.left.client_activity = {"p1: held_locks=1"};
  const auto v = check(h);
  EXPECT_EQ(v.leftovers.size(), 3u);
  EXPECT_FALSE(v.clean());
}

TEST(history, serializes_and_merges_across_processes) {
  history one = base();
  one.acquisitions = {acq("p1/w0", 10, 20)};
  one.operations = {op(op_kind::try_lock, 1, 10, 100, "acquired")};
  one.restarts = {{5 * one_ms, true}};
  history two;
  two.begin = 2 * one_ms;
  two.end = 1200 * one_ms;
  two.acquisitions = {acq("p2/w0", 15, 25, end_kind::lost)};
  two.acquisitions[0].token = 42;
  two.left.keys = {"L"};
  auto merged = history::parse(one.serialize());
  merged.merge(history::parse(two.serialize()));
  EXPECT_EQ(merged.acquisitions.size(), 2u);
  EXPECT_EQ(merged.acquisitions[1].token, 42);
  EXPECT_EQ(merged.operations.size(), 1u);
  EXPECT_EQ(merged.operations[0].outcome, "acquired");
  EXPECT_EQ(merged.restarts.size(), 1u);
  EXPECT_EQ(merged.begin, 1 * one_ms);
  EXPECT_EQ(merged.end, 1200 * one_ms);
  const auto v = check(merged);
  EXPECT_EQ(v.violations.size(), 1u);  // p1/w0 and p2/w0 overlap in [15, 20]
  EXPECT_EQ(v.leftovers.size(), 1u);
  EXPECT_THROW(history::parse("A\tL\tonly-three\n"), std::runtime_error);
}

TEST(recorder, ends_a_belief_once) {
  recorder r;
  const auto a = r.acquired("L", "w", now_ns());
  r.end(a, end_kind::lost);
  r.end(a, end_kind::released);  // the unlock after lost() does not move the end
  const auto o = r.started(op_kind::unlock, "L", "w", 50 * one_ms);
  r.finished(o, "not_owner");
  const auto h = r.finish();
  ASSERT_EQ(h.acquisitions.size(), 1u);
  EXPECT_EQ(h.acquisitions[0].end, end_kind::lost);
  EXPECT_GE(h.acquisitions[0].ended, h.acquisitions[0].acquired);
  EXPECT_EQ(h.operations[0].outcome, "not_owner");
  EXPECT_GE(h.end, h.operations[0].finished);
}

// The observer rule (elections): each observer's changes a subsequence of the true one.
namespace observers {

observation seen(std::string observer, std::uint64_t seq, std::int64_t term, std::string event,
                 std::string value, std::uint64_t skipped = 0) {
  observation o;
  o.observer = std::move(observer);
  o.lock = "L";  // acq()'s lock
  o.seq = seq;
  o.term = term;
  o.leading = event != "resigned";
  o.event = std::move(event);
  o.value = std::move(value);
  o.skipped = skipped;
  return o;
}

TEST(checker, observers_told_one_sequence_in_order_with_their_gaps_counted_are_clean) {
  auto h = base();
  h.acquisitions = {acq("a", 10, 20), acq("b", 21, 30)};
  h.acquisitions[0].token = 4;
  h.acquisitions[1].token = 5;
  h.observations = {seen("o1", 1, 4, "elected", "a"), seen("o1", 2, 4, "resigned", ""),
                    seen("o1", 3, 5, "elected", "b"),
                    // o2 missed two changes across a reconnect and read the record instead
                    seen("o2", 1, 4, "snapshot", "a"), seen("o2", 3, 5, "snapshot", "b", 1)};
  EXPECT_TRUE(check(h).clean()) << check(h).report();
}

TEST(checker, a_repeat_a_wrong_gap_a_disagreement_or_a_term_going_back_is_a_violation) {
  const auto violations = [](std::vector<observation> seen_list) {
    auto h = base();
    h.acquisitions = {acq("a", 10, 20), acq("b", 21, 30)};
    h.acquisitions[0].token = 4;
    h.acquisitions[1].token = 5;
    h.observations = std::move(seen_list);
    return check(h).violations.size();
  };
  EXPECT_EQ(violations({seen("o1", 1, 4, "elected", "a"), seen("o1", 1, 4, "elected", "a")}), 1u);
  EXPECT_EQ(violations({seen("o1", 1, 4, "elected", "a"), seen("o1", 3, 5, "elected", "b")}), 1u);
  EXPECT_EQ(violations({seen("o1", 1, 4, "elected", "a"), seen("o2", 1, 4, "elected", "x")}), 1u);
  EXPECT_EQ(violations({seen("o1", 1, 5, "elected", "b"), seen("o1", 2, 4, "elected", "a")}), 1u);
  // An elected change that names another owner than the one whose win it was.
  EXPECT_EQ(violations({seen("o1", 1, 4, "elected", "b")}), 1u);
}

TEST(checker, observations_survive_serialization_and_merge) {
  auto h = base();
  h.observations = {seen("p/o", 7, 3, "proclaimed", "v:with:colons", 2)};
  h.elections = {"E"};
  auto back = history::parse(h.serialize());
  ASSERT_EQ(back.observations.size(), 1u);
  EXPECT_EQ(back.observations[0].value, "v:with:colons");
  EXPECT_EQ(back.observations[0].skipped, 2u);
  EXPECT_EQ(back.elections, std::vector<std::string>{"E"});
  back.merge(h);
  EXPECT_EQ(back.observations.size(), 2u);
  EXPECT_EQ(back.elections.size(), 1u);
}

}  // namespace observers

}  // namespace
