#include "script/script_batch.hpp"

#include "rlock/error.hpp"
#include "script/loaded_source.hpp"
#include "session/redis_error.hpp"

#include <charconv>
#include <iterator>

namespace rlock::detail {

std::string batch_source(script s) {
  // `run` takes KEYS and ARGV as parameters: the script's body reads them as it would at the
  // top level. An error raised inside it (a redis.call refused) is a table with `err` in Redis
  // 7, a string before; both become that call's error reply. The two tables a call sees are
  // reused: a batch allocates no table per call.
  std::string out = "local function run(KEYS, ARGV)\n";
  out.append(loaded_source(s));
  out.append(
      "\nend\n"
      "local n = tonumber(ARGV[1])\n"
      "local out, keys, args, k, a = {}, {}, {}, 0, 1 + 2 * n\n"
      "for m = 1, n do\n"
      "  local nk, na = tonumber(ARGV[2 * m]), tonumber(ARGV[2 * m + 1])\n"
      "  for i = 1, nk do keys[i] = KEYS[k + i] end\n"
      "  for i = #keys, nk + 1, -1 do keys[i] = nil end\n"
      "  for i = 1, na do args[i] = ARGV[a + i] end\n"
      "  for i = #args, na + 1, -1 do args[i] = nil end\n"
      "  k, a = k + nk, a + na\n"
      "  local ok, r = pcall(run, keys, args)\n"
      "  if not ok and type(r) ~= 'table' then r = redis.error_reply(tostring(r)) end\n"
      "  if r == nil then r = false end\n"
      "  out[m] = r\n"
      "end\n"
      "return out\n");
  return out;
}

batch_arguments::piece batch_arguments::put(std::string_view s) {
  const piece p{static_cast<std::uint32_t>(bytes_.size()), static_cast<std::uint32_t>(s.size())};
  bytes_.append(s);
  return p;
}

void batch_arguments::add(std::span<const std::string_view> keys,
                          std::span<const std::string_view> args) {
  if (calls_ == 0) {
    // Sized for a group of 16 such calls: a multi-lock's members grow nothing.
    std::size_t bytes = 8;
    for (const auto k : keys) bytes += k.size();
    for (const auto a : args) bytes += a.size();
    bytes_.reserve(16 * bytes);
    keys_.reserve(16 * keys.size());
    args_.reserve(16 * args.size());
    counts_.reserve(33);
    counts_.push_back({});  // ARGV[1], the number of calls: made with the views
  }
  ++calls_;
  for (const auto k : keys) keys_.push_back(put(k));
  for (const auto a : args) args_.push_back(put(a));
  counts_.push_back(put_count(keys.size()));
  counts_.push_back(put_count(args.size()));
}

batch_arguments::piece batch_arguments::put_count(std::size_t n) {
  char text[24];
  const auto end = std::to_chars(std::begin(text), std::end(text), n).ptr;
  return put(std::string_view(text, static_cast<std::size_t>(end - text)));
}

std::vector<std::string_view> batch_arguments::views(const std::vector<piece>& pieces) const {
  std::vector<std::string_view> out;
  out.reserve(pieces.size());
  for (const auto& p : pieces) out.emplace_back(bytes_.data() + p.at, p.size);
  return out;
}

std::vector<std::string_view> batch_arguments::keys() const { return views(keys_); }

std::vector<std::string_view> batch_arguments::call_args() const { return views(args_); }

std::vector<std::string_view> batch_arguments::args() const {
  auto out = views(counts_);
  calls_text_ = std::to_string(calls_);
  out.front() = calls_text_;  // ARGV[1]
  const auto more = views(args_);
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

std::vector<batch_reply> split_batch_reply(resp3::value&& answer, std::size_t calls) {
  std::vector<batch_reply> out(calls);
  const auto malformed = [](batch_reply& r) {
    r.ec = make_error_code(errc::protocol_error);
    r.value = resp3::error_reply("a batch script's answer is malformed");
  };
  if (answer.type != resp3::type::array || answer.elements.size() != calls) {
    for (auto& r : out) malformed(r);
    return out;
  }
  for (std::size_t i = 0; i < calls; ++i) {
    out[i].value = std::move(answer.elements[i]);
    if (out[i].value.is_error()) out[i].ec = make_error_code(errc_of_reply(out[i].value.str));
  }
  return out;
}

}  // namespace rlock::detail
