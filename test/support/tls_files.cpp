#include "support/tls_files.hpp"

#include "support/child_process.hpp"

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace rlock::test {

namespace {

/// Runs `openssl args...`; throws with its stderr if it fails.
void openssl(const std::vector<std::string>& args) {
  // child_process runs argv[0] as given. Built by appending: g++ 12 takes an insert at the front
  // for an out-of-bounds copy (-Warray-bounds, a false positive) once the PCH changes inlining.
  std::vector<std::string> argv{"/usr/bin/openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = run_process(argv, std::chrono::seconds(60));
  if (r.code != 0) throw std::runtime_error("openssl " + argv[1] + " failed: " + r.err);
}

}  // namespace

tls_files::tls_files()
    : dir_(std::filesystem::temp_directory_path() /
           ("rlock-tls-" + std::to_string(::getpid()) + "-" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()))) {
  std::filesystem::create_directories(dir_);
  const std::string names = "subjectAltName=DNS:localhost,IP:127.0.0.1";
  make_ca("ca");
  make_ca("rogue-ca");
  make_signed("ca", "server", "localhost", names);
  make_signed("ca", "client", "rlock-client", "");
  make_signed("rogue-ca", "rogue-server", "localhost", names);
}

tls_files::~tls_files() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

const tls_files& tls_files::shared() {
  static const tls_files files;
  return files;
}

void tls_files::make_ca(const std::string& name) {
  openssl({"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
           "/CN=rlock test " + name, "-keyout", path(name + ".key"), "-out", path(name + ".crt")});
}

void tls_files::make_signed(const std::string& ca, const std::string& name, const std::string& cn,
                            const std::string& san) {
  openssl({"req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + cn, "-keyout",
           path(name + ".key"), "-out", path(name + ".csr")});
  std::vector<std::string> sign{"x509",
                                "-req",
                                "-in",
                                path(name + ".csr"),
                                "-CA",
                                path(ca + ".crt"),
                                "-CAkey",
                                path(ca + ".key"),
                                "-CAcreateserial",
                                "-days",
                                "2",
                                "-out",
                                path(name + ".crt")};
  if (!san.empty()) {
    std::ofstream(dir_ / (name + ".ext")) << san << "\n";
    sign.insert(sign.end(), {"-extfile", path(name + ".ext")});
  }
  openssl(sign);
}

}  // namespace rlock::test
