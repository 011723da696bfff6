#include "resp3/request.hpp"

#include <charconv>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <limits>

namespace rlock::detail::resp3 {

char* put_long_count(char* p, std::size_t n) noexcept {
  // Cannot fail: the caller sized the buffer with header_size.
  return std::to_chars(p, p + std::numeric_limits<std::size_t>::digits10 + 1, n).ptr;
}

namespace {

template <typename Range>
void append_all(std::string& out, const Range& args) {
  std::size_t bytes = header_size(std::size(args));
  for (const std::string_view arg : args) bytes += bulk_size(arg);
  const std::size_t at = out.size();
  // Never below geometric growth when pipelining many.
  if (out.capacity() < at + bytes) out.reserve(std::max(at + bytes, 2 * out.capacity()));
  out.resize(at + bytes);
  char* p = put_header(out.data() + at, '*', std::size(args));
  for (const std::string_view arg : args) p = put_bulk(p, arg);
}

}  // namespace

void append_command(std::string& out, std::initializer_list<std::string_view> args) {
  append_all(out, args);
}

void append_command(std::string& out, std::span<const std::string_view> args) {
  append_all(out, args);
}

void append_command(std::string& out, std::span<const std::string> args) { append_all(out, args); }

void append_array_header(std::string& out, std::size_t n) {
  const std::size_t at = out.size();
  out.resize(at + header_size(n));
  put_header(out.data() + at, '*', n);
}

void append_bulk(std::string& out, std::string_view arg) {
  const std::size_t at = out.size();
  out.resize(at + bulk_size(arg));
  put_bulk(out.data() + at, arg);
}

}  // namespace rlock::detail::resp3
