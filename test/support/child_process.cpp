#include "support/child_process.hpp"

#include <array>
#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>

extern char** environ;

namespace rlock::test {

namespace {

using clock = std::chrono::steady_clock;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

void reset_signals(posix_spawnattr_t& attr) {
  sigset_t all;
  sigset_t none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
}

child_process::child_process(std::vector<std::string> argv) {
  std::array<int, 2> out_pipe{};
  std::array<int, 2> err_pipe{};
  if (::pipe2(out_pipe.data(), O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "child_process: pipe");
  }
  if (::pipe2(err_pipe.data(), O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw std::system_error(e, std::generic_category(), "child_process: pipe");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  reset_signals(attr);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const int rc = ::posix_spawn(&pid_, args[0], &actions, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  out_fd_ = out_pipe[0];
  err_fd_ = err_pipe[0];
  if (rc != 0) {
    close_fd(out_fd_);
    close_fd(err_fd_);
    pid_ = -1;
    throw std::system_error(rc, std::generic_category(), "child_process: posix_spawn " + argv[0]);
  }
}

child_process::~child_process() {
  if (pid_ > 0 && !status_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  close_fd(out_fd_);
  close_fd(err_fd_);
}

bool child_process::pump(std::chrono::milliseconds bound) {
  std::array<pollfd, 2> fds{pollfd{out_fd_, POLLIN, 0}, pollfd{err_fd_, POLLIN, 0}};
  if (out_fd_ < 0 && err_fd_ < 0) return false;
  const int n = ::poll(fds.data(), fds.size(), static_cast<int>(bound.count()));
  if (n <= 0) return true;
  std::array<char, 4096> buf{};
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].fd < 0 || fds[i].revents == 0) continue;
    const ssize_t got = ::read(fds[i].fd, buf.data(), buf.size());
    int& fd = i == 0 ? out_fd_ : err_fd_;
    if (got <= 0) {
      close_fd(fd);
      continue;
    }
    (i == 0 ? out_ : err_).append(buf.data(), static_cast<std::size_t>(got));
  }
  return out_fd_ >= 0 || err_fd_ >= 0;
}

std::size_t child_process::count(const std::string& needle) const {
  std::size_t n = 0;
  for (auto at = out_.find(needle); at != std::string::npos; at = out_.find(needle, at + 1)) ++n;
  return n;
}

bool child_process::wait_for_output(const std::string& needle, std::chrono::milliseconds bound,
                                    std::size_t times) {
  const auto deadline = clock::now() + bound;
  while (count(needle) < times) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() <= 0) return false;
    if (!pump(std::min(left, std::chrono::milliseconds(100)))) return count(needle) >= times;
  }
  return true;
}

void child_process::signal(int sig) const {
  if (pid_ > 0 && !status_) ::kill(pid_, sig);
}

std::optional<int> child_process::wait(std::chrono::milliseconds bound) {
  const auto deadline = clock::now() + bound;
  while (!status_) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      status_ = status;
      break;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() <= 0) return std::nullopt;
    // Reading keeps a chatty child from blocking on a full pipe; after EOF, wait in small steps.
    if (!pump(std::min(left, std::chrono::milliseconds(20)))) {
      ::poll(nullptr, 0, 10);
    }
  }
  while (pump(std::chrono::milliseconds(0))) {
    if (out_fd_ < 0 && err_fd_ < 0) break;
    // The child is gone: its pipes drain quickly and then report EOF.
    std::array<pollfd, 2> fds{pollfd{out_fd_, POLLIN, 0}, pollfd{err_fd_, POLLIN, 0}};
    if (::poll(fds.data(), fds.size(), 100) <= 0) break;
  }
  if (!WIFEXITED(*status_)) return std::nullopt;
  return WEXITSTATUS(*status_);
}

finished_process run_process(std::vector<std::string> argv, std::chrono::milliseconds bound) {
  child_process p(std::move(argv));
  auto code = p.wait(bound);
  if (!code) {
    p.signal(SIGKILL);
    p.wait(std::chrono::seconds(5));
  }
  return {code, p.out(), p.err()};
}

}  // namespace rlock::test
