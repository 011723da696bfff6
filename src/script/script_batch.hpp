#pragma once

// A batch: calls of one script, each with its own keys and arguments, run as one script call
// (script_registry::async_run_batched). The server then parses one command and starts one
// script for the batch instead of one per call: a multi-lock of ten on one server takes its
// members in one script and gives them back in another (issue 37; bench M1).
//
// The batch script wraps the script's own source, unchanged, in a function and calls it once
// per call, in order, each under pcall: one call's error is that call's answer and the others
// run, as in a pipeline of EVALSHAs. Its answer is one element per call, the call's reply (nil,
// which a Lua array cannot hold, as false: both are a null reply).
//
// Sans-I/O: building the source and the arguments, and splitting the answer.
#include "resp3/value.hpp"
#include "script/scripts.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace rlock::detail {

/// The batch script of `s`: KEYS = every call's keys, in order; ARGV[1] = the number of calls
/// n, ARGV[2m] and ARGV[2m + 1] = call m's key and argument counts, then every call's arguments.
std::string batch_source(script s);

/// The arguments of a batch script call, built one call at a time: every byte in one buffer.
class batch_arguments {
 public:
  /// Adds a call (copies its keys and arguments).
  void add(std::span<const std::string_view> keys, std::span<const std::string_view> args);
  std::size_t calls() const noexcept { return calls_; }
  /// The batch call's KEYS and ARGV, viewing this object's bytes (valid while it lives and no
  /// call is added).
  std::vector<std::string_view> keys() const;
  std::vector<std::string_view> args() const;
  /// The arguments as they were added, without the counts: a batch of one call sent as itself.
  std::vector<std::string_view> call_args() const;

 private:
  /// A piece of bytes_: where it starts, and its size.
  struct piece {
    std::uint32_t at = 0;
    std::uint32_t size = 0;
  };
  piece put(std::string_view s);
  piece put_count(std::size_t n);
  std::vector<std::string_view> views(const std::vector<piece>& pieces) const;

  std::string bytes_;
  std::vector<piece> keys_;
  std::vector<piece> counts_;  // ARGV[1], then per call: its key count, its argument count
  std::vector<piece> args_;
  std::size_t calls_ = 0;
  mutable std::string calls_text_;  // ARGV[1], made with the views
};

/// One call's share of a batch's answer: what that call alone would have been answered.
struct batch_reply {
  std::error_code ec;  // an error reply's code (Redis's text is the value), or none
  resp3::value value;
};

/// Splits the answer of a batch of `calls` calls. A malformed answer (not one element per call)
/// is errc::protocol_error for every call.
std::vector<batch_reply> split_batch_reply(resp3::value&& answer, std::size_t calls);

}  // namespace rlock::detail
