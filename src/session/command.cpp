#include "session/command.hpp"

#include "resp3/request.hpp"

#include <charconv>

namespace rlock::detail {

namespace {

/// The bytes of `keys` and `args` as bulk strings.
std::size_t bulks_size(std::span<const std::string_view> keys,
                       std::span<const std::string_view> args) noexcept {
  std::size_t n = 0;
  for (auto k : keys) n += resp3::bulk_size(k);
  for (auto a : args) n += resp3::bulk_size(a);
  return n;
}

}  // namespace

char* command::put_keys_and_args(char* p, std::span<const std::string_view> keys,
                                 std::span<const std::string_view> args) noexcept {
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i == 0) {
      // The key's bytes inside the encoding are the route: no copy.
      route_at_ =
          static_cast<std::size_t>(p - payload_.data()) + resp3::header_size(keys[0].size());
      route_size_ = keys[0].size();
    }
    p = resp3::put_bulk(p, keys[i]);
  }
  for (auto a : args) p = resp3::put_bulk(p, a);
  return p;
}

command::command(command_kind kind, std::string_view name, std::span<const std::string_view> keys,
                 std::span<const std::string_view> args)
    : kind_(kind) {
  const std::size_t count = 1 + keys.size() + args.size();
  payload_.resize(resp3::header_size(count) + resp3::bulk_size(name) + bulks_size(keys, args));
  char* p = resp3::put_header(payload_.data(), '*', count);
  p = resp3::put_bulk(p, name);
  put_keys_and_args(p, keys, args);
}

command command::script(command_kind kind, std::string_view sha,
                        std::span<const std::string_view> keys,
                        std::span<const std::string_view> args) {
  command c(kind);
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, keys.size()).ptr;
  const std::string_view numkeys(digits, static_cast<std::size_t>(end - digits));
  const std::size_t count = 3 + keys.size() + args.size();
  c.payload_.resize(resp3::header_size(count) + resp3::bulk_size("EVALSHA") +
                    resp3::bulk_size(sha) + resp3::bulk_size(numkeys) + bulks_size(keys, args));
  char* p = resp3::put_header(c.payload_.data(), '*', count);
  p = resp3::put_bulk(p, "EVALSHA");
  p = resp3::put_bulk(p, sha);
  p = resp3::put_bulk(p, numkeys);
  c.put_keys_and_args(p, keys, args);
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
