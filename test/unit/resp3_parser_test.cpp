#include "resp3/parser.hpp"
#include "rlock/error.hpp"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::detail::resp3 {
namespace {

using namespace std::string_literals;

const std::error_code protocol_error = make_error_code(errc::protocol_error);

struct parsed {
  std::vector<value> values;
  std::error_code ec;
};

/// Drains every complete value; stops at the first error.
void drain(parser& p, parsed& out) {
  while (!out.ec) {
    auto v = p.next(out.ec);
    if (!v) break;
    out.values.push_back(std::move(*v));
  }
}

/// Feeds `input` in pieces of `piece` bytes (0: all at once), draining after each feed.
parsed parse(std::string_view input, std::size_t piece = 0, parser_limits limits = {}) {
  parser p(limits);
  parsed out;
  if (piece == 0) piece = std::max<std::size_t>(input.size(), 1);
  for (std::size_t at = 0; at < input.size() && !out.ec; at += piece) {
    p.feed(input.substr(at, piece));
    drain(p, out);
  }
  if (input.empty()) drain(p, out);
  return out;
}

/// Exactly one value, fed whole, with no error.
value parse_one(std::string_view input) {
  parsed r = parse(input);
  EXPECT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.values.size(), 1u) << "input: " << input;
  return r.values.empty() ? value{} : std::move(r.values.front());
}

std::string type_name(type t) {
  switch (t) {
    case type::simple_string:
      return "simple";
    case type::simple_error:
      return "error";
    case type::number:
      return "number";
    case type::null:
      return "null";
    case type::double_type:
      return "double";
    case type::boolean:
      return "bool";
    case type::blob_error:
      return "blob_error";
    case type::verbatim_string:
      return "verbatim";
    case type::big_number:
      return "big";
    case type::blob_string:
      return "blob";
    case type::array:
      return "array";
    case type::map:
      return "map";
    case type::set:
      return "set";
    case type::attribute:
      return "attribute";
    case type::push:
      return "push";
  }
  return "?";
}

/// A canonical text form, so trees compare with readable failure messages (and nan == nan).
std::string dump(const value& v) {
  std::string s = type_name(v.type);
  if (!v.attributes.empty()) {
    s += "|attr";
    for (const value& a : v.attributes) s += " " + dump(a);
    s += "|";
  }
  switch (v.type) {
    case type::number:
    case type::boolean:
      s += "(" + std::to_string(v.integer) + ")";
      break;
    case type::double_type: {
      char buf[64];
      const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v.real);
      s += "(" + std::string(buf, ec == std::errc{} ? end : buf) + ")";
      break;
    }
    case type::array:
    case type::map:
    case type::set:
    case type::attribute:
    case type::push:
      s += "[";
      for (const value& e : v.elements) s += dump(e) + ",";
      s += "]";
      break;
    case type::null:
      break;
    default:
      s += "(\"" + v.str + "\")";
  }
  return s;
}

std::vector<std::string> dump_all(const std::vector<value>& values) {
  std::vector<std::string> out;
  for (const value& v : values) out.push_back(dump(v));
  return out;
}

/// Valid replies of every shape, used by the split, byte-at-a-time and pipelining tests.
const std::vector<std::string>& corpus() {
  static const std::vector<std::string> replies = {
      "+OK\r\n",
      "+\r\n",
      "-ERR unknown command\r\n",
      ":0\r\n",
      ":-9223372036854775808\r\n",
      ":9223372036854775807\r\n",
      ":+42\r\n",
      "_\r\n",
      ",3.14\r\n",
      ",-inf\r\n",
      ",nan\r\n",
      ",1.5e-3\r\n",
      "#t\r\n",
      "#f\r\n",
      "!21\r\nSYNTAX invalid syntax\r\n",
      "=15\r\ntxt:Some string\r\n",
      "(3492890328409238509324850943850943825024385\r\n",
      "$5\r\nhello\r\n",
      "$0\r\n\r\n",
      "$8\r\na\0b\r\nc\r\n\r\n"s,
      "$-1\r\n",
      "*-1\r\n",
      "*0\r\n",
      "*3\r\n:1\r\n:2\r\n:3\r\n",
      "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n",
      "~3\r\n+a\r\n+b\r\n+c\r\n",
      ">3\r\n+message\r\n+channel\r\n$5\r\nhello\r\n",
      "*2\r\n%1\r\n+k\r\n~2\r\n:1\r\n:2\r\n%0\r\n",
      ">2\r\n+invalidate\r\n*2\r\n*1\r\n$1\r\na\r\n*0\r\n",
      "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n"
      "*2\r\n:2039123\r\n:9543892\r\n",
      "*3\r\n:1\r\n|1\r\n+ttl\r\n:3600\r\n:2\r\n:3\r\n",
      "$?\r\n;4\r\nHell\r\n;5\r\no wor\r\n;1\r\nd\r\n;0\r\n",
      "$?\r\n;0\r\n",
      "*?\r\n:1\r\n:2\r\n.\r\n",
      "%?\r\n+a\r\n:1\r\n+b\r\n:2\r\n.\r\n",
      "~?\r\n.\r\n",
      "*?\r\n*?\r\n$?\r\n;2\r\nab\r\n;0\r\n.\r\n*1\r\n#t\r\n.\r\n",
  };
  return replies;
}

std::string concatenated_corpus() {
  std::string all;
  for (const std::string& r : corpus()) all += r;
  return all;
}

// --- every type ---------------------------------------------------------------------------

TEST(resp3_parser, simple_string_and_error) {
  value v = parse_one("+OK\r\n");
  EXPECT_EQ(v.type, type::simple_string);
  EXPECT_EQ(v.str, "OK");
  EXPECT_FALSE(v.is_error());

  v = parse_one("-WRONGTYPE Operation against a key\r\n");
  EXPECT_EQ(v.type, type::simple_error);
  EXPECT_EQ(v.str, "WRONGTYPE Operation against a key");
  EXPECT_TRUE(v.is_error());
}

TEST(resp3_parser, numbers_cover_int64_range) {
  EXPECT_EQ(parse_one(":0\r\n").integer, 0);
  EXPECT_EQ(parse_one(":-1\r\n").integer, -1);
  EXPECT_EQ(parse_one(":+17\r\n").integer, 17);
  EXPECT_EQ(parse_one(":9223372036854775807\r\n").integer,
            std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(parse_one(":-9223372036854775808\r\n").integer,
            std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(parse_one(":1000\r\n").type, type::number);
}

TEST(resp3_parser, null_and_resp2_nulls) {
  EXPECT_TRUE(parse_one("_\r\n").is_null());
  EXPECT_TRUE(parse_one("$-1\r\n").is_null());
  EXPECT_TRUE(parse_one("*-1\r\n").is_null());
}

TEST(resp3_parser, doubles) {
  EXPECT_DOUBLE_EQ(parse_one(",1.23\r\n").real, 1.23);
  EXPECT_DOUBLE_EQ(parse_one(",-0.5\r\n").real, -0.5);
  EXPECT_DOUBLE_EQ(parse_one(",10\r\n").real, 10.0);
  EXPECT_DOUBLE_EQ(parse_one(",1.5e10\r\n").real, 1.5e10);
  EXPECT_DOUBLE_EQ(parse_one(",-2E-3\r\n").real, -2e-3);
  EXPECT_DOUBLE_EQ(parse_one(",+4.5\r\n").real, 4.5);
  EXPECT_EQ(parse_one(",inf\r\n").real, std::numeric_limits<double>::infinity());
  EXPECT_EQ(parse_one(",-inf\r\n").real, -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(parse_one(",nan\r\n").real));
  EXPECT_EQ(parse_one(",0\r\n").type, type::double_type);
}

TEST(resp3_parser, booleans) {
  value t = parse_one("#t\r\n");
  EXPECT_EQ(t.type, type::boolean);
  EXPECT_EQ(t.integer, 1);
  value f = parse_one("#f\r\n");
  EXPECT_EQ(f.type, type::boolean);
  EXPECT_EQ(f.integer, 0);
}

TEST(resp3_parser, blob_error) {
  value v = parse_one("!21\r\nSYNTAX invalid syntax\r\n");
  EXPECT_EQ(v.type, type::blob_error);
  EXPECT_EQ(v.str, "SYNTAX invalid syntax");
  EXPECT_TRUE(v.is_error());
}

TEST(resp3_parser, verbatim_string_drops_format) {
  value v = parse_one("=15\r\ntxt:Some string\r\n");
  EXPECT_EQ(v.type, type::verbatim_string);
  EXPECT_EQ(v.str, "Some string");
  EXPECT_EQ(parse_one("=4\r\nmkd:\r\n").str, "");
}

TEST(resp3_parser, big_number_keeps_text) {
  value v = parse_one("(3492890328409238509324850943850943825024385\r\n");
  EXPECT_EQ(v.type, type::big_number);
  EXPECT_EQ(v.str, "3492890328409238509324850943850943825024385");
  EXPECT_EQ(parse_one("(-12\r\n").str, "-12");
}

TEST(resp3_parser, blob_strings) {
  value v = parse_one("$5\r\nhello\r\n");
  EXPECT_EQ(v.type, type::blob_string);
  EXPECT_EQ(v.str, "hello");
  value empty = parse_one("$0\r\n\r\n");
  EXPECT_EQ(empty.type, type::blob_string);
  EXPECT_EQ(empty.str, "");
}

TEST(resp3_parser, binary_safe_blob) {
  const std::string body = "a\0b\r\nc\n\r\xff"s;
  const std::string wire = "$" + std::to_string(body.size()) + "\r\n" + body + "\r\n";
  value v = parse_one(wire);
  EXPECT_EQ(v.type, type::blob_string);
  EXPECT_EQ(v.str, body);
  parsed bytewise = parse(wire, 1);
  ASSERT_FALSE(bytewise.ec);
  ASSERT_EQ(bytewise.values.size(), 1u);
  EXPECT_EQ(bytewise.values[0].str, body);
}

TEST(resp3_parser, aggregates) {
  value a = parse_one("*3\r\n:1\r\n$3\r\nfoo\r\n_\r\n");
  ASSERT_EQ(a.type, type::array);
  ASSERT_EQ(a.elements.size(), 3u);
  EXPECT_EQ(a.elements[0].integer, 1);
  EXPECT_EQ(a.elements[1].str, "foo");
  EXPECT_TRUE(a.elements[2].is_null());

  value m = parse_one("%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n");
  ASSERT_EQ(m.type, type::map);
  ASSERT_EQ(m.elements.size(), 4u);
  EXPECT_EQ(m.elements[0].str, "first");
  EXPECT_EQ(m.elements[1].integer, 1);
  EXPECT_EQ(m.elements[2].str, "second");
  EXPECT_EQ(m.elements[3].integer, 2);

  value s = parse_one("~2\r\n+a\r\n+b\r\n");
  ASSERT_EQ(s.type, type::set);
  EXPECT_EQ(s.elements.size(), 2u);

  value p = parse_one(">2\r\n+pubsub\r\n+message\r\n");
  ASSERT_EQ(p.type, type::push);
  EXPECT_TRUE(p.is_push());
  EXPECT_EQ(p.elements.size(), 2u);

  for (const char* empty : {"*0\r\n", "%0\r\n", "~0\r\n", ">0\r\n"}) {
    value e = parse_one(empty);
    EXPECT_NE(e.type, type::null) << empty;
    EXPECT_TRUE(e.elements.empty()) << empty;
  }
}

TEST(resp3_parser, nested_array_of_maps_of_sets) {
  value v = parse_one(
      "*2\r\n"
      "%2\r\n+s1\r\n~2\r\n:1\r\n:2\r\n+s2\r\n~0\r\n"
      "%1\r\n+s3\r\n~1\r\n*1\r\n$1\r\nx\r\n");
  EXPECT_EQ(dump(v),
            "array[map[simple(\"s1\"),set[number(1),number(2),],simple(\"s2\"),set[],],"
            "map[simple(\"s3\"),set[array[blob(\"x\"),],],],]");
}

TEST(resp3_parser, push_with_nested_arrays) {
  value v = parse_one(">3\r\n+invalidate\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n*1\r\n*1\r\n:7\r\n");
  EXPECT_EQ(dump(v),
            "push[simple(\"invalidate\"),array[blob(\"a\"),blob(\"b\"),],"
            "array[array[number(7),],],]");
}

// --- attributes ---------------------------------------------------------------------------

TEST(resp3_parser, attribute_attaches_to_next_value) {
  value v = parse_one(
      "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n"
      "*2\r\n:2039123\r\n:9543892\r\n");
  ASSERT_EQ(v.type, type::array);
  ASSERT_EQ(v.elements.size(), 2u);
  EXPECT_EQ(v.elements[0].integer, 2039123);
  ASSERT_EQ(v.attributes.size(), 2u);
  EXPECT_EQ(v.attributes[0].str, "key-popularity");
  ASSERT_EQ(v.attributes[1].type, type::map);
  EXPECT_EQ(v.attributes[1].elements.size(), 4u);
  EXPECT_TRUE(v.elements[0].attributes.empty());
}

TEST(resp3_parser, attribute_inside_aggregate_annotates_one_element) {
  value v = parse_one("*3\r\n:1\r\n|1\r\n+ttl\r\n:3600\r\n:2\r\n:3\r\n");
  ASSERT_EQ(v.type, type::array);
  ASSERT_EQ(v.elements.size(), 3u);  // the attribute is not an element
  EXPECT_TRUE(v.attributes.empty());
  EXPECT_TRUE(v.elements[0].attributes.empty());
  ASSERT_EQ(v.elements[1].attributes.size(), 2u);
  EXPECT_EQ(v.elements[1].attributes[0].str, "ttl");
  EXPECT_EQ(v.elements[1].attributes[1].integer, 3600);
  EXPECT_TRUE(v.elements[2].attributes.empty());
}

TEST(resp3_parser, attribute_only_is_not_a_value) {
  parser p;
  std::error_code ec;
  p.feed("|1\r\n+a\r\n+b\r\n");
  EXPECT_FALSE(p.next(ec));
  EXPECT_FALSE(ec);
  p.feed("+OK\r\n");
  auto v = p.next(ec);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->str, "OK");
  ASSERT_EQ(v->attributes.size(), 2u);
  EXPECT_EQ(v->attributes[1].str, "b");
}

TEST(resp3_parser, attributes_do_not_leak_to_later_replies) {
  parsed r = parse("|1\r\n+a\r\n+b\r\n+first\r\n+second\r\n");
  ASSERT_FALSE(r.ec);
  ASSERT_EQ(r.values.size(), 2u);
  EXPECT_EQ(r.values[0].attributes.size(), 2u);
  EXPECT_TRUE(r.values[1].attributes.empty());
}

// --- streamed -----------------------------------------------------------------------------

TEST(resp3_parser, streamed_string_is_joined) {
  value v = parse_one("$?\r\n;4\r\nHell\r\n;5\r\no wor\r\n;1\r\nd\r\n;0\r\n");
  EXPECT_EQ(v.type, type::blob_string);
  EXPECT_EQ(v.str, "Hello word");
  value empty = parse_one("$?\r\n;0\r\n");
  EXPECT_EQ(empty.type, type::blob_string);
  EXPECT_EQ(empty.str, "");
}

TEST(resp3_parser, streamed_aggregates) {
  value a = parse_one("*?\r\n:1\r\n:2\r\n:3\r\n.\r\n");
  EXPECT_EQ(dump(a), "array[number(1),number(2),number(3),]");
  value m = parse_one("%?\r\n+a\r\n:1\r\n+b\r\n:2\r\n.\r\n");
  EXPECT_EQ(dump(m), "map[simple(\"a\"),number(1),simple(\"b\"),number(2),]");
  value s = parse_one("~?\r\n+x\r\n.\r\n");
  EXPECT_EQ(dump(s), "set[simple(\"x\"),]");
  value e = parse_one("*?\r\n.\r\n");
  EXPECT_EQ(dump(e), "array[]");
}

TEST(resp3_parser, streamed_nested_in_streamed) {
  value v = parse_one("*?\r\n*?\r\n$?\r\n;2\r\nab\r\n;0\r\n.\r\n*1\r\n#t\r\n.\r\n");
  EXPECT_EQ(dump(v), "array[array[blob(\"ab\"),],array[bool(1),],]");
}

// --- incremental feeding ------------------------------------------------------------------

TEST(resp3_parser, byte_at_a_time_matches_whole) {
  for (const std::string& reply : corpus()) {
    parsed whole = parse(reply);
    parsed bytewise = parse(reply, 1);
    ASSERT_FALSE(whole.ec) << reply;
    ASSERT_FALSE(bytewise.ec) << reply;
    ASSERT_EQ(whole.values.size(), 1u) << reply;
    EXPECT_EQ(dump_all(bytewise.values), dump_all(whole.values)) << reply;
  }
}

TEST(resp3_parser, split_at_every_position) {
  for (const std::string& reply : corpus()) {
    const std::string expected = dump(parse_one(reply));
    for (std::size_t cut = 0; cut <= reply.size(); ++cut) {
      parser p;
      parsed r;
      p.feed(std::string_view(reply).substr(0, cut));
      drain(p, r);
      ASSERT_FALSE(r.ec) << reply << " cut " << cut;
      if (cut < reply.size()) {
        ASSERT_TRUE(r.values.empty()) << reply << " cut " << cut;
      }
      p.feed(std::string_view(reply).substr(cut));
      drain(p, r);
      ASSERT_FALSE(r.ec) << reply << " cut " << cut;
      ASSERT_EQ(r.values.size(), 1u) << reply << " cut " << cut;
      EXPECT_EQ(dump(r.values[0]), expected) << reply << " cut " << cut;
      EXPECT_EQ(p.buffered(), 0u);
    }
  }
}

TEST(resp3_parser, pipelined_replies_come_out_in_order) {
  std::vector<std::string> expected;
  for (const std::string& reply : corpus()) expected.push_back(dump(parse_one(reply)));
  const std::string all = concatenated_corpus();
  for (std::size_t piece :
       {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{7}, std::size_t{64}}) {
    parsed r = parse(all, piece);
    ASSERT_FALSE(r.ec) << "piece " << piece;
    EXPECT_EQ(dump_all(r.values), expected) << "piece " << piece;
  }
}

TEST(resp3_parser, next_returns_one_value_at_a_time) {
  parser p;
  std::error_code ec;
  p.feed(":1\r\n:2\r\n:3");
  EXPECT_EQ(p.next(ec)->integer, 1);
  EXPECT_EQ(p.buffered(), 6u);
  EXPECT_EQ(p.next(ec)->integer, 2);
  EXPECT_FALSE(p.next(ec));
  EXPECT_FALSE(ec);
  EXPECT_EQ(p.buffered(), 2u);
  p.feed("\r\n");
  EXPECT_EQ(p.next(ec)->integer, 3);
  EXPECT_EQ(p.buffered(), 0u);
  EXPECT_FALSE(p.next(ec));
  EXPECT_FALSE(ec);
}

TEST(resp3_parser, buffered_counts_partial_value) {
  parser p;
  std::error_code ec;
  p.feed("*2\r\n:1\r\n:");
  EXPECT_FALSE(p.next(ec));
  EXPECT_EQ(p.buffered(), 9u);
  p.feed("2\r\n+next");
  EXPECT_TRUE(p.next(ec));
  EXPECT_EQ(p.buffered(), 5u);
}

TEST(resp3_parser, many_small_feeds_stay_consistent) {
  // Far more data than the compaction threshold, fed in odd-sized pieces.
  std::string wire;
  std::vector<std::string> expected;
  for (int i = 0; i < 5000; ++i) {
    const std::string s = std::to_string(i);
    wire += "*2\r\n$" + std::to_string(s.size()) + "\r\n" + s + "\r\n:" + s + "\r\n";
    expected.push_back("array[blob(\"" + s + "\"),number(" + s + "),]");
  }
  parsed r = parse(wire, 13);
  ASSERT_FALSE(r.ec);
  EXPECT_EQ(dump_all(r.values), expected);
}

TEST(resp3_parser, long_values_byte_at_a_time) {
  // Quadratic rescanning would make these crawl.
  const std::string text(60000, 'x');
  parsed line = parse("+" + text + "\r\n", 1);
  ASSERT_FALSE(line.ec);
  ASSERT_EQ(line.values.size(), 1u);
  EXPECT_EQ(line.values[0].str, text);

  const std::string body(300000, 'y');
  parsed blob = parse("$300000\r\n" + body + "\r\n", 1);
  ASSERT_FALSE(blob.ec);
  ASSERT_EQ(blob.values.size(), 1u);
  EXPECT_EQ(blob.values[0].str, body);
}

// --- malformed ----------------------------------------------------------------------------

const std::vector<std::string>& malformed() {
  static const std::vector<std::string> cases = {
      "?what\r\n",                      // unknown type byte
      "+OK\n",                          // missing \r before \n
      "\n",                             // empty line
      "\r\n",                           // no type byte
      ":12a\r\n",                       // garbage number
      ":\r\n",                          // empty number
      ":9223372036854775808\r\n",       // int64 overflow
      ":-9223372036854775809\r\n",      // int64 underflow
      ":+-1\r\n",                       // two signs
      ":1.5\r\n",                       // not an integer
      "$abc\r\nabc\r\n",                // non-numeric length
      "$-2\r\n",                        // negative length other than -1
      "*-5\r\n",                        // negative count
      "%-1\r\n",                        // RESP2 null exists only for $ and *
      "$ 3\r\nabc\r\n",                 // space in length
      "$3\r\nabcd\r\n",                 // body longer than announced
      "$3\r\nab\r\n\r\n",               // body not followed by \r\n
      "$3\r\nabc\n\r",                  // terminator reversed
      "#x\r\n",                         // bad boolean
      "#true\r\n",                      // bad boolean
      "_x\r\n",                         // null with payload
      ",abc\r\n",                       // bad double
      ",1.5x\r\n",                      // trailing garbage in double
      ",\r\n",                          // empty double
      "(12x\r\n",                       // bad big number
      "(\r\n",                          // empty big number
      "(-\r\n",                         // sign without digits
      "=3\r\ntxt\r\n",                  // verbatim too short for a format
      "=5\r\ntxt-x\r\n",                // verbatim without the colon
      "!-1\r\n",                        // blob error cannot be null
      ";3\r\nabc\r\n",                  // chunk outside a streamed string
      ".\r\n",                          // stream end outside a streamed aggregate
      "*2\r\n:1\r\n.\r\n",              // stream end in a counted aggregate
      "$?\r\n+OK\r\n",                  // non-chunk inside a streamed string
      "$?\r\n;x\r\n",                   // bad chunk length
      "$?\r\n;2\r\nabc\r\n",            // chunk body too long
      "%?\r\n+a\r\n.\r\n",              // streamed map with a dangling key
      "*?\r\n|1\r\n+a\r\n+b\r\n.\r\n",  // attribute with nothing to annotate
      ">?\r\n.\r\n",                    // push cannot be streamed
      "|?\r\n",                         // attribute cannot be streamed
      "!?\r\n",                         // blob error cannot be streamed
      "*1x\r\n",                        // garbage count
      "*\r\n",                          // missing count
      "$99999999999999999999\r\n",      // length overflows int64
      ".x\r\n",                         // stream end with payload
  };
  return cases;
}

TEST(resp3_parser, malformed_inputs_fail) {
  for (const std::string& input : malformed()) {
    parsed whole = parse(input);
    EXPECT_EQ(whole.ec, protocol_error) << "input: " << input;
    EXPECT_TRUE(whole.values.empty()) << "input: " << input;
    parsed bytewise = parse(input, 1);
    EXPECT_EQ(bytewise.ec, protocol_error) << "bytewise input: " << input;
  }
}

TEST(resp3_parser, malformed_after_valid_value) {
  parsed r = parse("+OK\r\n:1\r\n#maybe\r\n+never\r\n");
  EXPECT_EQ(r.ec, protocol_error);
  EXPECT_EQ(dump_all(r.values), (std::vector<std::string>{"simple(\"OK\")", "number(1)"}));
}

TEST(resp3_parser, failure_is_sticky) {
  parser p;
  std::error_code ec;
  p.feed("?\r\n");
  EXPECT_FALSE(p.next(ec));
  EXPECT_EQ(ec, protocol_error);
  p.feed("+OK\r\n");
  for (int i = 0; i < 3; ++i) {
    ec.clear();
    EXPECT_FALSE(p.next(ec));
    EXPECT_EQ(ec, protocol_error);
  }
}

TEST(resp3_parser, ec_cleared_on_success_and_need_more) {
  parser p;
  std::error_code ec = make_error_code(errc::timeout);
  p.feed("+O");
  EXPECT_FALSE(p.next(ec));
  EXPECT_FALSE(ec);
  ec = make_error_code(errc::timeout);
  p.feed("K\r\n");
  EXPECT_TRUE(p.next(ec));
  EXPECT_FALSE(ec);
}

TEST(resp3_parser, random_garbage_never_crashes) {
  std::mt19937 rng(12345);
  const std::string alphabet = "+-:_,#!=($*%~|>;.?0123456789\r\n\r\nabtf";
  for (int round = 0; round < 3000; ++round) {
    std::string input;
    const int len = static_cast<int>(rng() % 64);
    for (int i = 0; i < len; ++i) input += alphabet[rng() % alphabet.size()];
    parser_limits limits;
    limits.max_elements = 1000;
    limits.max_blob = 1000;
    parse(input, 1 + rng() % 5, limits);
  }
  // Single-byte corruptions of valid replies.
  const std::string all = concatenated_corpus();
  for (int round = 0; round < 2000; ++round) {
    std::string input = all;
    input[rng() % input.size()] = static_cast<char>(rng() % 256);
    parse(input, 1 + rng() % 7);
  }
}

// --- limits -------------------------------------------------------------------------------

TEST(resp3_parser, blob_longer_than_max_blob) {
  parser_limits limits;
  limits.max_blob = 10;
  EXPECT_FALSE(parse("$10\r\n0123456789\r\n", 0, limits).ec);
  EXPECT_EQ(parse("$11\r\n", 0, limits).ec, protocol_error);  // fails on the header alone
  EXPECT_EQ(parse("!11\r\n", 0, limits).ec, protocol_error);
  EXPECT_EQ(parse("=11\r\n", 0, limits).ec, protocol_error);
  EXPECT_EQ(parse("$4294967296\r\n", 0, limits).ec, protocol_error);
  // A streamed string counts its total length.
  EXPECT_FALSE(parse("$?\r\n;5\r\n01234\r\n;5\r\n56789\r\n;0\r\n", 0, limits).ec);
  EXPECT_EQ(parse("$?\r\n;5\r\n01234\r\n;6\r\n", 0, limits).ec, protocol_error);
}

TEST(resp3_parser, line_longer_than_max_line) {
  parser_limits limits;
  limits.max_line = 8;  // the type byte and payload, without CRLF
  EXPECT_FALSE(parse("+1234567\r\n", 0, limits).ec);
  EXPECT_EQ(parse("+12345678\r\n", 0, limits).ec, protocol_error);

  // Detected while the line is still incomplete, without waiting for a CRLF that never comes.
  parser p(limits);
  std::error_code ec;
  p.feed("+1234567\r");
  EXPECT_FALSE(p.next(ec));
  EXPECT_FALSE(ec);
  p.feed("x");
  EXPECT_FALSE(p.next(ec));
  EXPECT_EQ(ec, protocol_error);

  parsed endless = parse(std::string(1000, ':'), 1, limits);
  EXPECT_EQ(endless.ec, protocol_error);
}

TEST(resp3_parser, nesting_deeper_than_max_depth) {
  parser_limits limits;
  limits.max_depth = 3;
  EXPECT_FALSE(parse("*1\r\n*1\r\n*1\r\n:1\r\n", 0, limits).ec);
  EXPECT_FALSE(parse("*1\r\n*1\r\n*1\r\n*0\r\n", 0, limits).ec);  // empty: nothing stays open
  EXPECT_EQ(parse("*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", 0, limits).ec, protocol_error);
  EXPECT_EQ(parse("*1\r\n%1\r\n~1\r\n>1\r\n", 0, limits).ec, protocol_error);
  EXPECT_EQ(parse("*?\r\n*?\r\n*?\r\n*?\r\n", 0, limits).ec, protocol_error);
  EXPECT_EQ(parse("*1\r\n*1\r\n*1\r\n|1\r\n", 0, limits).ec, protocol_error);
  // Without a limit, a deep stream must not blow the stack either.
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "*1\r\n";
  EXPECT_EQ(parse(deep + ":1\r\n").ec, protocol_error);
}

TEST(resp3_parser, count_above_max_elements) {
  parser_limits limits;
  limits.max_elements = 3;
  EXPECT_FALSE(parse("*3\r\n:1\r\n:2\r\n:3\r\n", 0, limits).ec);
  EXPECT_FALSE(parse("%3\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n:6\r\n", 0, limits).ec);
  EXPECT_EQ(parse("*4\r\n", 0, limits).ec, protocol_error);
  EXPECT_EQ(parse("%4\r\n", 0, limits).ec, protocol_error);
  EXPECT_EQ(parse("~4\r\n", 0, limits).ec, protocol_error);
  EXPECT_EQ(parse(">4\r\n", 0, limits).ec, protocol_error);
  EXPECT_EQ(parse("|4\r\n", 0, limits).ec, protocol_error);
  // Huge announced counts fail at once instead of allocating.
  EXPECT_EQ(parse("*9223372036854775807\r\n").ec, protocol_error);
  EXPECT_EQ(parse("%9223372036854775807\r\n").ec, protocol_error);
  // Streamed aggregates are counted as elements arrive.
  EXPECT_FALSE(parse("*?\r\n:1\r\n:2\r\n:3\r\n.\r\n", 0, limits).ec);
  EXPECT_EQ(parse("*?\r\n:1\r\n:2\r\n:3\r\n:4\r\n", 0, limits).ec, protocol_error);
  EXPECT_EQ(parse("%?\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n:6\r\n:7\r\n", 0, limits).ec,
            protocol_error);
}

TEST(resp3_parser, big_announced_blob_does_not_allocate_up_front) {
  // Within limits but never sent: the parser just waits.
  parser p;
  std::error_code ec;
  p.feed("$536870912\r\nabc");
  EXPECT_FALSE(p.next(ec));
  EXPECT_FALSE(ec);
  EXPECT_EQ(p.buffered(), 15u);
}

}  // namespace
}  // namespace rlock::detail::resp3
