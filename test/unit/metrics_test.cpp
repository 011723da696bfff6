// The duration histogram and the Prometheus rendering, without a server: the exposition must
// follow the text format's rules (HELP and TYPE before a family's samples, valid names, counters
// ending in _total, cumulative buckets ending with +Inf equal to _count, escaped label values).
#include "rlock/metrics.hpp"

#include "metrics/log_histogram.hpp"
#include "rlock/error.hpp"

#include <boost/system/system_error.hpp>

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

using namespace std::chrono_literals;

TEST(log_histogram, buckets_are_upper_bounds_and_the_count_is_their_sum) {
  rlock::detail::log_histogram h;
  h.observe(50us);   // <= 0.0001
  h.observe(100us);  // == 0.0001: same bucket (le is inclusive)
  h.observe(3ms);    // <= 0.005
  h.observe(20s);    // above every bound
  h.observe(-1ms);   // clock trouble: counted in the first bucket, adds nothing to the sum
  const auto s = h.snapshot();
  ASSERT_EQ(s.counts.size(), s.upper_bounds.size() + 1);
  EXPECT_EQ(s.counts[0], 3u);
  EXPECT_EQ(s.counts[5], 1u);  // 0.005
  EXPECT_EQ(s.counts.back(), 1u);
  EXPECT_EQ(s.count, 5u);
  EXPECT_NEAR(s.sum, 20.00315, 1e-9);
}

/// The exposition's lines, checked against the format's rules; returns sample name+labels →
/// value.
std::map<std::string, std::string> check_exposition(const std::string& text) {
  std::map<std::string, std::string> samples;
  std::map<std::string, std::string> types;  // family → type
  std::set<std::string> helped;
  const std::regex help(R"(^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+$)");
  const std::regex type(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram)$)");
  const std::regex sample(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\\\|\\"|\\n)*")(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\\\|\\"|\\n)*")*\})? (\S+)$)");
  std::istringstream in(text);
  std::string line;
  std::string family;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, help)) {
      family = m[1];
      EXPECT_TRUE(helped.insert(family).second) << "HELP twice: " << line;
    } else if (std::regex_match(line, m, type)) {
      EXPECT_EQ(m[1].str(), family) << "TYPE without its HELP first: " << line;
      types[family] = m[2];
      if (m[2] == "counter") {
        EXPECT_TRUE(family.ends_with("_total")) << line;
      }
    } else if (std::regex_match(line, m, sample)) {
      const std::string name = m[1];
      EXPECT_TRUE(name == family || name == family + "_bucket" || name == family + "_sum" ||
                  name == family + "_count")
          << "sample outside its family " << family << ": " << line;
      const std::string key = line.substr(0, line.rfind(' '));
      EXPECT_TRUE(samples.emplace(key, line.substr(line.rfind(' ') + 1)).second)
          << "duplicate sample: " << line;
    } else {
      ADD_FAILURE() << "not a valid exposition line: '" << line << "'";
    }
  }
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  return samples;
}

TEST(prometheus, renders_counters_gauges_and_cumulative_histograms) {
  rlock::detail::log_histogram wait;
  wait.observe(200us);
  wait.observe(2ms);
  wait.observe(2ms);
  rlock::client_metrics m;
  m.acquisitions_immediate = 7;
  m.acquisitions_notification = 2;
  m.acquisitions_expiry = 1;
  m.acquire_wait = wait.snapshot();
  m.hold = rlock::detail::log_histogram{}.snapshot();
  m.renewal_calls = 4;
  m.waiters = 3;
  m.connected = true;
  const auto text = rlock::to_prometheus(m, "rlock", {{"service", "orders \"eu\"\\1\n"}});
  const auto s = check_exposition(text);
  const std::string svc = R"(service="orders \"eu\"\\1\n")";
  EXPECT_EQ(s.at("rlock_acquisitions_total{" + svc + ",wake=\"immediate\"}"), "7");
  EXPECT_EQ(s.at("rlock_acquisitions_total{" + svc + ",wake=\"expiry\"}"), "1");
  EXPECT_EQ(s.at("rlock_renewal_calls_total{" + svc + "}"), "4");
  EXPECT_EQ(s.at("rlock_waiters{" + svc + "}"), "3");
  EXPECT_EQ(s.at("rlock_connected{" + svc + "}"), "1");
  // Cumulative buckets, non-decreasing, +Inf equal to _count.
  EXPECT_EQ(s.at("rlock_acquire_wait_seconds_bucket{" + svc + ",le=\"0.0001\"}"), "0");
  EXPECT_EQ(s.at("rlock_acquire_wait_seconds_bucket{" + svc + ",le=\"0.00025\"}"), "1");
  EXPECT_EQ(s.at("rlock_acquire_wait_seconds_bucket{" + svc + ",le=\"0.0025\"}"), "3");
  EXPECT_EQ(s.at("rlock_acquire_wait_seconds_bucket{" + svc + ",le=\"10\"}"), "3");
  EXPECT_EQ(s.at("rlock_acquire_wait_seconds_bucket{" + svc + ",le=\"+Inf\"}"), "3");
  EXPECT_EQ(s.at("rlock_acquire_wait_seconds_count{" + svc + "}"), "3");
  EXPECT_EQ(std::stod(s.at("rlock_acquire_wait_seconds_sum{" + svc + "}")), 0.0042);
  std::uint64_t previous = 0;
  for (const double le : rlock::detail::log_histogram::bounds) {
    std::ostringstream key;
    key << "rlock_acquire_wait_seconds_bucket{" << svc << ",le=\"" << le << "\"}";
    const auto v = std::stoull(s.at(key.str()));
    EXPECT_GE(v, previous) << key.str();
    previous = v;
  }
  EXPECT_EQ(s.at("rlock_hold_seconds_bucket{" + svc + ",le=\"+Inf\"}"), "0");
}

TEST(prometheus, refuses_names_prometheus_does_not_accept) {
  const rlock::client_metrics m;
  EXPECT_NO_THROW(check_exposition(rlock::to_prometheus(m)));
  EXPECT_NO_THROW(check_exposition(rlock::to_prometheus(m, "app:locks")));
  for (const char* prefix : {"", "9lives", "my-app", "a b"}) {
    try {
      (void)rlock::to_prometheus(m, prefix);
      ADD_FAILURE() << "accepted prefix '" << prefix << "'";
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), rlock::errc::invalid_argument);
    }
  }
  for (const char* label : {"le", "wake", "__name", "a-b", "", "9"}) {
    try {
      (void)rlock::to_prometheus(m, "rlock", {{label, "x"}});
      ADD_FAILURE() << "accepted label '" << label << "'";
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), rlock::errc::invalid_argument);
    }
  }
}

}  // namespace
