#include "engine/probe_row.hpp"

#include "names/names.hpp"
#include "session/redis_error.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace rlock::detail {

failure probe_failure(std::span<const resp3::value> answers, std::size_t i,
                      std::string_view command) {
  if (i >= answers.size()) {
    return failure(errc::protocol_error, fmt::format("inspect: no answer to {}", command));
  }
  if (answers[i].is_error()) {
    return failure(errc_of_reply(answers[i].str),
                   fmt::format("inspect: {}: {}", command, answers[i].str));
  }
  return {};
}

std::optional<std::int64_t> probe_int(std::string_view s) {
  std::int64_t v = 0;
  const auto* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc{} || p != end || s.empty()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> probe_numsub(const resp3::value& v) {
  if (v.elements.size() != 2) return std::nullopt;
  return v.elements[1].integer;
}

std::optional<std::int64_t> probe_server_now(const resp3::value& time) {
  if (time.elements.size() != 2) return std::nullopt;
  const auto s = probe_int(time.elements[0].str);
  const auto us = probe_int(time.elements[1].str);
  // A clock a double holds exactly (2^53 ms, 285 000 years), never an overflow.
  if (!s || !us || *s < 0 || *s > (std::int64_t{1} << 53) / 1000 || *us < 0 || *us > 999'999) {
    return std::nullopt;
  }
  return *s * 1000 + *us / 1000;
}

double probe_score(const resp3::value& v) {
  if (v.type == resp3::type::double_type) return v.real;
  double d = 0;
  std::from_chars(v.str.data(), v.str.data() + v.str.size(), d);
  return d;
}

std::optional<std::chrono::milliseconds> probe_until(const resp3::value& score, std::int64_t now) {
  const double in = probe_score(score) - static_cast<double>(now);
  constexpr double limit = static_cast<double>(std::int64_t{1} << 53);
  if (!std::isfinite(in) || in > limit || in < -limit) return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(in));
}

std::string probe_name(void (*append)(std::string_view, std::string&), std::string_view key) {
  std::string name;
  append(key, name);
  return name;
}

std::string probe_tagged(std::string_view prefix, std::string_view key) {
  std::string name;
  append_tagged_name(prefix, key, name);
  return name;
}

}  // namespace rlock::detail
