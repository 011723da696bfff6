#include "resp3/parser.hpp"

#include "rlock/error.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <iterator>
#include <limits>
#include <utility>

namespace rlock::detail::resp3 {
namespace {

// Consumed bytes are erased only past this size, so compaction stays amortised O(1) per byte.
constexpr std::size_t compact_threshold = 4096;
// Announced counts come from the wire; reserve no more than this up front.
constexpr std::size_t reserve_cap = 16;

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

bool all_digits(std::string_view s) noexcept {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_digit);
}

/// RESP3 allows an explicit '+', which std::from_chars rejects; "+-1" must stay invalid.
bool strip_plus(std::string_view& s) noexcept {
  if (s.empty() || s.front() != '+') return true;
  s.remove_prefix(1);
  return !s.empty() && s.front() != '-';
}

std::optional<std::int64_t> parse_integer(std::string_view s) {
  if (!strip_plus(s) || s.empty()) return std::nullopt;
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  if (!strip_plus(s) || s.empty()) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

/// A length or count: digits only, or exactly "-1" (returned as -1) for RESP2 nulls.
std::optional<std::int64_t> parse_length(std::string_view s) {
  if (s == "-1") return -1;
  if (!all_digits(s)) return std::nullopt;
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool valid_big_number(std::string_view s) noexcept {
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) s.remove_prefix(1);
  return all_digits(s);
}

value make_value(resp3::type t, std::string_view str = {}) {
  value v;
  v.type = t;
  v.str.assign(str);
  return v;
}

bool is_map_like(resp3::type t) noexcept { return t == type::map || t == type::attribute; }

}  // namespace

parser::parser(parser_limits limits) : limits_(limits) {}

void parser::feed(std::string_view bytes) {
  if (failed_) return;
  if (pos_ == buffer_.size()) {
    buffer_.clear();  // keeps the capacity
    pos_ = 0;
  } else if (pos_ >= compact_threshold && pos_ >= buffer_.size() - pos_) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  buffer_.append(bytes);
}

std::size_t parser::buffered() const noexcept { return partial_ + (buffer_.size() - pos_); }

std::optional<value> parser::next(std::error_code& ec) {
  if (!failed_) {
    while (!ready_) {
      const progress p = step();
      if (p == progress::more) {
        ec.clear();
        return std::nullopt;
      }
      if (p == progress::bad) {
        fail();
        break;
      }
    }
  }
  if (failed_) {
    ec = make_error_code(errc::protocol_error);
    return std::nullopt;
  }
  ec.clear();
  partial_ = 0;
  std::optional<value> out = std::move(ready_);
  ready_.reset();
  return out;
}

parser::progress parser::step() { return blob_ == blob_kind::none ? read_line() : read_blob(); }

parser::progress parser::read_line() {
  const std::size_t avail = buffer_.size() - pos_;
  const char* begin = buffer_.data() + pos_;
  const void* nl =
      avail > scanned_ ? std::memchr(begin + scanned_, '\n', avail - scanned_) : nullptr;
  if (nl == nullptr) {
    scanned_ = avail;
    // No '\n' yet: fail once the line is too long even if its last byte is the '\r'.
    return avail > 0 && avail - 1 > limits_.max_line ? progress::bad : progress::more;
  }
  const auto len = static_cast<std::size_t>(static_cast<const char*>(nl) - begin);
  // A line needs at least a type byte and the '\r' before '\n'.
  if (len < 2 || begin[len - 1] != '\r' || len - 1 > limits_.max_line) return progress::bad;
  const char kind = begin[0];
  const std::string_view payload(begin + 1, len - 2);
  advance(len + 1);
  scanned_ = 0;
  // `payload` stays valid: the buffer is only modified by feed().
  return on_line(kind, payload);
}

parser::progress parser::read_blob() {
  const std::size_t avail = buffer_.size() - pos_;
  const char* begin = buffer_.data() + pos_;
  // Fail as soon as the byte after the body is visible and wrong, without waiting for both.
  if (avail > blob_len_ && begin[blob_len_] != '\r') return progress::bad;
  if (avail < blob_len_ + 2) return progress::more;
  if (begin[blob_len_ + 1] != '\n') return progress::bad;
  const std::string_view body(begin, blob_len_);
  const blob_kind kind = std::exchange(blob_, blob_kind::none);
  advance(blob_len_ + 2);
  switch (kind) {
    case blob_kind::blob_string:
      return complete(make_value(type::blob_string, body));
    case blob_kind::blob_error:
      return complete(make_value(type::blob_error, body));
    case blob_kind::verbatim:
      // "txt:" or "mkd:": three format characters and a colon (length >= 4 checked on the header)
      if (body[3] != ':') return progress::bad;
      return complete(make_value(type::verbatim_string, body.substr(4)));
    case blob_kind::chunk:
      stack_.back().val.str.append(body);
      return progress::ok;
    case blob_kind::none:
      break;
  }
  return progress::bad;
}

parser::progress parser::on_line(char kind, std::string_view payload) {
  // Inside a streamed string only chunks may follow.
  if (!stack_.empty() && stack_.back().streamed && stack_.back().val.type == type::blob_string) {
    if (kind != ';') return progress::bad;
    const auto n = parse_length(payload);
    if (!n || *n < 0) return progress::bad;
    if (*n == 0) {
      value v = std::move(stack_.back().val);
      stack_.pop_back();
      return complete(std::move(v));
    }
    const auto len = static_cast<std::size_t>(*n);
    if (len > limits_.max_blob - std::min(limits_.max_blob, stack_.back().val.str.size())) {
      return progress::bad;
    }
    blob_ = blob_kind::chunk;
    blob_len_ = len;
    return progress::ok;
  }

  switch (kind) {
    case '+':
      return complete(make_value(type::simple_string, payload));
    case '-':
      return complete(make_value(type::simple_error, payload));
    case ':': {
      const auto n = parse_integer(payload);
      if (!n) return progress::bad;
      value v = make_value(type::number);
      v.integer = *n;
      return complete(std::move(v));
    }
    case '_':
      if (!payload.empty()) return progress::bad;
      return complete(make_value(type::null));
    case ',': {
      const auto d = parse_double(payload);
      if (!d) return progress::bad;
      value v = make_value(type::double_type);
      v.real = *d;
      return complete(std::move(v));
    }
    case '#': {
      if (payload != "t" && payload != "f") return progress::bad;
      value v = make_value(type::boolean);
      v.integer = payload == "t" ? 1 : 0;
      return complete(std::move(v));
    }
    case '(':
      if (!valid_big_number(payload)) return progress::bad;
      return complete(make_value(type::big_number, payload));
    case '$':
    case '!':
    case '=': {
      if (kind == '$' && payload == "?") {
        // No depth check: a streamed string holds no nested values.
        frame f;
        f.val.type = type::blob_string;
        f.streamed = true;
        stack_.push_back(std::move(f));
        return progress::ok;
      }
      const auto n = parse_length(payload);
      if (!n) return progress::bad;
      if (*n == -1) {
        if (kind != '$') return progress::bad;
        return complete(make_value(type::null));
      }
      const auto len = static_cast<std::size_t>(*n);
      if (len > limits_.max_blob || (kind == '=' && len < 4)) return progress::bad;
      blob_ = kind == '$'   ? blob_kind::blob_string
              : kind == '!' ? blob_kind::blob_error
                            : blob_kind::verbatim;
      blob_len_ = len;
      return progress::ok;
    }
    case '*':
      return open_aggregate(type::array, payload);
    case '%':
      return open_aggregate(type::map, payload);
    case '~':
      return open_aggregate(type::set, payload);
    case '|':
      return open_aggregate(type::attribute, payload);
    case '>':
      return open_aggregate(type::push, payload);
    case '.':
      return close_stream(payload);
    default:
      // Unknown type bytes, and ';' outside a streamed string.
      return progress::bad;
  }
}

parser::progress parser::open_aggregate(resp3::type t, std::string_view payload) {
  frame f;
  f.val.type = t;
  if (payload == "?") {
    // The specification streams only arrays, sets and maps.
    if (t != type::array && t != type::map && t != type::set) return progress::bad;
    if (stack_.size() >= limits_.max_depth) return progress::bad;
    f.streamed = true;
    stack_.push_back(std::move(f));
    return progress::ok;
  }
  const auto n = parse_length(payload);
  if (!n) return progress::bad;
  if (*n == -1) {
    if (t != type::array) return progress::bad;
    return complete(make_value(type::null));
  }
  const auto count = static_cast<std::size_t>(*n);
  if (count > limits_.max_elements) return progress::bad;
  const std::size_t per_entry = is_map_like(t) ? 2 : 1;
  if (count > std::numeric_limits<std::size_t>::max() / per_entry) return progress::bad;
  if (count == 0) return complete(std::move(f.val));
  if (stack_.size() >= limits_.max_depth) return progress::bad;
  f.remaining = count * per_entry;
  f.val.elements.reserve(std::min(f.remaining, reserve_cap));
  stack_.push_back(std::move(f));
  return progress::ok;
}

parser::progress parser::close_stream(std::string_view payload) {
  if (!payload.empty() || stack_.empty()) return progress::bad;
  frame& f = stack_.back();
  // Streamed strings were handled by on_line, so this is a streamed aggregate or nothing.
  if (!f.streamed) return progress::bad;
  // An attribute must annotate a value, and a map needs whole key/value pairs.
  if (!f.pending_attributes.empty()) return progress::bad;
  if (f.val.type == type::map && f.val.elements.size() % 2 != 0) return progress::bad;
  value v = std::move(f.val);
  stack_.pop_back();
  return complete(std::move(v));
}

parser::progress parser::complete(value v) {
  for (;;) {
    // The attribute read at this level (if any) annotates this value.
    std::vector<value>& pending =
        stack_.empty() ? pending_attributes_ : stack_.back().pending_attributes;
    if (v.type == type::attribute) {
      // Not a value of its own: keep it for whatever comes next at this level.
      pending.insert(pending.end(), std::make_move_iterator(v.elements.begin()),
                     std::make_move_iterator(v.elements.end()));
      return progress::ok;
    }
    v.attributes = std::move(pending);
    pending.clear();
    if (stack_.empty()) {
      ready_ = std::move(v);
      return progress::ok;
    }
    frame& f = stack_.back();
    f.val.elements.push_back(std::move(v));
    if (f.streamed) {
      const std::size_t per_entry = is_map_like(f.val.type) ? 2 : 1;
      const std::size_t entries = (f.val.elements.size() + per_entry - 1) / per_entry;
      return entries > limits_.max_elements ? progress::bad : progress::ok;
    }
    if (--f.remaining > 0) return progress::ok;
    v = std::move(f.val);
    stack_.pop_back();
  }
}

void parser::advance(std::size_t n) noexcept {
  pos_ += n;
  partial_ += n;
}

void parser::fail() {
  failed_ = true;
  // The stream cannot be resynchronised; release everything held for it.
  buffer_ = {};
  pos_ = scanned_ = partial_ = 0;
  blob_ = blob_kind::none;
  stack_ = {};
  pending_attributes_ = {};
  ready_.reset();
}

}  // namespace rlock::detail::resp3
