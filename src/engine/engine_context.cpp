#include "engine/engine_context.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <random>

namespace rlock::detail {

namespace {

/// Writes `v` as 16 lowercase hex digits at `out`, a byte at a time.
void put_hex(char* out, std::uint64_t v) noexcept {
  static constexpr auto pairs = [] {
    std::array<char, 512> t{};
    constexpr char digits[] = "0123456789abcdef";
    for (std::size_t b = 0; b < 256; ++b) {
      t[2 * b] = digits[b >> 4];
      t[2 * b + 1] = digits[b & 15];
    }
    return t;
  }();
  for (std::size_t i = 8; i-- > 0; v >>= 8) std::memcpy(out + 2 * i, &pairs[2 * (v & 0xff)], 2);
}

std::string deployment_of(const config& c) {
  if (!c.cluster.nodes.empty()) return "cluster " + c.cluster.nodes.front();
  if (!c.sentinel.nodes.empty()) return "sentinel " + c.sentinel.master_name;
  return fmt::format("{}:{}", c.host, c.port);
}

}  // namespace

engine_config engine_config::from(const config& c) {
  engine_config e;
  static_cast<config&>(e) = c;
  e.deployment = deployment_of(c);
  return e;
}

engine_context::engine_context(boost::asio::any_io_executor ex, const config& c,
                               std::string client_uuid, ports p)
    : executor(std::move(ex)),
      cfg(engine_config::from(c)),
      uuid(std::move(client_uuid)),
      watchdog_lease_arg(cfg.watchdog_timeout.count()),
      latch_ttl_arg(std::max<std::int64_t>(1, 2 * cfg.command_timeout.count())),
      session(p.commands),
      scripts(p.scripts),
      hub(p.waits),
      dog(p.leases),
      attempts(p.attempts),
      latches(p.latches),
      log_(c.log),
      log_name_(c.client_name.empty() ? fmt::format("client {}", uuid.substr(0, 8))
                                      : c.client_name) {
  // Uniqueness, not secrecy, is what a request id needs (append_request_id).
  std::random_device entropy;
  std::mt19937_64 seeded((std::uint64_t{entropy()} << 32) | entropy());
  put_hex(id_prefix_, seeded());
  id_counter_ = seeded();
}

void engine_context::append_request_id(std::string& out) {
  const std::size_t at = out.size();
  out.resize(at + 32);
  std::memcpy(out.data() + at, id_prefix_, sizeof id_prefix_);
  put_hex(out.data() + at + 16, id_counter_++);
}

}  // namespace rlock::detail
