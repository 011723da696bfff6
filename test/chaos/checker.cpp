#include "chaos/checker.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace rlock::chaos {

namespace {

std::string ms(nanos t, nanos origin) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(3);
  out << static_cast<double>(t - origin) / 1e6 << " ms";
  return out.str();
}

std::string describe(const acquisition& a, nanos origin) {
  return a.owner + (a.shared ? " (read)" : "") +
         (a.permits > 0 ? " (" + std::to_string(a.permits) + " permits)" : "") + " [" +
         ms(a.acquired, origin) + ", " + ms(a.ended, origin) + " " + std::string(to_string(a.end)) +
         "]";
}

/// The belief interval's end: an open acquisition is believed until the history's end.
acquisition closed(acquisition a, nanos end) {
  if (a.end == end_kind::open) a.ended = std::max(end, a.acquired);
  return a;
}

/// The notes logged in [from, to] that name `lock` (`lock '<lock>'`) or no lock at all, after a
/// heading naming `what`; bounded, a flood of lines explains nothing.
void add_context(const history& h, const std::string& lock, nanos from, nanos to,
                 const std::string& what, std::vector<std::string>& out) {
  constexpr std::size_t max_lines = 60;
  const std::string named = "lock '" + lock + "'";
  std::vector<const note*> lines;
  for (const auto& n : h.notes) {
    if (n.at < from || n.at > to) continue;
    const bool about_it = n.text.find(named) != std::string::npos;
    if (about_it || n.text.find("lock '") == std::string::npos) lines.push_back(&n);
  }
  std::sort(lines.begin(), lines.end(), [](const note* a, const note* b) { return a->at < b->at; });
  out.push_back("near " + what + ":");
  for (std::size_t i = 0; i < lines.size() && i < max_lines; ++i) {
    out.push_back("  " + ms(lines[i]->at, h.begin) + " " + lines[i]->text);
  }
  if (lines.size() > max_lines) {
    out.push_back("  ... " + std::to_string(lines.size() - max_lines) + " more");
  }
  if (lines.empty()) out.push_back("  (nothing logged)");
}

/// The observer rule (elections): each observer's changes are a subsequence of the true one.
/// The true sequence is numbered by the record's `seq`: every observer that was told change `seq`
/// of an election was told the same term and value (and, unless one read it as a snapshot, the
/// same event); an observer's changes come in increasing `seq`, each gap counted in `skipped`;
/// terms never go down along `seq`; and an `elected` change names a term some acquisition of the
/// election won (unless the server lost data, which may also reset the counter).
void check_observations(const history& h, bool data_lost, verdict& v) {
  std::map<std::pair<std::string, std::uint64_t>, const observation*> truth;
  std::map<std::pair<std::string, std::string>, const observation*> last;  // per observer
  for (const auto& o : h.observations) {
    const auto who = o.observer + " of " + o.lock + " seq " + std::to_string(o.seq);
    const auto key = std::pair{o.lock, o.seq};
    if (const auto [at, first] = truth.emplace(key, &o); !first) {
      const auto& t = *at->second;
      const bool same_event = t.event == o.event || t.event == "snapshot" || o.event == "snapshot";
      if (!data_lost && (t.term != o.term || t.value != o.value || !same_event)) {
        v.violations.push_back("observer " + who + ": told " + o.event + " term " +
                               std::to_string(o.term) + " '" + o.value + "', but " + t.observer +
                               " was told " + t.event + " term " + std::to_string(t.term) + " '" +
                               t.value + "'");
      }
    }
    auto& prev = last[{o.observer, o.lock}];
    if (prev != nullptr) {
      if (o.seq <= prev->seq) {
        v.violations.push_back("observer " + who + ": told after seq " + std::to_string(prev->seq) +
                               " (a repeat or out of order)");
      } else if (o.skipped != o.seq - prev->seq - 1) {
        v.violations.push_back("observer " + who + ": skipped " + std::to_string(o.skipped) +
                               ", but " + std::to_string(o.seq - prev->seq - 1) +
                               " changes came between it and seq " + std::to_string(prev->seq));
      }
    }
    prev = &o;
  }
  if (data_lost) return;  // a server that forgot its record numbers its changes again
  std::int64_t term = 0;
  std::string lock;
  for (const auto& [key, o] : truth) {
    if (key.first != lock) {
      lock = key.first;
      term = 0;
    }
    if (o->term < term) {
      v.violations.push_back("election " + lock + ": seq " + std::to_string(key.second) +
                             " has term " + std::to_string(o->term) + " after term " +
                             std::to_string(term));
    }
    term = std::max(term, o->term);
    if (o->event != "elected") continue;
    // The workload campaigns with its owner's name as the value: the win of this term, if the
    // workload saw it, is that owner's. (A win given back unseen, its caller cancelled or out
    // of time, has no acquisition: its term is still held to the order above.)
    for (const auto& a : h.acquisitions) {
      if (a.lock == lock && a.token == o->term && a.owner != o->value) {
        v.violations.push_back("election " + lock + ": term " + std::to_string(o->term) +
                               " was won by " + a.owner + ", but observers were told " + o->value);
      }
    }
  }
}

}  // namespace

verdict check(const history& h, const checker_options& opts) {
  verdict v;
  v.acquisitions = h.acquisitions.size();
  v.operations = h.operations.size();
  const nanos origin = h.begin;

  // Data loss first: every restart that lost data is reported, overlaps or not.
  std::vector<restart> losses;
  for (const auto& r : h.restarts) {
    if (!r.data_survived) losses.push_back(r);
  }
  std::sort(losses.begin(), losses.end(),
            [](const restart& a, const restart& b) { return a.at < b.at; });
  std::vector<std::vector<std::string>> explained(losses.size());

  // Exclusion: per lock, sort by acquisition and compare each with every earlier interval that
  // is still believed (not only the latest: one long belief may overlap several later ones).
  std::map<std::string, std::vector<acquisition>> by_lock;
  for (const auto& a : h.acquisitions) by_lock[a.lock].push_back(closed(a, h.end));
  for (auto& [lock, list] : by_lock) {
    std::sort(list.begin(), list.end(), [](const acquisition& a, const acquisition& b) {
      return a.acquired != b.acquired ? a.acquired < b.acquired : a.owner < b.owner;
    });
    std::vector<const acquisition*> believed;  // intervals that may still overlap later ones
    for (const auto& next : list) {
      std::erase_if(believed, [&](const acquisition* p) { return p->ended <= next.acquired; });
      for (const auto* prev : believed) {
        // Readers share a read-write lock: only an overlap with a writer breaks it. Semaphore
        // holds are judged by their permits below.
        if (prev->shared && next.shared) continue;
        if (prev->permits > 0 || next.permits > 0) continue;
        const std::string what =
            lock + ": " + describe(*prev, origin) + " overlaps " + describe(next, origin);
        // A loss between the two grants explains it: the server forgot the first. The first
        // may have been granted by the old server if it was requested before the kill (its
        // answer can be read after it); the second only if it was seen after the kill.
        // A failover's window: the old master may have granted the first until `at`, the new
        // one the second from `from` on.
        const auto loss = std::find_if(losses.begin(), losses.end(), [&](const restart& r) {
          return prev->requested < r.at && (r.from >= 0 ? r.from : r.at) <= next.acquired;
        });
        if (loss != losses.end()) {
          explained[static_cast<std::size_t>(loss - losses.begin())].push_back(what);
        } else {
          v.violations.push_back(what);
          add_context(h, lock, prev->requested - 1'000'000'000, next.ended, what, v.context);
        }
      }
      believed.push_back(&next);
    }
    // Fencing: a grant made after another was seen carries a larger token (the server granted
    // `next` after `next.requested`, so after `prev` was granted if that was seen before).
    for (const auto& next : list) {
      if (next.token == 0) continue;
      for (const auto& prev : list) {
        if (&prev == &next || prev.token == 0 || prev.acquired >= next.requested ||
            prev.token < next.token) {
          continue;
        }
        const std::string what = lock + ": token " + std::to_string(next.token) + " of " +
                                 describe(next, origin) + " is not above token " +
                                 std::to_string(prev.token) + " of " + describe(prev, origin) +
                                 ", granted before it was asked for";
        const auto loss = std::find_if(losses.begin(), losses.end(), [&](const restart& r) {
          return prev.requested < r.at && (r.from >= 0 ? r.from : r.at) <= next.acquired;
        });
        if (loss != losses.end()) {
          explained[static_cast<std::size_t>(loss - losses.begin())].push_back(what);
        } else {
          v.violations.push_back(what);
        }
      }
    }
  }
  for (std::size_t i = 0; i < losses.size(); ++i) {
    std::string line = losses[i].from >= 0
                           ? "failover from " + ms(losses[i].from, origin) + " to " +
                                 ms(losses[i].at, origin) +
                                 " lost writes the old master had acknowledged"
                           : "restart at " + ms(losses[i].at, origin) + " lost the server's data";
    if (explained[i].empty()) {
      line += "; no overlap followed";
    } else {
      line += "; it explains " + std::to_string(explained[i].size()) + " overlap(s):";
      for (const auto& e : explained[i]) line += "\n    " + e;
    }
    v.data_loss.push_back(std::move(line));
  }

  // Permits (semaphores): at no instant may believed holds add up to more than the capacity.
  for (const auto& cap : h.capacities) {
    std::vector<std::pair<nanos, std::int64_t>> steps;  // (time, +permits | -permits)
    for (const auto& a0 : h.acquisitions) {
      if (a0.lock != cap.lock || a0.permits == 0) continue;
      const auto a = closed(a0, h.end);
      steps.emplace_back(a.acquired, a.permits);
      steps.emplace_back(a.ended, -static_cast<std::int64_t>(a.permits));
    }
    // At one instant, an end comes before a start: a handoff at the same nanosecond is fine.
    std::sort(steps.begin(), steps.end());
    std::int64_t held = 0;
    for (const auto& [at, delta] : steps) {
      held += delta;
      if (held > cap.permits) {
        // Name the holds believed at that instant, as the exclusion rule names both sides.
        std::string what = cap.lock + ": " + std::to_string(held) + " permits believed held at " +
                           ms(at, origin) + ", capacity " + std::to_string(cap.permits) + ":";
        nanos first = at;
        for (const auto& a0 : h.acquisitions) {
          if (a0.lock != cap.lock || a0.permits == 0) continue;
          const auto a = closed(a0, h.end);
          if (a.acquired > at || a.ended <= at) continue;
          what += "\n    " + describe(a, origin);
          first = std::min(first, a.requested);
        }
        v.violations.push_back(what);
        add_context(h, cap.lock, first - 1'000'000'000, at, what, v.context);
        break;
      }
    }
  }

  // FIFO (fair locks): for every queue snapshot, an owner A ahead of B whose lock() was waiting
  // then and was granted must not be granted after B's acquisition that was waiting then too.
  // Only lock() for A: its allowance is the fair lock's wait_timeout, so a live waiter is never
  // dropped as stale within a run; a try_lock(wait) waiter may be, after a pause past its wait.
  if (!h.queues.empty()) {
    std::map<std::string, std::string> owner_of;
    for (const auto& f : h.owner_fields) owner_of[f.field] = f.owner;
    // The acquisition an operation in flight at `t` led to, if it led to one.
    auto granted = [&](const std::string& lock, const std::string& owner, nanos t,
                       bool lock_only) -> const acquisition* {
      for (const auto& o : h.operations) {
        if (o.lock != lock || o.owner != owner || o.kind == op_kind::unlock) continue;
        if (lock_only && o.kind != op_kind::lock) continue;
        if (o.started > t || (o.finished >= 0 && o.finished < t)) continue;
        for (const auto& a : h.acquisitions) {
          if (a.lock == lock && a.owner == owner && a.requested == o.started) return &a;
        }
        return nullptr;
      }
      return nullptr;
    };
    std::set<std::string> reported;
    for (const auto& q : h.queues) {
      for (std::size_t i = 0; i < q.fields.size(); ++i) {
        const auto ahead = owner_of.find(q.fields[i]);
        if (ahead == owner_of.end()) continue;
        const acquisition* first = granted(q.lock, ahead->second, q.at, true);
        if (first == nullptr) continue;
        for (std::size_t j = i + 1; j < q.fields.size(); ++j) {
          const auto behind = owner_of.find(q.fields[j]);
          if (behind == owner_of.end()) continue;
          const acquisition* second = granted(q.lock, behind->second, q.at, false);
          if (second == nullptr || second->acquired >= first->acquired) continue;
          std::string what = q.lock + ": FIFO: " + describe(*second, origin) +
                             " was granted before " + describe(*first, origin) +
                             ", which was ahead of it in the queue at " + ms(q.at, origin);
          if (reported.insert(what).second) v.violations.push_back(std::move(what));
        }
      }
    }
  }

  // Writers first (read-write locks): a writer's wait is bounded while readers keep arriving.
  // Readers that asked after the writer began to wait (later than its mark can take to land)
  // and entered before it are the sign of starvation. (The workloads never re-enter a read
  // hold, which the rule would count too.)
  if (opts.writer_wait_bound >= 0) {
    for (const auto& [lock, list] : by_lock) {
      for (const auto& w : list) {
        if (w.shared || w.permits > 0 || w.acquired - w.requested <= opts.writer_wait_bound) {
          continue;
        }
        std::size_t passed = 0;
        for (const auto& r : list) {
          if (r.shared && r.requested > w.requested + opts.writer_mark_delay &&
              r.acquired < w.acquired) {
            ++passed;
          }
        }
        if (passed == 0) continue;
        v.starved.push_back(lock + ": " + describe(w, origin) + " waited " +
                            ms(w.acquired, w.requested) + " (bound " +
                            ms(opts.writer_wait_bound, 0) + ") while " + std::to_string(passed) +
                            " reader(s) that asked after it entered first");
      }
    }
  }

  for (const auto& a : h.acquisitions) ++v.ends[std::string(to_string(a.end))];
  for (const auto& o : h.operations) {
    ++v.outcomes[std::string(to_string(o.kind)) + ": " +
                 (o.finished < 0 ? std::string("never completed") : o.outcome)];
  }
  for (const auto& a : h.acquisitions) {
    if (a.end == end_kind::open) {
      v.stuck.push_back("acquisition never ended: " + a.lock + " by " + a.owner + " at " +
                        ms(a.acquired, origin));
    }
  }
  for (const auto& o : h.operations) {
    const std::string who = std::string(to_string(o.kind)) + " " + o.lock + " by " + o.owner +
                            " at " + ms(o.started, origin);
    if (o.finished < 0) {
      v.stuck.push_back(who + " never completed");
    } else if (o.bound >= 0 && o.finished - o.started > o.bound + opts.slack) {
      v.overruns.push_back(who + " took " + ms(o.finished, o.started) + ", bound " +
                           ms(o.bound, 0) + " (+ slack " + ms(opts.slack, 0) + ") -> " + o.outcome);
    }
  }

  check_observations(h, !losses.empty(), v);

  for (const auto& c : h.left.channels) v.leftovers.push_back("channel " + c);
  for (const auto& k : h.left.keys) v.leftovers.push_back("key " + k);
  for (const auto& s : h.left.client_activity) v.leftovers.push_back("client " + s);
  return v;
}

std::string verdict::report() const {
  std::ostringstream out;
  out << acquisitions << " acquisitions, " << operations
      << " operations: " << (clean() ? "clean" : "NOT clean") << '\n';
  out << "  beliefs ended:";
  for (const auto& [k, n] : ends) out << ' ' << k << '=' << n;
  out << "\n  outcomes:";
  for (const auto& [k, n] : outcomes) out << " [" << k << "]=" << n;
  out << '\n';
  auto section = [&](const char* title, const std::vector<std::string>& items) {
    if (items.empty()) return;
    out << title << " (" << items.size() << "):\n";
    for (std::size_t i = 0; i < items.size() && i < 20; ++i) out << "  " << items[i] << '\n';
    if (items.size() > 20) out << "  ... " << items.size() - 20 << " more\n";
  };
  section("VIOLATIONS of exclusion or fencing", violations);
  section("DATA LOSS", data_loss);
  section("operations past their bound", overruns);
  section("writers starved by readers", starved);
  section("never completed", stuck);
  section("left behind", leftovers);
  if (!context.empty()) {
    out << "what the clients logged near the violations:\n";
    for (const auto& line : context) out << "  " << line << '\n';
  }
  return out.str();
}

}  // namespace rlock::chaos
