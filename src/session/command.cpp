#include "session/command.hpp"

#include "resp3/request.hpp"

#include <charconv>

namespace rlock::detail {

void command::append_route_key(std::string_view key) {
  // The key's bytes inside the encoding are the route: no copy.
  resp3::append_bulk(payload_, key);
  route_at_ = payload_.size() - 2 - key.size();
  route_size_ = key.size();
}

command::command(command_kind kind, std::string_view name, std::span<const std::string_view> keys,
                 std::span<const std::string_view> args)
    : kind_(kind) {
  std::size_t size = 16 + name.size();
  for (auto k : keys) size += 16 + k.size();
  for (auto a : args) size += 16 + a.size();
  payload_.reserve(size);
  resp3::append_array_header(payload_, 1 + keys.size() + args.size());
  resp3::append_bulk(payload_, name);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i == 0) {
      append_route_key(keys[i]);
    } else {
      resp3::append_bulk(payload_, keys[i]);
    }
  }
  for (auto a : args) resp3::append_bulk(payload_, a);
}

command command::script(command_kind kind, std::string_view sha,
                        std::span<const std::string_view> keys,
                        std::span<const std::string_view> args) {
  command c(kind);
  std::size_t size = 64 + sha.size();
  for (auto k : keys) size += 16 + k.size();
  for (auto a : args) size += 16 + a.size();
  c.payload_.reserve(size);
  resp3::append_array_header(c.payload_, 3 + keys.size() + args.size());
  resp3::append_bulk(c.payload_, "EVALSHA");
  resp3::append_bulk(c.payload_, sha);
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, keys.size()).ptr;
  resp3::append_bulk(c.payload_, std::string_view(digits, static_cast<std::size_t>(end - digits)));
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i == 0) {
      c.append_route_key(keys[i]);
    } else {
      resp3::append_bulk(c.payload_, keys[i]);
    }
  }
  for (auto a : args) resp3::append_bulk(c.payload_, a);
  return c;
}

command command::about(command_kind kind, std::string_view route, std::string_view name,
                       std::initializer_list<std::string_view> args) {
  command c(kind, name, std::span<const std::string_view>{},
            std::span<const std::string_view>(args.begin(), args.size()));
  c.own_route_ = route;
  return c;
}

command command::encoded(command_kind kind, std::string_view route, std::string payload,
                         std::uint8_t answers) {
  command c(kind);
  c.payload_ = std::move(payload);
  c.answers_ = answers;
  c.own_route_ = route;
  return c;
}

void command::then(std::string_view encoded) {
  payload_.append(encoded);
  ++answers_;
}

}  // namespace rlock::detail
