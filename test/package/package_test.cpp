// The package as users get it: rlock installed (from this build tree, shared in the ci preset,
// the tree the Debian packages are made of; static from a project that vendors it with
// add_subdirectory) and used by the consumer projects in test/consumer/ through find_package,
// pkg-config, add_subdirectory and FetchContent. The installed and vendored consumers are
// configured, built and run against this test's private redis-server (the fetched one and the
// shared vendored one configured: one vendored compile of rlock serves every route), so a broken
// install, a missing export or a leaked build flag fails CI.
#include "support/redis_server.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <spawn.h>
#include <sstream>
#include <string>
#include <string_view>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;

rlock::test::redis_server& server() {
  static rlock::test::redis_server s;
  return s;
}

struct outcome {
  int code = -1;
  std::string output;  // stdout and stderr
};

/// Runs `args` with `extra_env` added to the environment; output goes to a file, read back.
/// Bounded by ctest's timeout for this test.
outcome run(const std::vector<std::string>& args, const std::vector<std::string>& extra_env = {}) {
  static int n = 0;
  const fs::path log = fs::temp_directory_path() / ("rlock-package-" + std::to_string(::getpid()) +
                                                    "-" + std::to_string(n++) + ".log");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  // `extra_env` replaces what it names: a variable listed twice is read first-wins by some
  // programs and last-wins by others (ctest's children got the inherited CCACHE_BASEDIR).
  std::vector<std::string> env_strings(extra_env);
  const auto named = [&](std::string_view entry) {
    const auto name = entry.substr(0, entry.find('=') + 1);
    return std::any_of(extra_env.begin(), extra_env.end(),
                       [&](const std::string& x) { return x.starts_with(name); });
  };
  for (char** e = environ; *e != nullptr; ++e) {
    if (!named(*e)) env_strings.emplace_back(*e);
  }
  std::vector<char*> env;
  for (auto& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  outcome out;
  pid_t pid = -1;
  if (posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), env.data()) == 0) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    out.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  posix_spawn_file_actions_destroy(&actions);
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  out.output = text.str();
  fs::remove(log);
  return out;
}

/// A scratch directory removed at the end.
struct scratch {
  fs::path path = fs::temp_directory_path() / ("rlock-package-" + std::to_string(::getpid()));
  scratch() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~scratch() { fs::remove_all(path); }
};

/// `ctest --build-and-test`: configures and builds `project` in `build` with `options`, then
/// runs `command`. No build type is given, as a project that sets nothing: these builds check
/// how rlock is vendored, found and linked, and unoptimised they compile in about half the time.
outcome build_and_test(const fs::path& project, const fs::path& build,
                       const std::vector<std::string>& options,
                       const std::vector<std::string>& command,
                       const std::vector<std::string>& env = {}) {
  std::vector<std::string> args{RLOCK_CTEST,      "--build-and-test",  project.string(),
                                build.string(),   "--build-generator", "Ninja",
                                "--build-options"};
  args.insert(args.end(), options.begin(), options.end());
  args.emplace_back("--test-command");
  args.insert(args.end(), command.begin(), command.end());
  // With a compiler cache (scripts/test sets ccache as the launcher), paths are hashed relative
  // to the scratch folder: the vendored builds of one run share objects, and runs share them.
  std::vector<std::string> all_env{"CCACHE_BASEDIR=" + build.parent_path().string()};
  all_env.insert(all_env.end(), env.begin(), env.end());
  return run(args, all_env);
}

/// Configure options under which every variable read must have a value: a read of an unset one
/// is a developer warning, and the warning an error.
const std::vector<std::string> strict{"--warn-uninitialized", "-Werror=dev"};

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// The consumer projects, copied into the scratch folder `dir` before a build: their paths are
/// then the scratch folder's, which the compiler cache hashes relative to (build_and_test), so a
/// clone at another path still hits.
fs::path consumers(const fs::path& dir) {
  const auto to = dir / "consumer-src";
  if (!fs::exists(to)) {
    fs::copy(fs::path(RLOCK_SOURCE_DIR) / "test" / "consumer", to, fs::copy_options::recursive);
  }
  return to;
}

/// The find_package consumer built against the package installed at `prefix`, run through both
/// of its routes (the CMake package, pkg-config).
void use_installed(const fs::path& prefix, const fs::path& build) {
  const std::string port = std::to_string(server().port());
  // pkg-config looks where the package put rlock.pc (lib/ or lib/<multiarch>/).
  std::string pc_path;
  for (const auto& entry : fs::recursive_directory_iterator(prefix)) {
    if (entry.path().filename() == "rlock.pc") pc_path = entry.path().parent_path().string();
  }
  ASSERT_FALSE(pc_path.empty()) << "no rlock.pc under " << prefix;
  const std::vector<std::string> env{"PKG_CONFIG_PATH=" + pc_path,
                                     "LD_LIBRARY_PATH=" + fs::path(pc_path).parent_path().string()};
  const auto r =
      build_and_test(consumers(build.parent_path()) / "find_package", build,
                     {"-DCMAKE_PREFIX_PATH=" + prefix.string()}, {"consumer", port}, env);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("consumer ok"), std::string::npos) << r.output;
  const auto pc = run({(build / "consumer_pkg_config").string(), port}, env);
  EXPECT_EQ(pc.code, 0) << pc.output;
  EXPECT_NE(pc.output.find("consumer ok"), std::string::npos) << pc.output;
}

/// Checks that the shared library under `prefix` exports rlock's public API and nothing internal.
void exports_only_its_api(const fs::path& prefix) {
  fs::path so;
  for (const auto& entry : fs::recursive_directory_iterator(prefix)) {
    if (entry.path().filename().string().starts_with("librlock.so.")) so = entry.path();
  }
  ASSERT_FALSE(so.empty()) << "no librlock.so.* under " << prefix;
  const auto nm = run({"nm", "-D", "-C", "--defined-only", so.string()});
  ASSERT_EQ(nm.code, 0) << nm.output;
  // Exported: the public API. Not exported: anything internal (session, protocol, lock state).
  EXPECT_NE(nm.output.find("rlock::client::client("), std::string::npos);
  EXPECT_NE(nm.output.find("rlock::blocking::client::client("), std::string::npos);
  EXPECT_NE(nm.output.find("rlock::lock_handle::unlock()"), std::string::npos);
  // The exclusive kinds' forms are a header template over the handle's exported starts.
  EXPECT_NE(nm.output.find("rlock::lock_handle::start_acquire("), std::string::npos);
  // The only rlock::detail functions a consumer reaches: a failure made the awaitable forms'
  // exception, and the start of rlock::inspect (a free function over a client, whose token form
  // is a header template); every other operation is a member of an exported class.
  const std::set<std::string> api{"exception_of", "start_inspect"};
  const std::regex detail_symbol(R"(^[0-9a-f]* [TWVD] rlock::detail::([A-Za-z_0-9]+)[(<])");
  std::istringstream lines(nm.output);
  std::string line;
  std::size_t exported = 0;
  while (std::getline(lines, line)) {
    if (line.find(" rlock::") != std::string::npos) ++exported;
    std::smatch m;
    if (std::regex_search(line, m, detail_symbol)) {
      EXPECT_TRUE(api.contains(m[1].str())) << "exported internal symbol: " << line;
    }
    EXPECT_EQ(line.find("rlock::detail::multiplexer"), std::string::npos) << line;
    EXPECT_EQ(line.find("rlock::detail::connection"), std::string::npos) << line;
    EXPECT_EQ(line.find("rlock::detail::resp3"), std::string::npos) << line;
  }
  EXPECT_GT(exported, 20u);
}

// This build tree installed: in the ci preset the shared library the Debian packages are made
// of (scripts/package), so its exports are checked here; a static tree is installed and found
// the same way.
TEST(package, installed_library_is_found_by_cmake_and_pkg_config) {
  if (!RLOCK_INSTALL_RULES) GTEST_SKIP() << "configured with RLOCK_INSTALL=OFF";
  scratch dir;
  const auto install =
      run({RLOCK_CMAKE, "--install", RLOCK_BINARY_DIR, "--prefix", (dir.path / "prefix").string()});
  ASSERT_EQ(install.code, 0) << install.output;
  use_installed(dir.path / "prefix", dir.path / "consumer");
  if (RLOCK_SHARED) exports_only_its_api(dir.path / "prefix");
  if (RLOCK_TOOLS) {
    // The operators' tool comes with the package and works from where it was installed.
    const auto status =
        run({(dir.path / "prefix" / "bin" / "rlockctl").string(), "--url",
             "redis://127.0.0.1:" + std::to_string(server().port()), "status", "package:lock"});
    EXPECT_EQ(status.code, 0) << status.output;
    EXPECT_NE(status.output.find("package:lock: free"), std::string::npos) << status.output;
  }
}

/// The add_subdirectory consumer laid out as users vendor: its files in `project`, a copy of
/// rlock's sources in third_party/rlock (every top-level entry of this checkout but .git and the
/// build folders). A copy, not a link: the compiler sees paths in the scratch folder, so the
/// vendored build hits the compiler cache wherever the checkout is.
fs::path vendoring_project(const fs::path& project) {
  const auto from = consumers(project.parent_path());
  fs::create_directories(project / "third_party" / "rlock");
  fs::copy_file(from / "add_subdirectory" / "CMakeLists.txt", project / "CMakeLists.txt");
  fs::copy_file(from / "consumer.cpp", project / "consumer.cpp");
  for (const auto& entry : fs::directory_iterator(RLOCK_SOURCE_DIR)) {
    const auto name = entry.path().filename().string();
    if (name == ".git" || name.starts_with("build")) continue;
    fs::copy(entry.path(), project / "third_party" / "rlock" / name,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  return project;
}

/// The library file a vendored or fetched build made: librlock.a or librlock.so.<version>.
std::string library_made(const fs::path& build) {
  for (const auto& entry : fs::recursive_directory_iterator(build)) {
    const auto name = entry.path().filename().string();
    if (name == "librlock.a" || name.starts_with("librlock.so.")) return name;
  }
  return "";
}

/// What a program printed up to its first space or line end (git rev-parse's commit).
std::string first_word(const std::string& output) {
  return output.substr(0, output.find_first_of(" \n"));
}

/// Configures `project` in `build` (no build), strict; answers the ninja rules it wrote.
std::string configured_rules(const fs::path& project, const fs::path& build,
                             const std::vector<std::string>& options) {
  const auto r = run(std::vector<std::string>{RLOCK_CMAKE, "-S", project.string(), "-B",
                                              build.string(), "-G", "Ninja"} +
                     strict + options);
  EXPECT_EQ(r.code, 0) << r.output;
  std::ifstream ninja(build / "build.ninja");
  return {std::istreambuf_iterator<char>(ninja), std::istreambuf_iterator<char>()};
}

// A parent that sets BUILD_SHARED_LIBS ON gets a shared rlock; with --warn-uninitialized
// -Werror=dev, a read of any unset variable in rlock's CMake files fails. Configured, not built:
// the static vendored build below compiles and runs rlock vendored (FetchContent_MakeAvailable
// is add_subdirectory of the fetched sources, so one compiled vendored build serves both
// routes), and the shared library's link and exports are this build tree's
// (installed_library_…); this case only adds the parent's ON, which decides the library's kind
// at configure time.
TEST(package, vendored_with_add_subdirectory_follows_the_parents_build_shared_libs) {
  scratch dir;
  const auto project = vendoring_project(dir.path / "project");
  const auto rules = configured_rules(project, dir.path / "build-on", {"-DBUILD_SHARED_LIBS=ON"});
  EXPECT_NE(rules.find("librlock.so"), std::string::npos);
  EXPECT_EQ(rules.find("librlock.a"), std::string::npos);
}

// FetchContent as docs/install.md shows it, from this checkout's commit (offline: a file:// URL),
// with nothing else set: no build type, no BUILD_SHARED_LIBS (so a static rlock). Configured,
// not built, for the reason above: what is FetchContent's own (the fetch of a commit, the
// subproject's configure under a parent that sets nothing) happens at configure time; the
// compile, link and install of the same sources under a parent that sets nothing is the
// vendored build's below.
TEST(package, fetched_with_fetch_content_configures_a_static_library) {
  const auto head = run({"git", "-C", RLOCK_SOURCE_DIR, "rev-parse", "HEAD"});
  if (head.code != 0) GTEST_SKIP() << "not a git checkout: " << head.output;
  const std::string commit = first_word(head.output);
  scratch dir;
  const auto build = dir.path / "build";
  const auto rules =
      configured_rules(consumers(dir.path) / "fetch_content", build,
                       {"-DCONSUMER_RLOCK_REPOSITORY=file://" + std::string(RLOCK_SOURCE_DIR),
                        "-DCONSUMER_RLOCK_TAG=" + commit});
  // The commit was fetched, and its sources are what the consumer's build compiles.
  const auto fetched =
      run({"git", "-C", (build / "_deps" / "rlock-src").string(), "rev-parse", "HEAD"});
  EXPECT_EQ(first_word(fetched.output), commit) << fetched.output;
  EXPECT_NE(rules.find("librlock.a"), std::string::npos);
  EXPECT_EQ(rules.find("librlock.so"), std::string::npos);
  EXPECT_NE(rules.find("build consumer"), std::string::npos);
}

// Vendored as most projects do, with nothing said of BUILD_SHARED_LIBS: a static library,
// compiled file by file as written (a file that needs what only its unity neighbour includes
// fails here), with warnings as errors and its install rules on; the consumer runs, and the
// installed static library is found by CMake and pkg-config (which then needs fmt and OpenSSL).
TEST(package, vendored_static_library_builds_runs_and_installs) {
  scratch dir;
  const std::string port = std::to_string(server().port());
  const auto project = vendoring_project(dir.path / "project");
  const auto vendored = build_and_test(
      project, dir.path / "vendored",
      strict + std::vector<std::string>{"-DRLOCK_INSTALL=ON", "-DRLOCK_WARNINGS_AS_ERRORS=ON"},
      {"consumer", port});
  ASSERT_EQ(vendored.code, 0) << vendored.output;
  EXPECT_NE(vendored.output.find("consumer ok"), std::string::npos) << vendored.output;
  EXPECT_EQ(library_made(dir.path / "vendored"), "librlock.a");

  const auto prefix = dir.path / "prefix";
  const auto install = run(
      {RLOCK_CMAKE, "--install", (dir.path / "vendored").string(), "--prefix", prefix.string()});
  ASSERT_EQ(install.code, 0) << install.output;
  use_installed(prefix, dir.path / "consumer");
}

}  // namespace
