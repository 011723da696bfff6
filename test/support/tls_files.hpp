#pragma once

#include <filesystem>
#include <string>

namespace rlock::test {

/// Throwaway certificates made at test time with the `openssl` command, in a fresh directory
/// removed at the end: `ca` signs `server` (CN localhost, SANs DNS:localhost and IP:127.0.0.1)
/// and `client`; `rogue-ca` signs `rogue-server` (the same names, a CA nobody trusts). Each as
/// `<name>.crt` and `<name>.key`. Throws std::runtime_error with openssl's words on failure.
class tls_files {
 public:
  tls_files();
  ~tls_files();
  tls_files(const tls_files&) = delete;
  tls_files& operator=(const tls_files&) = delete;

  std::string path(const std::string& file) const { return (dir_ / file).string(); }

  /// One set per test process, made on first use (RSA key generation takes a while).
  static const tls_files& shared();

 private:
  void make_ca(const std::string& name);
  void make_signed(const std::string& ca, const std::string& name, const std::string& cn,
                   const std::string& san);

  std::filesystem::path dir_;
};

}  // namespace rlock::test
