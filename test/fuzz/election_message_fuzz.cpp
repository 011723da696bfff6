// libFuzzer target: an election channel's message (src/election/observer_sequence.hpp) fed
// arbitrary bytes, as a server or a foreign publisher may send them.
//
// Checks: no crash or sanitizer report; a refusal always says why; what parses has a change
// counter above 0 and a term of 0 or more, and written back in the published form it parses to
// the same change; an observer fed any run of them tells change counters that only grow, but
// for a record read below them (a record begun again), which restarts the order; with a
// quorum's numbering (inputs whose first byte is odd), (term, seq) pairs that only grow, and
// never a restart.
#include "election/observer_sequence.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

using rlock::detail::election_change;
using rlock::detail::election_event_word;
using rlock::detail::election_numbering;
using rlock::detail::observer_sequence;
using rlock::detail::parse_election_message;

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const bool quorum = size > 0 && (data[0] & 1) != 0;
  observer_sequence observer(quorum ? election_numbering::term_then_seq
                                    : election_numbering::one_record);
  std::uint64_t last = 0;
  std::int64_t last_term = 0;
  // Each line a message: a run of them through one observer.
  std::size_t start = 0;
  for (int lines = 0; lines < 64 && start <= input.size(); ++lines) {
    const auto end = input.find('\n', start);
    const auto line =
        input.substr(start, end == std::string_view::npos ? input.size() - start : end - start);
    const auto parsed = parse_election_message(line);
    if (!parsed.change) {
      check(!parsed.error.empty());
    } else {
      const auto& c = *parsed.change;
      check(parsed.error.empty() && c.seq > 0 && c.term >= 0);
      std::string again = std::to_string(c.seq) + ":" + std::to_string(c.term) + ":" +
                          std::string(election_event_word(c.what)) + ":" + c.value;
      const auto reparsed = parse_election_message(again);
      check(reparsed.change && reparsed.change->seq == c.seq && reparsed.change->term == c.term &&
            reparsed.change->what == c.what && reparsed.change->value == c.value);
      const auto told = (lines % 3 == 2) ? observer.on_snapshot(c) : observer.on_message(c);
      if (told && quorum) {
        check(told->term > last_term || (told->term == last_term && told->seq > last));
        check(last == 0 || told->seq <= last ? told->skipped == 0
                                             : told->skipped == told->seq - last - 1);
        last = told->seq;
        last_term = told->term;
      } else if (told) {
        // A record read below the last change told was begun again (the server lost its data):
        // the order restarts from it. Every other change told is above the last one.
        const bool restart = told->what == election_change::event::snapshot && told->seq < last;
        if (restart) {
          check(told->skipped == 0);
        } else {
          check(told->seq > last);
          check(last == 0 ? told->skipped == 0 : told->skipped == told->seq - last - 1);
        }
        last = told->seq;
      }
      check(observer.last_seq() == last);
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return 0;
}
