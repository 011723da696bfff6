#include "resp3/parser.hpp"
#include "resp3/request.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::detail::resp3 {
namespace {

using namespace std::string_literals;

/// Parses `wire`, expecting exactly `count` values and nothing left over.
std::vector<value> parse_all(std::string_view wire, std::size_t count) {
  parser p;
  p.feed(wire);
  std::vector<value> out;
  std::error_code ec;
  while (auto v = p.next(ec)) out.push_back(std::move(*v));
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(out.size(), count);
  EXPECT_EQ(p.buffered(), 0u);
  return out;
}

void expect_command(const value& v, const std::vector<std::string>& args) {
  ASSERT_EQ(v.type, type::array);
  ASSERT_EQ(v.elements.size(), args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    EXPECT_EQ(v.elements[i].type, type::blob_string);
    EXPECT_EQ(v.elements[i].str, args[i]) << "argument " << i;
  }
}

TEST(resp3_request, encodes_array_of_bulk_strings) {
  std::string out;
  append_command(out, {"SET", "key", "value"});
  EXPECT_EQ(out, "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n");
}

TEST(resp3_request, empty_argument_and_empty_command) {
  std::string out;
  append_command(out, {"GET", ""});
  EXPECT_EQ(out, "*2\r\n$3\r\nGET\r\n$0\r\n\r\n");
  out.clear();
  append_command(out, std::span<const std::string_view>{});
  EXPECT_EQ(out, "*0\r\n");
}

TEST(resp3_request, appends_without_clearing) {
  std::string out = "prefix";
  append_command(out, {"PING"});
  append_command(out, {"ECHO", "hi"});
  EXPECT_EQ(out, "prefix*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n");
}

TEST(resp3_request, span_overloads) {
  const std::vector<std::string> strings = {"HSET", "h", "field", "10"};
  const std::vector<std::string_view> views = {"HSET", "h", "field", "10"};
  const std::array<std::string_view, 4> array = {"HSET", "h", "field", "10"};
  std::string a;
  std::string b;
  std::string c;
  std::string d;
  append_command(a, strings);
  append_command(b, views);
  append_command(c, array);
  append_command(d, {"HSET", "h", "field", "10"});
  EXPECT_EQ(a, "*4\r\n$4\r\nHSET\r\n$1\r\nh\r\n$5\r\nfield\r\n$2\r\n10\r\n");
  EXPECT_EQ(b, a);
  EXPECT_EQ(c, a);
  EXPECT_EQ(d, a);
}

TEST(resp3_request, binary_safe_arguments) {
  const std::string binary = "a\0b\r\n$3\r\n*1 \xc3\xa9\xe2\x82\xac"s;
  std::string out;
  append_command(out, {"SET", binary, std::string_view("\0", 1)});
  EXPECT_EQ(out, "*3\r\n$3\r\nSET\r\n$" + std::to_string(binary.size()) + "\r\n" + binary +
                     "\r\n$1\r\n\0\r\n"s);
  auto values = parse_all(out, 1);
  ASSERT_EQ(values.size(), 1u);
  expect_command(values[0], {"SET", binary, "\0"s});
}

TEST(resp3_request, round_trip_through_parser) {
  const std::vector<std::vector<std::string>> commands = {
      {"EVALSHA", "0123456789abcdef", "1", "lock:{name}", "30000", "uuid:thread-1"},
      {"PING"},
      {"SET", "k", std::string(100000, 'v'), "PX", "30000", "NX"},
      {"PUBLISH", "channel", "line1\nline2\r\n\r\nend"},
      {"SET", "emoji", "\xf0\x9f\x94\x92", "", " "},
  };
  std::string out;
  for (const auto& command : commands) append_command(out, command);
  auto values = parse_all(out, commands.size());
  ASSERT_EQ(values.size(), commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) expect_command(values[i], commands[i]);
}

}  // namespace
}  // namespace rlock::detail::resp3
