// libFuzzer target: the RESP3 parser fed arbitrary bytes, whole and in pieces.
//
// Checks: no crash or sanitizer report; no allocation beyond the parser's limits (libFuzzer's
// -malloc_limit_mb); and the parser's promise that a value may arrive split across any number of
// feed() calls: the same bytes fed in one piece and in pieces (sizes taken from the input) yield
// the same values and the same error.
#include "resp3/parser.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

namespace {

namespace resp3 = rlock::detail::resp3;

bool same(const resp3::value& a, const resp3::value& b) {
  if (a.type != b.type || a.str != b.str || a.integer != b.integer) return false;
  // Compare doubles bitwise: NaN must equal itself here.
  if (std::memcmp(&a.real, &b.real, sizeof a.real) != 0) return false;
  if (a.elements.size() != b.elements.size() || a.attributes.size() != b.attributes.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.elements.size(); ++i) {
    if (!same(a.elements[i], b.elements[i])) return false;
  }
  for (std::size_t i = 0; i < a.attributes.size(); ++i) {
    if (!same(a.attributes[i], b.attributes[i])) return false;
  }
  return true;
}

resp3::parser_limits limits() {
  // Small enough that a hostile announcement is refused long before libFuzzer's malloc limit.
  resp3::parser_limits l;
  l.max_blob = 1u << 20;
  l.max_line = 4096;
  l.max_depth = 32;
  l.max_elements = 1u << 16;
  return l;
}

struct outcome {
  std::vector<resp3::value> values;
  bool failed = false;
};

void drain(resp3::parser& p, outcome& out) {
  // Bounded: every value consumes at least one byte.
  for (;;) {
    std::error_code ec;
    auto v = p.next(ec);
    if (ec) {
      out.failed = true;
      return;
    }
    if (!v) return;
    out.values.push_back(std::move(*v));
  }
}

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // The first byte chooses the piece sizes; the rest is the stream.
  const std::size_t max_piece = 1 + data[0] % 16;
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);

  outcome whole;
  {
    resp3::parser p(limits());
    p.feed(stream);
    drain(p, whole);
    check(whole.failed || p.buffered() <= stream.size());
  }

  outcome pieces;
  {
    resp3::parser p(limits());
    std::size_t pos = 0;
    std::size_t k = 0;
    while (pos < stream.size() && !pieces.failed) {
      const std::size_t n = std::min(stream.size() - pos, 1 + (k++ * 7 + pos) % max_piece);
      p.feed(stream.substr(pos, n));
      pos += n;
      drain(p, pieces);
    }
  }

  // In pieces the parser may stop at the first error before seeing later bytes, so compare
  // the values both saw and require the same verdict.
  check(whole.failed == pieces.failed);
  check(whole.values.size() == pieces.values.size());
  for (std::size_t i = 0; i < whole.values.size(); ++i) {
    check(same(whole.values[i], pieces.values[i]));
  }
  return 0;
}
