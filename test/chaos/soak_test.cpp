// The soak: 3 processes × (8 coroutines + 2 blocking threads) contending on 5 locks for 60 s
// through the fault proxy, while this process injects 20 faults drawn at random from the chaos
// list. The seed is printed; RLOCK_CHAOS_SEED=<seed> replays the same fault schedule.
// RLOCK_CHAOS_SOAK_SECONDS shortens or lengthens the run (the faults scale with it);
// RLOCK_CHAOS_SOAK_FAULTS and RLOCK_CHAOS_FAULT_KINDS change how many faults and which.
#include "chaos/scenario.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <thread>

extern char** environ;

namespace soak_test {

using namespace rlock::chaos;
using namespace std::chrono_literals;

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::stoull(v) : fallback;
}

pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return -1;
  return pid;
}

/// Waits for `pid` until `deadline`; then kills it (-9). Returns its exit code, or -1 if it had
/// to be killed.
int wait_exit(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(50ms);  // a child's exit has no event a test can await here
  }
}

/// The server's view of every lock under `prefix`, for a report when a worker hangs.
std::string dump_locks(std::uint16_t port, const std::string& prefix) {
  rlock::test::raw_client raw(port);
  std::ostringstream out;
  const auto keys = raw.command({"KEYS", "*" + prefix + "*"});
  for (const auto& k : keys.elements) {
    out << "  " << k.str << " pttl " << raw.command({"PTTL", k.str}).integer << " "
        << rlock::test::describe(raw.command({"HGETALL", k.str})) << '\n';
  }
  out << "  clients: " << rlock::test::describe(raw.command({"CLIENT", "LIST"})) << '\n';
  return out.str();
}

TEST(chaos, soak_three_processes_under_twenty_random_faults) {
  const std::uint64_t seed = env_or("RLOCK_CHAOS_SEED", std::random_device{}());
  const auto seconds = static_cast<int>(env_or("RLOCK_CHAOS_SOAK_SECONDS", 60));
  const auto faults = static_cast<int>(env_or("RLOCK_CHAOS_SOAK_FAULTS", 20));
  // RLOCK_CHAOS_FAULT_KINDS=7,8 draws only those kinds (the numbers of the switch below), to
  // aim a run at one mix of faults.
  std::vector<int> kinds;
  if (const char* k = std::getenv("RLOCK_CHAOS_FAULT_KINDS"); k != nullptr) {
    std::istringstream in(k);
    for (std::string item; std::getline(in, item, ',');) {
      if (!item.empty()) kinds.push_back(std::stoi(item) % 9);
    }
  }
  std::printf("soak seed %llu (replay: RLOCK_CHAOS_SEED=%llu), %d s\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed),
              seconds);
  std::fflush(stdout);
  std::mt19937_64 rng(seed);

  scenario s(rlock::test::redis_server::options::with_aof());
  const auto dir =
      std::filesystem::temp_directory_path() / ("rlock-soak-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::vector<pid_t> workers;
  for (int p = 0; p < 3; ++p) {
    const auto out = dir / ("p" + std::to_string(p) + ".history");
    workers.push_back(spawn({RLOCK_CHAOS_WORKER, std::to_string(s.proxy.port()), s.prefix,
                             "p" + std::to_string(p), std::to_string(seconds),
                             std::to_string(seed + static_cast<std::uint64_t>(p)), out.string()}));
    ASSERT_GT(workers.back(), 0);
  }

  // Faults begin once every worker is connected (connect() is one attempt by design): 3
  // processes × 2 clients, seen by the server under their names. Bounded.
  const bool connected = wait_until(
      [&] {
        rlock::test::raw_client raw(s.server.port());
        const auto list = raw.command({"CLIENT", "LIST"}).str;
        std::size_t n = 0;
        for (auto at = list.find("name=chaos-p"); at != std::string::npos;
             at = list.find("name=chaos-p", at + 1)) {
          ++n;
        }
        return n >= 6;
      },
      30s);
  if (!connected) {
    for (const pid_t w : workers) ::kill(w, SIGKILL);
    for (const pid_t w : workers) ::waitpid(w, nullptr, 0);
    FAIL() << "the workers did not connect within 30 s";
  }

  // One fault per slot, at a random point in its first half; each lasts at most 1.5 s.
  const auto slot = std::chrono::milliseconds(seconds * 1000 / (faults + 1));
  const auto begin = std::chrono::steady_clock::now() + slot / 2;
  std::ostringstream log;
  for (int i = 0; i < faults; ++i) {
    const auto at = begin + i * slot + std::chrono::milliseconds(rng() % (slot.count() / 2 + 1));
    std::this_thread::sleep_until(at);
    const auto length = std::chrono::milliseconds(300 + rng() % 1200);
    const int kind = kinds.empty() ? static_cast<int>(rng() % 9)
                                   : kinds[static_cast<std::size_t>(rng() % kinds.size())];
    log << "fault " << i << " at +"
        << std::chrono::duration_cast<std::chrono::milliseconds>(at - begin + slot / 2).count()
        << " ms: ";
    switch (kind) {
      case 0:
        log << "CLIENT KILL (" << s.kill_clients() << " connections)";
        break;
      case 1:
        log << "black hole " << length.count() << " ms";
        s.proxy.black_hole();
        std::this_thread::sleep_for(length);
        s.proxy.heal();
        break;
      case 2:
        log << "cut every proxied connection";
        s.proxy.cut_all();
        break;
      case 3:
        log << "refuse new connections for " << length.count() << " ms, after a cut";
        s.proxy.refuse();
        s.proxy.cut_all();
        std::this_thread::sleep_for(length);
        s.proxy.heal();
        break;
      case 4:
        log << "100 ms delay both ways for " << length.count() << " ms";
        s.proxy.set_delay(rlock::test::direction::to_server, 100ms);
        s.proxy.set_delay(rlock::test::direction::to_client, 100ms);
        std::this_thread::sleep_for(length);
        s.proxy.heal();
        break;
      case 5:
        log << "replies split at every byte for " << length.count() << " ms";
        s.proxy.split_replies(true);
        std::this_thread::sleep_for(length);
        s.proxy.heal();
        break;
      case 6:
        log << "CLIENT PAUSE " << length.count() << " ms";
        s.pause_clients(length);
        break;
      case 7:
        log << "SIGSTOP " << length.count() << " ms";
        s.stop_server(length);
        break;
      default:
        log << "SIGKILL + restart (AOF): data " << (s.restart_server() ? "kept" : "LOST");
        break;
    }
    log << '\n';
  }
  std::printf("%s", log.str().c_str());

  // A worker ends at most its drain (30 s) after the run; past that it hangs.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds) + 40s;
  history merged;
  for (std::size_t p = 0; p < workers.size(); ++p) {
    const int code = wait_exit(workers[p], deadline);
    if (code != 0) {
      std::printf("worker p%zu exited %d; locks:\n%s", p, code,
                  dump_locks(s.server.port(), s.prefix).c_str());
    }
    EXPECT_EQ(code, 0) << "worker p" << p;
    if (code != 0) continue;  // the others are still waited for (and killed if they hang)
    std::ifstream in(dir / ("p" + std::to_string(p) + ".history"), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    merged.merge(history::parse(text.str()));
  }
  std::filesystem::remove_all(dir);
  // This process recorded the restarts (and nothing else).
  const auto mine = s.rec.finish();
  merged.restarts = mine.restarts;
  record_server_leftovers(s.server.port(), s.prefix, merged);
  const auto v = check(merged);
  // What the engine did on its fault paths (lines naming an owner): a reader of a clean run's
  // log sees them too, not only a failed run's report.
  std::sort(merged.notes.begin(), merged.notes.end(),
            [](const note& a, const note& b) { return a.at < b.at; });
  std::size_t engine_lines = 0;
  for (const auto& n : merged.notes) {
    if (n.text.find("(owner ") == std::string::npos &&
        n.text.find("handoff from") == std::string::npos) {
      continue;
    }
    if (++engine_lines <= 200) {
      std::printf("  log %.3f ms %s\n", static_cast<double>(n.at - merged.begin) / 1e6,
                  n.text.c_str());
    }
  }
  std::printf("%zu lines logged, %zu of them on the engine's fault paths\n", merged.notes.size(),
              engine_lines);
  std::printf("%s", v.report().c_str());
  EXPECT_TRUE(v.clean()) << "seed " << seed << "\n" << v.report();
  EXPECT_GT(v.acquisitions, 100u);
}

}  // namespace soak_test
