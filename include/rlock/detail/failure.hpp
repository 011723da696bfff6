#pragma once

#include "rlock/error.hpp"
#include "rlock/export.hpp"

#include <boost/system/error_code.hpp>

#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace rlock::detail {

/// How an operation failed, inside the library: its error code and the words that explain it
/// (Redis's error text, the bound that ran out, the transport's last error). No code: it did not
/// fail. Every operation completes with one; the `async_*` forms hand the caller the code (the
/// words stay in the handle's `last_error()`), the awaitable and blocking forms throw both as a
/// `boost::system::system_error`.
class failure {
 public:
  /// No code: not a failure.
  boost::system::error_code code;

  failure() = default;
  failure(boost::system::error_code c, std::string_view words) : code(c) { set_text(words); }
  failure(errc e, std::string_view words) : code(std::error_code(make_error_code(e))) {
    set_text(words);
  }
  // Moved along every completion, failed or not: the words are behind a pointer (a move of a
  // success is two words), and copied only when a failure is.
  failure(failure&&) noexcept = default;
  failure& operator=(failure&&) noexcept = default;
  failure(const failure& other) : code(other.code) { set_text(other.text()); }
  failure& operator=(const failure& other) {
    if (this != &other) {
      code = other.code;
      set_text(other.text());
    }
    return *this;
  }
  ~failure() = default;

  explicit operator bool() const noexcept { return code.failed(); }
  /// The words; empty if it has none (then the code's message says it all).
  std::string_view text() const noexcept {
    return text_ ? std::string_view(*text_) : std::string_view();
  }

  /// Throws what the awaitable and blocking forms throw: the code, and the words if any.
  [[noreturn]] RLOCK_EXPORT void raise() const;

 private:
  void set_text(std::string_view words) {
    text_ = words.empty() ? nullptr : std::make_unique<std::string>(words);
  }

  std::unique_ptr<std::string> text_;
};

/// An operation ended before its result: Asio's operation_aborted, from every form; `why` says
/// what ended it.
failure cancelled(std::string_view why = "cancelled by the caller");
/// What an exception that escaped one of the library's own coroutines anyway (out of memory)
/// becomes: its code and words.
failure failure_of_exception(const std::exception_ptr& e);

}  // namespace rlock::detail
