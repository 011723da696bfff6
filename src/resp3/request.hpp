#pragma once

#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace rlock::detail::resp3 {

/// Appends one command as a RESP array of bulk strings ("*N\r\n$len\r\narg\r\n...").
/// Arguments are binary safe: they may hold any bytes, including '\0' and "\r\n".
void append_command(std::string& out, std::initializer_list<std::string_view> args);
void append_command(std::string& out, std::span<const std::string_view> args);
void append_command(std::string& out, std::span<const std::string> args);

/// The pieces of append_command, for callers that assemble a command from several ranges
/// without gathering them first: "*N\r\n", then N bulk strings "$len\r\narg\r\n".
void append_array_header(std::string& out, std::size_t n);
void append_bulk(std::string& out, std::string_view arg);

/// One-pass encoding into a buffer sized once: the exact sizes of the pieces, then writers that
/// put them at `p` and return the end. The hot path (every lock command) measures, resizes its
/// buffer once and writes with no capacity check per piece.
/// Inline, with the one- and two-digit counts (nearly every length in a lock command) written
/// without a division loop.
inline std::size_t header_size(std::size_t n) noexcept {
  if (n < 10) return 4;  // type byte, digit, CRLF
  if (n < 100) return 5;
  std::size_t digits = 3;
  for (n /= 1000; n != 0; n /= 10) ++digits;
  return 1 + digits + 2;
}
inline std::size_t bulk_size(std::string_view arg) noexcept {
  return header_size(arg.size()) + arg.size() + 2;
}
/// Writes the decimal digits of `n` (>= 100) at `p`.
char* put_long_count(char* p, std::size_t n) noexcept;
inline char* put_header(char* p, char kind, std::size_t n) noexcept {
  *p++ = kind;
  if (n < 10) {
    *p++ = static_cast<char>('0' + n);
  } else if (n < 100) {
    *p++ = static_cast<char>('0' + n / 10);
    *p++ = static_cast<char>('0' + n % 10);
  } else {
    p = put_long_count(p, n);
  }
  *p++ = '\r';
  *p++ = '\n';
  return p;
}
inline char* put_bulk(char* p, std::string_view arg) noexcept {
  p = put_header(p, '$', arg.size());
  if (!arg.empty()) std::memcpy(p, arg.data(), arg.size());
  p += arg.size();
  *p++ = '\r';
  *p++ = '\n';
  return p;
}

}  // namespace rlock::detail::resp3
