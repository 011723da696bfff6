#pragma once

// Replies built by hand, for the sans-I/O tests that feed decoders and the multiplexer.

#include "resp3/value.hpp"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace rlock::test {

inline detail::resp3::value text(std::string s) {
  detail::resp3::value v;
  v.type = detail::resp3::type::blob_string;
  v.str = std::move(s);
  return v;
}

inline detail::resp3::value number(std::int64_t n) {
  detail::resp3::value v;
  v.type = detail::resp3::type::number;
  v.integer = n;
  return v;
}

inline detail::resp3::value array(std::vector<detail::resp3::value> elements) {
  detail::resp3::value v;
  v.type = detail::resp3::type::array;
  v.elements = std::move(elements);
  return v;
}

/// A RESP3 map: keys (as blob strings) and values alternating in `elements`.
inline detail::resp3::value map(
    std::initializer_list<std::pair<std::string, detail::resp3::value>> entries) {
  detail::resp3::value v;
  v.type = detail::resp3::type::map;
  for (const auto& [key, value] : entries) {
    v.elements.push_back(text(key));
    v.elements.push_back(value);
  }
  return v;
}

}  // namespace rlock::test
