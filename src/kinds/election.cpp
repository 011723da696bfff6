// An election's lock (rlock::election, src/election/): Redisson's fenced lock on the name, whose
// acquire also writes the leader record and publishes `elected`, and whose final release
// publishes `resigned`, each in the same script (election_* rows of scripts.hpp). Waiting,
// renewal, force and reconciliation are the fenced lock's.
#include "engine/define_kind.hpp"
#include "kinds/hash_lock.hpp"
#include "kinds/registry.hpp"
#include "names/names.hpp"

namespace rlock::detail {

namespace {

using namespace hash_lock;

/// The record and the election channel, in `scratch` (one buffer; the views are taken after it
/// is whole).
std::pair<std::string_view, std::string_view> election_names(std::string_view key,
                                                             std::string& scratch) {
  scratch.clear();
  append_tagged_name(election_record_prefix, key, scratch);
  const auto record_size = scratch.size();
  append_tagged_name(election_channel_prefix, key, scratch);
  const std::string_view all(scratch);
  return {all.substr(0, record_size), all.substr(record_size)};
}

/// The campaign: the fenced acquire, the record and `elected`, or this candidate's term if it
/// leads already (no second hold: a leader's hold count stays 1).
void campaign_call(const lock_identity& s, const acquire_inputs& in, acquire_script_call& call) {
  call.which = script::election_campaign;
  // One buffer for the counter, the record and the channel; viewed once it is whole.
  call.scratch = token_counter(s.key);
  const auto counter_end = call.scratch.size();
  append_tagged_name(election_record_prefix, s.key, call.scratch);
  const auto record_end = call.scratch.size();
  append_tagged_name(election_channel_prefix, s.key, call.scratch);
  const std::string_view all(call.scratch);
  call.keys[0] = s.key;
  call.keys[1] = all.substr(0, counter_end);
  call.keys[2] = all.substr(counter_end, record_end - counter_end);
  call.keys[3] = all.substr(record_end);
  call.key_count = 4;
  call.args[0] = in.lease_ms;
  call.args[1] = s.field;
  call.args[2] = in.argument;
  call.args[3] = in.publish;
  call.arg_count = 4;
}

/// A lost campaign: this owner's hold count and the record's term, in one round trip. While it
/// holds the lock nobody else writes the record (every writer checks the holder), and the
/// campaign wrote both in one script: a hold means the record's term is this campaign's (read as
/// the fenced lock reads its counter: token_judge).
command campaign_question(const lock_identity& s) {
  command c = reentrant_question(s);
  std::string record;
  append_tagged_name(election_record_prefix, s.key, record);
  c.then(
      command(command_kind::query, "HGET", {std::string_view(record)}, {std::string_view("term")})
          .take_payload());
  return c;
}

/// Redisson's latched unlock, plus `resigned` on the election channel when it ends the lead.
void resign_call(const lock_identity& s, const release_inputs& in, release_script_call& call) {
  release_call(s, in, call);
  const auto [record, channel] = election_names(s.key, call.scratch);
  call.which = script::election_resign;
  call.keys[3] = record;
  call.keys[4] = channel;
  call.key_count = 5;
}

}  // namespace

constinit const lock_kind election_kind = define_kind({
    .name = "election",
    .acquire_call = &campaign_call,
    .decode = &token_decode,  // {-1, term} or {pttl, -1}
    .reconcile_question = &campaign_question,
    .judge = &token_judge,
    .release_call = &resign_call,
    .transfer_call = nullptr,  // every leader takes a new term: no handoff
    .force_call = &force_call,
    .leave_call = nullptr,
    .renew = script::renew,
    .channel = &append_unlock_channel,
    .waiting = wait_mode::lock_channel,
    .on_message = &on_unlock_message,
    .takes_argument = true,  // the candidate's value
});

}  // namespace rlock::detail
