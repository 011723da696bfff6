#pragma once

#include <boost/json/object.hpp>

#include <string_view>

namespace rlockctl {

/// Where every command writes its results: one line per result on stdout, flushed at once (watch
/// and hold are read live, often through a pipe). With --json each line is one JSON object
/// (JSON Lines), otherwise the human text.
class output {
 public:
  explicit output(bool json) : json_(json) {}
  bool json() const noexcept { return json_; }

  /// One result: `text` for people, `object` for programs.
  void emit(std::string_view text, const boost::json::object& object) const;

  /// A problem, on stderr (never mixed into the results): text, or {"error":..., "message":...}.
  void error(std::string_view code, std::string_view message) const;

 private:
  bool json_;
};

/// Milliseconds since the Unix epoch, for the "at" field of events.
std::int64_t now_ms();
/// "HH:MM:SS.mmm", local time, for the text of events.
std::string clock_text();

}  // namespace rlockctl
