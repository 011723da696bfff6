#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::detail::resp3 {

/// Every RESP3 type (https://github.com/redis/redis-specification/blob/master/protocol/RESP3.md).
enum class type : std::uint8_t {
  simple_string,    // +
  simple_error,     // -
  number,           // :
  null,             // _  (and RESP2's $-1 / *-1)
  double_type,      // ,
  boolean,          // #
  blob_error,       // !
  verbatim_string,  // =
  big_number,       // (
  blob_string,      // $  (streamed $? strings are joined into one)
  array,            // *
  map,              // %
  set,              // ~
  attribute,        // |  (attached to the value that follows it)
  push,             // >
};

/// One decoded reply. A tree rather than a flat node list: replies rlock reads are small, and
/// code that decodes script results reads far better against a tree.
struct value {
  resp3::type type = type::null;
  /// Strings, errors, big numbers (decimal text) and verbatim strings (without the "txt:" prefix).
  std::string str;
  /// number; boolean as 0 or 1.
  std::int64_t integer = 0;
  /// double_type; may be inf or nan.
  double real = 0;
  /// array, set, push: the elements. map, attribute: keys and values alternating.
  std::vector<value> elements;
  /// The attribute (a map, as `elements` of an attribute value) sent before this value, if any.
  std::vector<value> attributes;

  bool is_null() const noexcept { return type == type::null; }
  bool is_error() const noexcept { return type == type::simple_error || type == type::blob_error; }
  bool is_push() const noexcept { return type == type::push; }
};

/// A short text of `v` for log lines: nil, a number, a string, or `[a,b,...]` (nested the
/// same way, at most 8 elements a level).
inline std::string brief(const value& v) {
  switch (v.type) {
    case type::null:
      return "nil";
    case type::number:
    case type::boolean:
      return std::to_string(v.integer);
    case type::double_type:
      return std::to_string(v.real);
    case type::array:
    case type::map:
    case type::set:
    case type::push: {
      std::string out = "[";
      for (std::size_t i = 0; i < v.elements.size() && i < 8; ++i) {
        if (i > 0) out.push_back(',');
        out += brief(v.elements[i]);
      }
      if (v.elements.size() > 8) out += ",...";
      out.push_back(']');
      return out;
    }
    default:
      return v.str;
  }
}

/// An error reply made on the client's side (a router's or a registry's verdict), so that its
/// text travels to the caller the way Redis's own error texts do.
inline value error_reply(std::string text) {
  value v;
  v.type = type::simple_error;
  v.str = std::move(text);
  return v;
}

}  // namespace rlock::detail::resp3
