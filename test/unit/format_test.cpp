// The fmt formatters of the public types: readable names, and no password in a printed config.
#include <gtest/gtest.h>

#include <rlock/format.hpp>

namespace {

TEST(format, enums_print_their_names) {
  EXPECT_EQ(fmt::format("{}", rlock::errc::not_owner),
            rlock::make_error_code(rlock::errc::not_owner).message());
  EXPECT_EQ(fmt::format("{}", rlock::wake_reason::notification), "notification");
  EXPECT_EQ(fmt::format("{}", rlock::connection_state::reconnecting), "reconnecting");
  EXPECT_EQ(fmt::format("[{:>7}]", rlock::log_level::info), "[   info]");  // format specs apply
}

TEST(format, a_config_never_shows_its_password) {
  auto cfg = rlock::config::from_url("redis://svc:s3cr3t-pw@cache.internal:6380/2");
  const auto text = fmt::format("{}", cfg);
  EXPECT_EQ(text.find("s3cr3t"), std::string::npos) << text;
  EXPECT_NE(text.find("redis://svc:***@cache.internal:6380/2"), std::string::npos) << text;
  rlock::config plain;
  EXPECT_NE(fmt::format("{}", plain).find("redis://127.0.0.1:6379/0"), std::string::npos);
}

}  // namespace
