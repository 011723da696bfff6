#pragma once

#include <charconv>
#include <cstdint>
#include <iterator>
#include <string_view>

namespace rlock::detail {

/// A millisecond count as a script argument, stored in place: no allocation per command.
class decimal {
 public:
  decimal() = default;
  explicit decimal(std::int64_t v) noexcept { assign(v); }
  void assign(std::int64_t v) noexcept {
    const auto [end, ec] = std::to_chars(std::begin(digits_), std::end(digits_), v);
    static_cast<void>(ec);  // cannot fail: the buffer fits every int64
    size_ = static_cast<std::uint8_t>(end - digits_);
  }
  std::string_view view() const noexcept { return {digits_, size_}; }

 private:
  char digits_[20];  // INT64_MIN: a sign and 19 digits
  std::uint8_t size_ = 0;
};

}  // namespace rlock::detail
