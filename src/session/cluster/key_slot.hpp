#pragma once

#include <cstdint>
#include <string_view>

namespace rlock::detail {

/// Redis Cluster's 16 384 hash slots.
inline constexpr std::uint16_t slot_count = 16384;

/// CRC16-CCITT (XModem: polynomial 0x1021, initial value 0), the checksum Redis Cluster hashes
/// keys with (cluster spec, "Keys distribution model").
std::uint16_t crc16(std::string_view bytes) noexcept;

/// The part of a key that is hashed: the bytes between the first '{' and the first '}' after it
/// when there are any (a hash tag), else the whole key. `{}` or an unclosed `{` hash the whole
/// key, as Redis does.
std::string_view hash_tag(std::string_view key) noexcept;

/// The hash slot of a key (or of a sharded channel, hashed the same way): CRC16(tag) mod 16384.
inline std::uint16_t key_slot(std::string_view key) noexcept {
  return static_cast<std::uint16_t>(crc16(hash_tag(key)) & (slot_count - 1));
}

}  // namespace rlock::detail
