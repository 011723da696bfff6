#pragma once

#include <chrono>
#include <optional>
#include <spawn.h>
#include <string>
#include <sys/types.h>
#include <vector>

namespace rlock::test {

/// Makes a child start with default signal dispositions and an empty signal mask, whatever the
/// test process changed (a test that blocks SIGINT must not pass that on to rlockctl or Redis).
void reset_signals(posix_spawnattr_t& attr);

/// A program run by a test with its stdout and stderr captured (separately), for tools such as
/// rlockctl that are driven as an operator would. Every wait is bounded; the destructor kills
/// and reaps a child still running.
class child_process {
 public:
  /// Starts `argv[0]` with `argv`; throws std::system_error if it cannot be started.
  explicit child_process(std::vector<std::string> argv);
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  ~child_process();

  /// Reads until stdout contains `needle` `times` times (counted from the start of the output),
  /// or `bound` passes, or the child closes it; true if found.
  bool wait_for_output(const std::string& needle, std::chrono::milliseconds bound,
                       std::size_t times = 1);

  /// Sends `sig` (e.g. SIGINT, as Ctrl-C does).
  void signal(int sig) const;

  /// Waits up to `bound` for the child to exit, reading its output meanwhile; its exit code, or
  /// nothing if it is still running (then it is left running) or was killed by a signal.
  std::optional<int> wait(std::chrono::milliseconds bound);

  const std::string& out() const noexcept { return out_; }
  const std::string& err() const noexcept { return err_; }
  pid_t pid() const noexcept { return pid_; }

 private:
  std::size_t count(const std::string& needle) const;
  /// Reads what is available for up to `bound`; false once both pipes are closed.
  bool pump(std::chrono::milliseconds bound);

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_;
  std::string err_;
  std::optional<int> status_;
};

/// Runs `argv` to its end (bounded by `bound`, killed after it) and returns it finished.
struct finished_process {
  std::optional<int> code;
  std::string out;
  std::string err;
};
finished_process run_process(std::vector<std::string> argv,
                             std::chrono::milliseconds bound = std::chrono::seconds(60));

}  // namespace rlock::test
