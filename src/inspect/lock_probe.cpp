#include "inspect/lock_probe.hpp"

#include "engine/lock_kind.hpp"
#include "engine/probe_row.hpp"
#include "kinds/registry.hpp"
#include "names/names.hpp"

#include <algorithm>
#include <cstdint>
#include <span>

namespace rlock::detail {

namespace {

using resp3::type;
using std::chrono::milliseconds;

constexpr auto common_count = static_cast<std::size_t>(probe_common::count);

/// What each common answer answers, for the words of a failure (probe_common's order).
constexpr std::string_view common_command[] = {"TYPE", "HGETALL", "PTTL", "TIME", "GET"};
static_assert(std::size(common_command) == common_count, "a name for every common answer");

failure common_failure(std::span<const resp3::value> answers,
                       std::initializer_list<probe_common> which) {
  for (const auto w : which) {
    const auto i = static_cast<std::size_t>(w);
    if (auto f = probe_failure(answers, i, common_command[i])) return f;
  }
  return {};
}

using channel_name = void (*)(std::string_view key, std::string& out);

/// What the probe asks beyond the common questions, from the registered kinds: the subscribers
/// of each kind's channel (lock_kind::channel, each channel once), then each row's own commands.
struct probe_plan {
  struct entry {
    const probe_row* row;
    std::size_t channel;  // its kind's channel, in `channels`
    std::size_t own_at;   // where its own answers start
  };
  std::vector<entry> rows;  // by type, then in their claiming order
  std::vector<channel_name> channels;
};

const probe_plan& plan() {
  static const probe_plan p = [] {
    std::vector<std::pair<const probe_row*, channel_name>> rows;
    for (const auto* k : registered_kinds()) {
      if (k->probe == nullptr) continue;
      if (std::none_of(rows.begin(), rows.end(),
                       [&](const auto& r) { return r.first == k->probe; })) {
        rows.emplace_back(k->probe, k->channel);
      }
    }
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
      return a.first->stored_as != b.first->stored_as ? a.first->stored_as < b.first->stored_as
                                                      : a.first->order < b.first->order;
    });
    probe_plan out;
    for (const auto& [row, channel] : rows) {
      const auto at = std::find(out.channels.begin(), out.channels.end(), channel);
      out.rows.push_back({row, static_cast<std::size_t>(at - out.channels.begin()), 0});
      if (at == out.channels.end()) out.channels.push_back(channel);
    }
    std::size_t at = common_count + out.channels.size();
    for (auto& e : out.rows) {
      e.own_at = at;
      at += e.row->command_count;
    }
    return out;
  }();
  return p;
}

// Redisson's and rlock's owner field: `<uuid>:<thread or owner id>`.
bool is_owner_field(std::string_view f) {
  const auto colon = f.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == f.size()) return false;
  return std::all_of(f.begin() + static_cast<std::ptrdiff_t>(colon) + 1, f.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

/// Every row stored as `stored_as` reads its answers, then the first that claims the keys names
/// the kind, its channel and that channel's subscribers (`claimed`: one did); a refused or
/// missing answer of such a row, or of its channel's count, is the failure.
failure read_rows(std::span<const resp3::value> answers, std::string_view stored_as,
                  lock_info& info, bool& claimed) {
  const auto& p = plan();
  probe_answers a;
  a.common = answers.first(std::min(answers.size(), common_count));
  a.now = probe_server_now(a[probe_common::server_time]);
  std::vector<const probe_plan::entry*> read;
  std::vector<probe_command> asked;
  for (const auto& e : p.rows) {
    if (e.row->stored_as != stored_as) continue;
    // Each of its answers is there and no refusal (named by the command it answers), or that is
    // the failure: a row reads only what it asked for.
    if (auto f = probe_failure(answers, common_count + e.channel, "PUBSUB")) return f;
    asked.clear();
    if (e.row->commands != nullptr) e.row->commands(info.key, "NUMSUB", asked);
    asked.resize(e.row->command_count, probe_command{"a kind's command"});
    for (std::size_t i = 0; i < e.row->command_count; ++i) {
      if (auto f = probe_failure(answers, e.own_at + i, asked[i].front())) return f;
    }
    a.own = answers.subspan(e.own_at, e.row->command_count);
    if (e.row->read != nullptr) e.row->read(a, info);
    read.push_back(&e);
  }
  claimed = false;
  for (const auto* e : read) {
    a.own = answers.subspan(e->own_at, e->row->command_count);
    a.subscribers = probe_numsub(answers[common_count + e->channel]);
    if (e->row->claim(a, info)) {
      claimed = true;
      info.kind = e->row->kind;
      info.channel = probe_name(p.channels[e->channel], info.key);
      info.subscribers = a.subscribers;
      return {};
    }
  }
  return {};
}

/// The subscribers of `info.channel` (the channel a free lock's waiters listen on), if the probe
/// asked for them.
void default_subscribers(std::span<const resp3::value> answers, lock_info& info) {
  const auto& channels = plan().channels;
  for (std::size_t c = 0; c < channels.size(); ++c) {
    if (probe_name(channels[c], info.key) == info.channel) {
      info.subscribers = probe_numsub(answers[common_count + c]);
    }
  }
}

/// A hash (or no key): a lock of the hash kinds, or a hash that is no lock's.
failure read_hash(std::span<const resp3::value> answers, lock_info& info) {
  using enum probe_common;
  if (auto f = common_failure(answers, {hash, pttl, server_time})) return f;
  auto owners = lock_holders(answers[static_cast<std::size_t>(hash)], &info.mode);
  if (!owners) {
    info.kind = key_kind::other;
    info.key_type = "hash";
    info.mode.reset();
    return {};
  }
  info.holders = std::move(*owners);
  // PTTL -2: the key went between HGETALL and PTTL (a pipeline is not atomic): free.
  const std::int64_t ttl = answers[static_cast<std::size_t>(pttl)].integer;
  if (ttl == -2) {
    info.holders.clear();
    info.mode.reset();
  } else if (!info.holders.empty() && ttl >= 0) {
    info.ttl = milliseconds(ttl);
  }
  bool claimed = false;
  if (auto f = read_rows(answers, "hash", info, claimed)) return f;
  // Nothing the kinds know: free, or owners in a hash no kind claims.
  if (!claimed) {
    info.kind = info.holders.empty() ? key_kind::absent : key_kind::other;
    default_subscribers(answers, info);
  }
  if (info.kind == key_kind::other) info.key_type = "hash";
  return {};
}

}  // namespace

std::vector<probe_command> probe_commands(std::string_view key, bool sharded) {
  const std::string_view numsub = sharded ? "SHARDNUMSUB" : "NUMSUB";
  const std::string k(key);
  std::vector<probe_command> cmds = {
      {"TYPE", k}, {"HGETALL", k}, {"PTTL", k}, {"TIME"}, {"GET", k}};
  const auto& p = plan();
  for (const auto channel : p.channels) {
    cmds.push_back({"PUBSUB", std::string(numsub), probe_name(channel, key)});
  }
  for (const auto& e : p.rows) {
    if (e.row->commands != nullptr) e.row->commands(key, numsub, cmds);
    // Each row's answers are found by its count: a row that adds another number of commands
    // would shift every later one.
    cmds.resize(e.own_at + e.row->command_count);
  }
  return cmds;
}

failure read_probe(const std::vector<resp3::value>& answers, lock_info& info) {
  using enum probe_common;
  // A lock of the hash kinds waits on the unlock channel while no kind claims the key.
  info.channel = unlock_channel(info.key);
  const std::span<const resp3::value> all(answers);
  if (auto f = common_failure(all, {key_type})) return f;
  const std::string& type_name = answers[static_cast<std::size_t>(key_type)].str;
  if (type_name == "hash" || type_name == "none") return read_hash(all, info);
  if (type_name == "string") {
    // GET refuses no string: only its text can tell a counter from other text.
    if (auto f = common_failure(all, {value})) return f;
    if (probe_int(answers[static_cast<std::size_t>(value)].str)) {
      if (auto f = common_failure(all, {server_time})) return f;
      bool claimed = false;
      if (auto f = read_rows(all, "string", info, claimed)) return f;
      if (claimed) return {};
    }
  }
  info.kind = key_kind::other;
  info.key_type = type_name;
  return {};
}

std::optional<std::vector<lock_holder>> lock_holders(const resp3::value& hgetall,
                                                     std::optional<hold_role>* mode) {
  // RESP3 answers a map; RESP2 (or a proxy) a flat array: both alternate field and value.
  if (hgetall.type != type::map && hgetall.type != type::array) return std::nullopt;
  const auto& e = hgetall.elements;
  if (e.size() % 2 != 0) return std::nullopt;
  std::optional<hold_role> found_mode;
  for (std::size_t i = 0; i < e.size(); i += 2) {
    if (e[i].str != "mode") continue;
    if (e[i + 1].str == "read") {
      found_mode = hold_role::read;
    } else if (e[i + 1].str == "write") {
      found_mode = hold_role::write;
    } else {
      return std::nullopt;
    }
  }
  std::vector<lock_holder> hs;
  for (std::size_t i = 0; i < e.size(); i += 2) {
    std::string_view field = e[i].str;
    if (field == "mode") continue;
    hold_role role = hold_role::exclusive;
    if (found_mode) {
      role = hold_role::read;
      if (field.ends_with(write_field_suffix)) {
        field.remove_suffix(write_field_suffix.size());
        role = hold_role::write;
      }
    }
    const auto count = probe_int(e[i + 1].str);
    if (!is_owner_field(field) || !count || *count <= 0) return std::nullopt;
    hs.push_back({std::string(field), *count, role});
  }
  if (mode != nullptr) *mode = found_mode;
  return hs;
}

}  // namespace rlock::detail
