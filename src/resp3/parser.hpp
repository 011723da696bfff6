#pragma once

#include "resp3/value.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace rlock::detail::resp3 {

/// Bounds that turn hostile or corrupt input into an error instead of unbounded memory use.
struct parser_limits {
  std::size_t max_blob = 512u * 1024 * 1024;  // Redis's own proto-max-bulk-len default
  std::size_t max_line = 64u * 1024;          // a header or simple string without CRLF
  std::size_t max_depth = 64;                 // nesting of aggregates
  std::size_t max_elements = 1u << 24;        // announced elements in one aggregate
};

/// Sans-I/O incremental RESP3 parser: bytes in, complete values out. A value may arrive split
/// across any number of `feed` calls; no byte is parsed twice. After an error the parser stays
/// failed: the stream cannot be resynchronised, so the connection must be dropped.
class parser {
 public:
  explicit parser(parser_limits limits = {});

  /// Appends received bytes.
  void feed(std::string_view bytes);

  /// The next complete value, or nullopt when more bytes are needed or on error (`ec` is set to
  /// rlock::errc::protocol_error then; it is cleared otherwise).
  std::optional<value> next(std::error_code& ec);

  /// Bytes fed but not yet consumed by a complete value.
  std::size_t buffered() const noexcept;

 private:
  enum class progress : std::uint8_t { more, ok, bad };
  /// What the bytes after a blob header are; `none` when the parser expects a line.
  enum class blob_kind : std::uint8_t { none, blob_string, blob_error, verbatim, chunk };

  /// An aggregate still missing elements, or a streamed string still collecting chunks.
  /// Defined here, not in the .cpp, so that `std::vector<frame>` can be destroyed inline.
  struct frame {
    value val;
    std::size_t remaining = 0;  // elements still expected; unused when streamed
    bool streamed = false;
    /// An attribute read at this level, waiting for the element it annotates.
    std::vector<value> pending_attributes;
  };

  progress step();
  progress read_line();
  progress read_blob();
  progress on_line(char kind, std::string_view payload);
  progress open_aggregate(resp3::type t, std::string_view payload);
  progress close_stream(std::string_view payload);
  progress complete(value v);
  void advance(std::size_t n) noexcept;
  void fail();

  parser_limits limits_;
  std::string buffer_;
  std::size_t pos_ = 0;      // first byte not yet parsed
  std::size_t scanned_ = 0;  // bytes after pos_ known to hold no '\n', so a line is scanned once
  std::size_t partial_ = 0;  // bytes parsed into the value still being built
  blob_kind blob_ = blob_kind::none;
  std::size_t blob_len_ = 0;
  std::vector<frame> stack_;
  std::vector<value> pending_attributes_;  // an attribute read at top level
  std::optional<value> ready_;             // a complete top-level value not yet returned
  bool failed_ = false;
};

}  // namespace rlock::detail::resp3
