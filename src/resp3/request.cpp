#include "resp3/request.hpp"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <iterator>
#include <limits>

namespace rlock::detail::resp3 {
namespace {

// Room for a type byte, the digits of any std::size_t and "\r\n".
constexpr std::size_t max_header = 1 + std::numeric_limits<std::size_t>::digits10 + 1 + 2;

void append_header(std::string& out, char kind, std::size_t n) {
  char digits[std::numeric_limits<std::size_t>::digits10 + 1];
  const auto [end, ec] = std::to_chars(std::begin(digits), std::end(digits), n);
  static_cast<void>(ec);  // cannot fail: the buffer fits every std::size_t
  out.push_back(kind);
  out.append(digits, end);
  out.append("\r\n");
}

template <typename Range>
void append_all(std::string& out, const Range& args) {
  std::size_t bytes = max_header;
  for (const auto& arg : args) bytes += max_header + arg.size() + 2;
  // One allocation per command, but never below geometric growth when pipelining many.
  if (out.capacity() - out.size() < bytes) {
    out.reserve(std::max(out.size() + bytes, 2 * out.capacity()));
  }
  append_header(out, '*', std::size(args));
  for (const std::string_view arg : args) {
    append_header(out, '$', arg.size());
    out.append(arg);
    out.append("\r\n");
  }
}

}  // namespace

void append_command(std::string& out, std::initializer_list<std::string_view> args) {
  append_all(out, args);
}

void append_command(std::string& out, std::span<const std::string_view> args) {
  append_all(out, args);
}

void append_command(std::string& out, std::span<const std::string> args) { append_all(out, args); }

void append_array_header(std::string& out, std::size_t n) { append_header(out, '*', n); }

void append_bulk(std::string& out, std::string_view arg) {
  append_header(out, '$', arg.size());
  out.append(arg);
  out.append("\r\n");
}

}  // namespace rlock::detail::resp3
