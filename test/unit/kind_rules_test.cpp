// The rules a lock kind's descriptor keeps (engine/define_kind.hpp): each is broken here once,
// on a copy of a kind that keeps them all. A descriptor breaking one does not compile where it is
// defined (define_kind is consteval); these say which rule each check is.
#include "engine/define_kind.hpp"
#include "engine/engine_config.hpp"
#include "kinds/hash_lock.hpp"
#include "kinds/registry.hpp"
#include "rlock/config.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

namespace d = rlock::detail;
using d::kind_rule;

std::chrono::milliseconds no_backoff(const d::engine_config&, d::backoff_state&) { return {}; }
std::chrono::milliseconds claim(const d::engine_config&) { return {}; }
std::int64_t count_of(const rlock::detail::resp3::value&) noexcept { return 0; }

// A kind that keeps every rule can be defined in a constant expression: RLock's hooks, and
// nothing it need not set.
constexpr d::lock_kind minimal = d::define_kind({
    .name = "minimal",
    .acquire_call = &d::hash_lock::reentrant_acquire,
    .decode = &d::hash_lock::reentrant_decode,
    .reconcile_question = &d::hash_lock::reentrant_question,
    .judge = &d::hash_lock::reentrant_judge,
    .release_call = &d::hash_lock::release_call,
    .force_call = &d::hash_lock::force_call,
    .channel = &d::append_unlock_channel,
    .on_message = &d::hash_lock::on_unlock_message,
});
static_assert(d::broken_rule(minimal) == kind_rule::kept);
// The defaults: Redisson's renewal, waiting on the lock's channel, a hold per acquisition.
static_assert(minimal.renew == d::script::renew && minimal.waiting == d::wait_mode::lock_channel &&
              minimal.takes_hold && minimal.transfer_call == nullptr &&
              minimal.prepare_attempt == nullptr);

template <typename Break>
kind_rule broken(Break b) {
  d::lock_kind k = minimal;
  b(k);
  return d::broken_rule(k);
}

TEST(kind_rules, each_rule_is_broken_by_the_descriptor_that_leaves_out_what_it_needs) {
  EXPECT_EQ(broken([](d::lock_kind& k) { k.name = {}; }), kind_rule::named);
  EXPECT_EQ(broken([](d::lock_kind& k) { k.acquire_call = nullptr; }), kind_rule::attempts);
  EXPECT_EQ(broken([](d::lock_kind& k) { k.decode = nullptr; }), kind_rule::attempts);
  EXPECT_EQ(broken([](d::lock_kind& k) { k.reconcile_question = nullptr; }), kind_rule::reconciles);
  EXPECT_EQ(broken([](d::lock_kind& k) { k.judge = nullptr; }), kind_rule::reconciles);
  EXPECT_EQ(broken([](d::lock_kind& k) { k.channel = nullptr; }), kind_rule::names_its_channel);
  EXPECT_EQ(broken([](d::lock_kind& k) { k.release_call = nullptr; }),
            kind_rule::releases_its_holds);
  EXPECT_EQ(broken([](d::lock_kind& k) { k.force_call = nullptr; }), kind_rule::releases_its_holds);
  // A latch takes no hold: a release of one would run on nothing.
  EXPECT_EQ(broken([](d::lock_kind& k) { k.takes_hold = false; }),
            kind_rule::holdless_releases_nothing);
  EXPECT_EQ(broken([](d::lock_kind& k) {
              k.takes_hold = false;
              k.release_call = nullptr;
              k.force_call = nullptr;
            }),
            kind_rule::kept);
  EXPECT_EQ(broken([](d::lock_kind& k) { k.waiting = d::wait_mode::poll; }),
            kind_rule::polling_backs_off);
  EXPECT_EQ(broken([](d::lock_kind& k) { k.backoff = &no_backoff; }), kind_rule::polling_backs_off);
  EXPECT_EQ(broken([](d::lock_kind& k) { k.on_message = nullptr; }),
            kind_rule::listener_reads_messages);
  // A polling kind listens on nothing: it may leave on_message out.
  EXPECT_EQ(broken([](d::lock_kind& k) {
              k.waiting = d::wait_mode::poll;
              k.backoff = &no_backoff;
              k.on_message = nullptr;
            }),
            kind_rule::kept);
  EXPECT_EQ(broken([](d::lock_kind& k) { k.waiting = d::wait_mode::queue; }),
            kind_rule::queue_is_left);
  EXPECT_EQ(broken([](d::lock_kind& k) { k.count_question = &d::hash_lock::reentrant_question; }),
            kind_rule::count_has_reader);
  EXPECT_EQ(broken([](d::lock_kind& k) { k.count_of = &count_of; }), kind_rule::count_has_reader);
  EXPECT_EQ(broken([](d::lock_kind& k) {
              k.waiting = d::wait_mode::poll;
              k.backoff = &no_backoff;
              k.transfer_call = minimal.release_call;
            }),
            kind_rule::poll_hands_nothing_over);
  EXPECT_EQ(broken([](d::lock_kind& k) { k.push_claim = &claim; }), kind_rule::push_needs_queue);
  // An inspect row that cannot ask, read or claim, or names no type the probe reads.
  static const d::probe_row whole = *d::fair_kind.probe;
  static d::probe_row row;
  const auto with_row = [](auto spoil) {
    row = whole;
    spoil(row);
    return broken([](d::lock_kind& k) { k.probe = &row; });
  };
  EXPECT_EQ(with_row([](d::probe_row&) {}), kind_rule::kept);
  EXPECT_EQ(with_row([](d::probe_row& r) { r.claim = nullptr; }), kind_rule::probe_is_whole);
  EXPECT_EQ(with_row([](d::probe_row& r) { r.command_count = 0; }), kind_rule::probe_is_whole);
  EXPECT_EQ(with_row([](d::probe_row& r) { r.commands = nullptr; }), kind_rule::probe_is_whole);
  // A row with nothing of its own to ask (the reentrant lock's: a hash with owners).
  EXPECT_EQ(with_row([](d::probe_row& r) {
              r.commands = nullptr;
              r.command_count = 0;
              r.read = nullptr;
            }),
            kind_rule::kept);
  EXPECT_EQ(with_row([](d::probe_row& r) { r.stored_as = "list"; }), kind_rule::probe_is_whole);
}

TEST(kind_rules, every_registered_kind_keeps_them_and_is_listed_once) {
  std::set<const d::lock_kind*> seen;
  std::set<std::string_view> names;
  for (const d::lock_kind* k : d::registered_kinds()) {
    EXPECT_EQ(d::broken_rule(*k), kind_rule::kept) << k->name;
    EXPECT_TRUE(seen.insert(k).second) << k->name;
    EXPECT_TRUE(names.insert(k->name).second) << k->name;
  }
  EXPECT_EQ(seen.size(), 13u);
  EXPECT_EQ(seen.count(&d::count_down_latch_kind), 1u);
  EXPECT_EQ(seen.count(&d::election_kind), 1u);
}

// rlock::inspect knows no kind: each key_kind a lock can be is read by one registered row, in
// its kind's own file, and the rows of one type claim in an order of their own.
TEST(kind_rules, every_kind_inspect_tells_apart_has_one_registered_row) {
  std::map<rlock::key_kind, const d::probe_row*> rows;
  std::set<std::pair<std::string_view, int>> orders;
  for (const d::lock_kind* k : d::registered_kinds()) {
    if (k->probe == nullptr) continue;
    const auto [at, first] = rows.emplace(k->probe->kind, k->probe);
    if (!first) {
      // Two descriptors of one kind (a read-write lock's halves) share the row.
      EXPECT_EQ(at->second, k->probe) << k->name;
      continue;
    }
    EXPECT_TRUE(orders.emplace(k->probe->stored_as, k->probe->order).second) << k->name;
    std::vector<d::probe_command> asked;
    if (k->probe->commands != nullptr) k->probe->commands("orders", "NUMSUB", asked);
    EXPECT_EQ(asked.size(), k->probe->command_count) << k->name;
    for (const auto& c : asked) {
      const auto& name = c.back() == "WITHSCORES" || c.back() == "-1" ? c[1] : c.back();
      EXPECT_NE(name.find("{orders}"), std::string::npos) << k->name << ": " << name;
    }
  }
  using rlock::key_kind;
  for (const auto kind : {key_kind::reentrant, key_kind::fair, key_kind::fenced,
                          key_kind::read_write, key_kind::semaphore, key_kind::count_down_latch}) {
    EXPECT_EQ(rows.count(kind), 1u) << rlock::to_string(kind);
  }
  EXPECT_EQ(rows.size(), 6u);
}

// Each kind checks its own section of the config (lock_kind::settings_error), and the client
// asks every registered kind: a bad value is named by the kind that reads it, in words that say
// what it must be.
TEST(kind_rules, each_kind_names_what_is_wrong_with_its_own_settings) {
  const auto first_error = [](const rlock::config& c) {
    for (const d::lock_kind* k : d::registered_kinds()) {
      if (k->settings_error == nullptr) continue;
      if (auto why = k->settings_error(c); !why.empty()) return why;
    }
    return std::string();
  };
  EXPECT_EQ(first_error(rlock::config{}), "");
  const auto error_of = [&](auto&& spoil) {
    rlock::config c;
    spoil(c);
    return first_error(c);
  };
  using namespace std::chrono_literals;
  EXPECT_EQ(error_of([](rlock::config& c) { c.fair_lock.wait_timeout = 0ms; }),
            "fair_lock.wait_timeout must be positive and at most 2147483647 ms, got 0 ms");
  EXPECT_EQ(error_of([](rlock::config& c) { c.fair_lock.handoff_claim = -5ms; }),
            "fair_lock.handoff_claim must be positive, got -5 ms");
  EXPECT_NE(error_of([](rlock::config& c) {
              c.spin_lock.multiplier = 0;
            }).find("spin_lock backoff needs initial > 0"),
            std::string::npos);
  EXPECT_NE(error_of([](rlock::config& c) {
              c.read_write_lock.writer_mark_lease = 99ms;
            }).find("read_write_lock.writer_mark_lease must be at least 100 ms"),
            std::string::npos);
  EXPECT_EQ(error_of([](rlock::config& c) {
              c.read_write_lock.priority = static_cast<rlock::rw_priority>(7);
            }),
            "read_write_lock.priority is not an rw_priority (7)");
  EXPECT_NE(error_of([](rlock::config& c) {
              c.fenced_lock.token_idle_ttl = 999ms;
            }).find("fenced_lock.token_idle_ttl must be 0"),
            std::string::npos);
}

}  // namespace
