#pragma once

// Redisson's permit ids (RPermitExpirableSemaphore): 16 bytes. Its API shows them as 32
// lowercase hex digits (ByteBufUtil.hexDump) and decodes them back (decodeHexDump) before every
// script, so `{<key>}:timeout` stores the raw bytes. rlock uses the same form, so an id handed
// from a Java service to a C++ one (or back) names the same permit.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rlock::detail {

inline constexpr std::size_t permit_id_size = 16;

/// The score Redisson gives a permit taken without a lease (nonExpirableTimeout): it never
/// expires. The semaphore's acquire script (scripts.hpp) spells the same number in its Lua.
inline constexpr std::int64_t redisson_never_expires = 922337203685477;

namespace permit_id_detail {

inline constexpr std::string_view digits = "0123456789abcdef";

constexpr int nibble(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace permit_id_detail

/// The 16 bytes of a hold's id: the first 8 bytes of the client's UUID (its 8-4-4-4-12 text),
/// then the owner id, big-endian. Unique per client (owner ids are) and across clients as the
/// UUIDs' first 64 bits are; an operator reads the client in the id's first 16 digits.
inline std::string permit_id_of(std::string_view client_uuid, std::uint64_t owner) {
  std::string id;
  id.reserve(permit_id_size);
  int high = -1;
  for (const char c : client_uuid) {
    const int n = permit_id_detail::nibble(c);
    if (n < 0) continue;  // the dashes
    if (high < 0) {
      high = n;
      continue;
    }
    id.push_back(static_cast<char>(high << 4 | n));
    high = -1;
    if (id.size() == 8) break;
  }
  id.resize(8, '\0');  // a UUID is always long enough; a shorter text pads, never overruns
  for (int shift = 56; shift >= 0; shift -= 8) {
    id.push_back(static_cast<char>((owner >> shift) & 0xff));
  }
  return id;
}

/// 32 lowercase hex digits of `raw`'s bytes (any length: what the zset holds is shown as is).
inline std::string permit_id_hex(std::string_view raw) {
  std::string hex;
  hex.reserve(raw.size() * 2);
  for (const char c : raw) {
    const auto b = static_cast<unsigned char>(c);
    hex.push_back(permit_id_detail::digits[b >> 4]);
    hex.push_back(permit_id_detail::digits[b & 0xf]);
  }
  return hex;
}

/// The 16 bytes of an id given as 32 hex digits (either case, as decodeHexDump accepts);
/// nothing for any other text.
inline std::optional<std::string> permit_id_from_hex(std::string_view hex) {
  if (hex.size() != 2 * permit_id_size) return std::nullopt;
  std::string raw;
  raw.reserve(permit_id_size);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int high = permit_id_detail::nibble(hex[i]);
    const int low = permit_id_detail::nibble(hex[i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    raw.push_back(static_cast<char>(high << 4 | low));
  }
  return raw;
}

}  // namespace rlock::detail
