#pragma once

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

}  // namespace rlock::detail::resp3
