// Runs the example programs against a private server: they must succeed and say what they do.
#include "support/redis_server.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <regex>
#include <string>
#include <sys/wait.h>

namespace examples_test {

struct result {
  int status = -1;
  std::string output;
};

/// Runs `program args` (bounded by 60 seconds through coreutils' timeout) and collects its
/// standard output and error.
result run_example(const std::string& program, const std::string& args) {
  const std::string command = "timeout 60 '" + program + "' " + args + " 2>&1";
  result r;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr) {
    r.output += buffer.data();
  }
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// Runs `program url`, the url of this binary's private server.
result run_example(const std::string& program) {
  return run_example(program,
                     "redis://127.0.0.1:" + std::to_string(rlock::test::shared_server().port()));
}

TEST(examples, quick_start) {
  const auto r = run_example(RLOCK_EXAMPLE_QUICK_START);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("task 1 released it"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("task 2 released it"), std::string::npos) << r.output;
}

TEST(examples, blocking_quick_start) {
  const auto r = run_example(RLOCK_EXAMPLE_BLOCKING_QUICK_START);
  EXPECT_EQ(r.status, 0) << r.output;
  for (const char* line : {"thread 0 holds", "thread 1 holds", "thread 2 holds"}) {
    EXPECT_NE(r.output.find(line), std::string::npos) << r.output;
  }
}

TEST(examples, demo_shows_notification_expiry_reentry_and_renewal) {
  const auto r = run_example(RLOCK_EXAMPLE_DEMO);
  EXPECT_EQ(r.status, 0) << r.output;
  for (const char* line :
       {"re-entered: hold count 2", "still holds it after 2 leases", "woken by unlock notification",
        "woken when the holder's lease ran out", "blocking thread holds it via std::scoped_lock"}) {
    EXPECT_NE(r.output.find(line), std::string::npos) << "missing '" << line << "' in\n"
                                                      << r.output;
  }
}

TEST(examples, account_service_loses_no_update) {
  const auto r = run_example(RLOCK_EXAMPLE_ACCOUNT_SERVICE);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("served 200 transfers; total balance 5000 (no update lost)"),
            std::string::npos)
      << r.output;
}

TEST(examples, blocking_condition_variable_queue) {
  const auto r = run_example(RLOCK_EXAMPLE_BLOCKING_CONDITION);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("consumed 30 items; queue empty: true"), std::string::npos) << r.output;
}

TEST(examples, long_job_renewed_then_aborted_when_lost) {
  const auto r = run_example(RLOCK_EXAMPLE_LONG_JOB);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("job 1 finished 25 steps"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("job 2 aborted"), std::string::npos) << r.output;
}

TEST(examples, leader_runs_the_scheduler_only_while_leading_and_prints_every_change) {
  const auto r = run_example(RLOCK_EXAMPLE_LEADER);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("3 terms led, at most 1 scheduler(s) at once, terms increasing"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("observer: resigned"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("): scheduler tick 3"), std::string::npos) << r.output;
}

TEST(examples, try_lock_with_a_deadline) {
  const auto r = run_example(RLOCK_EXAMPLE_TRY_LOCK_DEADLINE);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("deadline 100 ms: gave up"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("deadline 2 s: acquired"), std::string::npos) << r.output;
}

TEST(examples, cancellation_leaves_nothing_behind) {
  const auto r = run_example(RLOCK_EXAMPLE_CANCELLATION);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("gave up after 100 ms; waiters left: 0, holds: 0"), std::string::npos)
      << r.output;
}

TEST(examples, redisson_interop_prints_the_shared_layout) {
  const auto r = run_example(RLOCK_EXAMPLE_REDISSON_INTEROP);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("channel redisson_lock__channel:{rlock-example:orders:42}"),
            std::string::npos)
      << r.output;
}

#ifdef RLOCK_EXAMPLE_SPDLOG_LOGGING
TEST(examples, spdlog_logging_shows_rlock_lines_through_spdlog) {
  const auto r = run_example(RLOCK_EXAMPLE_SPDLOG_LOGGING);
  EXPECT_EQ(r.status, 0) << r.output;
  // spdlog's pattern around rlock's own line: the slow acquisition of job 2.
  EXPECT_NE(r.output.find("[rlock] [warning] "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("acquired after"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("job 2 holds the lock"), std::string::npos) << r.output;
}
#endif

/// The fenced examples' story: writer A, stopped past its lease, is refused with its token; B
/// writes with the next token and the record holds its value.
void expect_the_stale_writer_refused(const std::string& output) {
  const std::regex b("B: write with token ([0-9]+) accepted");
  const std::regex a("A: write with token ([0-9]+) refused");
  std::smatch bm;
  std::smatch am;
  ASSERT_TRUE(std::regex_search(output, bm, b)) << output;
  ASSERT_TRUE(std::regex_search(output, am, a)) << output;
  EXPECT_EQ(std::stoll(bm[1].str()), std::stoll(am[1].str()) + 1) << output;
  EXPECT_NE(output.find("record holds \"B\""), std::string::npos) << output;
}

#ifdef RLOCK_EXAMPLE_FENCED_WRITE
TEST(examples, fenced_write_refuses_the_stale_holder) {
  const auto r = run_example(RLOCK_EXAMPLE_FENCED_WRITE);
  EXPECT_EQ(r.status, 0) << r.output;
  // Tokens continue from whatever the counter holds; B's is A's + 1.
  expect_the_stale_writer_refused(r.output);
}
#endif

TEST(examples, quorum_fenced_write_refuses_the_stale_holder_over_three_servers) {
  rlock::test::redis_server one;
  rlock::test::redis_server two;
  rlock::test::redis_server three;
  std::string urls;
  for (const auto* s : {&one, &two, &three}) {
    urls += " redis://127.0.0.1:" + std::to_string(s->port());
  }
  const auto r = run_example(RLOCK_EXAMPLE_QUORUM_FENCED_WRITE, urls);
  EXPECT_EQ(r.status, 0) << r.output;
  // B's raise found A's token on the majority and went one past it.
  expect_the_stale_writer_refused(r.output);
  EXPECT_NE(r.output.find("acquired on a majority of 3 nodes"), std::string::npos) << r.output;
}

}  // namespace examples_test
