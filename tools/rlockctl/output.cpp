#include "output.hpp"

#include <boost/json/serialize.hpp>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace rlockctl {

void output::emit(std::string_view text, const boost::json::object& object) const {
  if (json_) {
    fmt::print("{}\n", boost::json::serialize(object));
  } else {
    fmt::print("{}\n", text);
  }
  std::fflush(stdout);
}

void output::error(std::string_view code, std::string_view message) const {
  if (json_) {
    boost::json::object o{{"error", code}, {"message", message}};
    fmt::print(stderr, "{}\n", boost::json::serialize(o));
  } else {
    fmt::print(stderr, "rlockctl: {}\n", message);
  }
  std::fflush(stderr);
}

std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string clock_text() {
  const auto ms = now_ms();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm local{};
  localtime_r(&secs, &local);
  return fmt::format("{:%H:%M:%S}.{:03}", local, ms % 1000);
}

}  // namespace rlockctl
