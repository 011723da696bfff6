#include "support/redis_server.hpp"

#include "support/child_process.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <random>
#include <signal.h>
#include <spawn.h>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace rlock::test {
namespace {

using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto start_timeout = 10s;
constexpr auto poll_interval = 20ms;
constexpr auto stop_timeout = 5s;
constexpr int max_attempts = 5;

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), "redis_server: " + what);
}

/// Closes a file descriptor on scope exit.
class fd_guard {
 public:
  explicit fd_guard(int fd) noexcept : fd_(fd) {}
  ~fd_guard() {
    if (fd_ >= 0) ::close(fd_);
  }
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

/// A port that was free a moment ago: bind to port 0, read what the kernel chose, close. Another
/// process may take it before redis-server binds it; the caller retries then.
std::uint16_t free_port() {
  fd_guard fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) throw_errno("socket");
  sockaddr_in addr = loopback(0);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    throw_errno("bind 127.0.0.1:0");
  }
  socklen_t len = sizeof addr;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw_errno("getsockname");
  }
  return ntohs(addr.sin_port);
}

std::string find_redis_server() { return find_program("redis-server", "RLOCK_REDIS_SERVER"); }

}  // namespace

std::string find_program(std::string_view name, const char* env_var) {
  if (const char* env = std::getenv(env_var); env != nullptr && *env != '\0') return env;
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string_view rest(path);
    for (;;) {
      const auto colon = rest.find(':');
      const auto dir = rest.substr(0, colon);
      if (!dir.empty()) {
        std::string candidate = std::string(dir) + "/" + std::string(name);
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      }
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  return "/usr/bin/" + std::string(name);
}

namespace {

std::string make_temp_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = (tmp != nullptr && *tmp != '\0') ? tmp : "/tmp";
  pattern += "/rlock-redis-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw_errno("mkdtemp " + pattern);
  return pattern;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string tail(const std::string& text, std::size_t max = 2000) {
  if (text.size() <= max) return text;
  return "..." + text.substr(text.size() - max);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped (status " + std::to_string(status) + ")";
}

bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const auto n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

/// True if a server on `port` answers PING with +PONG and is our child `pid` (INFO server's
/// process_id): if the port was taken in between, whoever took it must not pass for our server.
bool probe(std::uint16_t port, pid_t pid) {
  fd_guard fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return false;
  // Receive and send timeouts bound every call below, so a stranger that accepts but never
  // answers cannot hang the probe.
  timeval tv{};
  tv.tv_sec = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  const sockaddr_in addr = loopback(port);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return false;
  }
  if (!send_all(fd.get(), "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")) return false;

  constexpr std::string_view pong = "+PONG\r\n";
  std::string in;
  char buf[4096];
  for (;;) {
    // Wait for "+PONG\r\n$<len>\r\n" and then <len> bytes of INFO text plus CRLF.
    if (in.size() >= pong.size() && in.compare(0, pong.size(), pong) != 0) return false;
    if (const auto header_end = in.find("\r\n", pong.size()); header_end != std::string::npos) {
      if (in[pong.size()] != '$') return false;
      const auto len = std::strtoul(in.c_str() + pong.size() + 1, nullptr, 10);
      const auto body = header_end + 2;
      if (in.size() >= body + len + 2) {
        const std::string info = in.substr(body, len);
        return info.find("process_id:" + std::to_string(pid) + "\r\n") != std::string::npos;
      }
    }
    const auto n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    in.append(buf, static_cast<std::size_t>(n));
  }
}

/// Reaps `pid` if it has exited. Returns true and sets `status` then.
bool reaped(pid_t pid, int& status) {
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      status = -1;  // ECHILD: someone else reaped it; it is gone either way
      return true;
    }
    return false;
  }
}

}  // namespace

redis_server::redis_server() : redis_server(options{}) {}

redis_server::redis_server(options opts) : opts_(opts) {
  dir_ = make_temp_dir();
  try {
    for (int attempt = 0; attempt < max_attempts; ++attempt) {
      const std::uint16_t port = free_port();
      if (try_start(port)) {
        port_ = port;
        return;
      }
    }
    throw std::runtime_error(
        "redis_server: every port tried was taken before redis-server bound "
        "it; last log:\n" +
        tail(read_file(log_path())));
  } catch (...) {
    stop();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw;
  }
}

redis_server::~redis_server() {
  stop();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string redis_server::log_path() const { return dir_ + "/redis.log"; }

void redis_server::kill_hard() noexcept {
  if (pid_ <= 0 || owner_ != ::getpid()) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

void redis_server::restart() {
  if (pid_ > 0) kill_hard();
  // The port was ours a moment ago; another process taking it in between is unlikely, but the
  // start is retried a few times (TIME_WAIT does not matter: redis-server sets SO_REUSEADDR).
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    if (try_start(port_)) return;
    std::this_thread::sleep_for(100ms);
  }
  throw std::runtime_error("redis_server: could not restart on port " + std::to_string(port_));
}

bool redis_server::try_start(std::uint16_t port) {
  const std::string exe = find_redis_server();
  const std::string port_text = std::to_string(port);
  const std::string log = log_path();
  std::vector<std::string> args = {exe,      "--port",     port_text,      "--bind", "127.0.0.1",
                                   "--save", "",           "--appendonly", "no",     "--daemonize",
                                   "no",     "--loglevel", "warning",      "--dir",  dir_};
  if (opts_.sentinel_of != 0) {
    // Sentinel takes its monitors from a config file it may rewrite: one per start, in our dir.
    const std::string conf = dir_ + "/sentinel.conf";
    std::ofstream out(conf, std::ios::trunc);
    out << "port " << port << "\nbind 127.0.0.1\n"
        << "sentinel monitor " << opts_.master_name << " 127.0.0.1 " << opts_.sentinel_of << ' '
        << opts_.quorum << "\nsentinel down-after-milliseconds " << opts_.master_name
        << " 1000\nsentinel failover-timeout " << opts_.master_name << " 3000\n";
    out.close();
    if (!out) throw_errno("writing " + conf);
    args = {exe, conf, "--sentinel", "--daemonize", "no", "--loglevel", "warning", "--dir", dir_};
  }
  if (opts_.sentinel_of == 0) {
    // Redis 7 waits 5 s before a diskless full sync: until then a replica has nothing, and a
    // failover (Sentinel's or a cluster's, which refuses a replica that never synced) loses
    // everything or does not happen.
    args.insert(args.end(), {"--repl-diskless-sync-delay", "0"});
  }
  if (opts_.replica_of != 0) {
    args.insert(args.end(), {"--replicaof", "127.0.0.1", std::to_string(opts_.replica_of)});
  }
  if (opts_.aof) {
    args[8] = "yes";
    args.insert(args.end(), {"--appendfsync", "always"});
  }
  if (opts_.cluster) {
    // Chosen once, like the TLS port: a restarted node keeps its bus address (nodes.conf, in
    // our dir, keeps its identity).
    if (bus_port_ == 0) bus_port_ = free_port();
    args.insert(args.end(), {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                             "--cluster-port", std::to_string(bus_port_), "--cluster-node-timeout",
                             std::to_string(opts_.cluster_node_timeout_ms)});
  }
  if (!opts_.tls_cert.empty()) {
    // Chosen once: a restart keeps both ports.
    if (tls_port_ == 0) tls_port_ = free_port();
    args.insert(args.end(), {"--tls-port", std::to_string(tls_port_), "--tls-cert-file",
                             opts_.tls_cert, "--tls-key-file", opts_.tls_key, "--tls-ca-cert-file",
                             opts_.tls_ca, "--tls-auth-clients", opts_.tls_auth_clients});
    if (opts_.tls_cluster) {
      args.insert(args.end(), {"--tls-cluster", "yes", "--tls-replication", "yes"});
    }
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // Asio does not open sockets with CLOEXEC: without this the server would inherit the test's
  // client sockets and keep their connections open after the test closes them.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  reset_signals(attr);

  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, exe.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    throw std::system_error(rc, std::generic_category(), "redis_server: posix_spawn " + exe);
  }
  pid_ = pid;
  owner_ = ::getpid();

  const auto deadline = clock::now() + start_timeout;
  for (;;) {
    int status = 0;
    if (reaped(pid_, status)) {
      pid_ = -1;
      const std::string text = read_file(log);
      if (text.find("Address already in use") != std::string::npos) return false;
      throw std::runtime_error("redis_server: " + exe + " on port " + port_text + " " +
                               describe_status(status) + "; log:\n" + tail(text));
    }
    if (probe(port, pid_)) return true;
    if (clock::now() >= deadline) {
      stop();
      throw std::runtime_error("redis_server: " + exe + " on port " + port_text +
                               " did not answer PING within 10 s; log:\n" + tail(read_file(log)));
    }
    std::this_thread::sleep_for(poll_interval);
  }
}

void redis_server::stop() noexcept {
  // A forked child (e.g. a gtest death test) must not stop its parent's server.
  if (pid_ <= 0 || owner_ != ::getpid()) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  const auto deadline = clock::now() + stop_timeout;
  while (!reaped(pid_, status)) {
    if (clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(poll_interval);
  }
  pid_ = -1;
}

redis_server& shared_server() {
  // A function-local static: started on first use, stopped by its destructor at process exit.
  static redis_server server;
  return server;
}

std::string unique_prefix() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string prefix = info != nullptr ? info->test_suite_name() : "no-test";
  prefix += '.';
  prefix += info != nullptr ? info->name() : "no-test";

  thread_local std::mt19937 random{std::random_device{}()};
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, ":%08x:", static_cast<unsigned>(random()));
  return prefix + suffix;
}

}  // namespace rlock::test
