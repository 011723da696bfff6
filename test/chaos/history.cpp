#include "chaos/history.hpp"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <stdexcept>

namespace rlock::chaos {

nanos now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string_view to_string(end_kind k) noexcept {
  switch (k) {
    case end_kind::open:
      return "open";
    case end_kind::released:
      return "released";
    case end_kind::lost:
      return "lost";
    case end_kind::not_owner:
      return "not_owner";
  }
  return "?";
}

std::string_view to_string(op_kind k) noexcept {
  switch (k) {
    case op_kind::lock:
      return "lock";
    case op_kind::try_lock:
      return "try_lock";
    case op_kind::unlock:
      return "unlock";
  }
  return "?";
}

namespace {

template <typename E>
E parse_enum(const std::string& s, std::initializer_list<E> all) {
  for (E e : all) {
    if (to_string(e) == s) return e;
  }
  throw std::runtime_error("history: unknown kind '" + s + "'");
}

/// Fields are separated by tabs; names and outcomes never contain tabs or newlines.
std::string clean(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == '\t' || c == '\n') c = ' ';
  }
  return out.empty() ? "-" : out;
}

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::string f;
  std::istringstream in(line);
  while (std::getline(in, f, '\t')) out.push_back(f == "-" ? std::string() : f);
  return out;
}

}  // namespace

void history::merge(const history& other) {
  acquisitions.insert(acquisitions.end(), other.acquisitions.begin(), other.acquisitions.end());
  operations.insert(operations.end(), other.operations.begin(), other.operations.end());
  restarts.insert(restarts.end(), other.restarts.begin(), other.restarts.end());
  queues.insert(queues.end(), other.queues.begin(), other.queues.end());
  owner_fields.insert(owner_fields.end(), other.owner_fields.begin(), other.owner_fields.end());
  notes.insert(notes.end(), other.notes.begin(), other.notes.end());
  observations.insert(observations.end(), other.observations.begin(), other.observations.end());
  for (const auto& e : other.elections) {
    if (std::find(elections.begin(), elections.end(), e) == elections.end()) elections.push_back(e);
  }
  for (const auto& c : other.capacities) {
    if (std::none_of(capacities.begin(), capacities.end(),
                     [&](const capacity& mine) { return mine.lock == c.lock; })) {
      capacities.push_back(c);
    }
  }
  auto append = [](std::vector<std::string>& to, const std::vector<std::string>& from) {
    to.insert(to.end(), from.begin(), from.end());
  };
  append(left.channels, other.left.channels);
  append(left.keys, other.left.keys);
  append(left.client_activity, other.left.client_activity);
  if (begin == 0 || (other.begin != 0 && other.begin < begin)) begin = other.begin;
  end = std::max(end, other.end);
}

std::string history::serialize() const {
  std::ostringstream out;
  out << "H\t" << begin << '\t' << end << '\n';
  for (const auto& a : acquisitions) {
    out << "A\t" << clean(a.lock) << '\t' << clean(a.owner) << '\t' << a.acquired << '\t'
        << a.requested << '\t' << a.ended << '\t' << to_string(a.end) << '\t'
        << (a.permits > 0 ? std::to_string(a.permits)
            : a.shared    ? "shared"
                          : "exclusive")
        << '\t' << a.token << '\n';
  }
  for (const auto& o : operations) {
    out << "O\t" << to_string(o.kind) << '\t' << clean(o.lock) << '\t' << clean(o.owner) << '\t'
        << o.started << '\t' << o.finished << '\t' << o.bound << '\t' << clean(o.outcome) << '\n';
  }
  for (const auto& r : restarts) {
    out << "R\t" << r.at << '\t' << (r.data_survived ? 1 : 0) << '\t' << r.from << '\n';
  }
  for (const auto& q : queues) {
    out << "Q\t" << q.at << '\t' << clean(q.lock);
    for (const auto& f : q.fields) out << '\t' << clean(f);
    out << '\n';
  }
  for (const auto& c : capacities) out << "P\t" << clean(c.lock) << '\t' << c.permits << '\n';
  for (const auto& f : owner_fields)
    out << "F\t" << clean(f.field) << '\t' << clean(f.owner) << '\n';
  for (const auto& l : notes) out << "N\t" << l.at << '\t' << clean(l.text) << '\n';
  for (const auto& o : observations) {
    out << "V\t" << clean(o.observer) << '\t' << clean(o.lock) << '\t' << o.at << '\t' << o.seq
        << '\t' << o.term << '\t' << clean(o.event) << '\t' << (o.leading ? 1 : 0) << '\t'
        << clean(o.value) << '\t' << o.skipped << '\n';
  }
  for (const auto& e : elections) out << "E\t" << clean(e) << '\n';
  for (const auto& c : left.channels) out << "C\t" << clean(c) << '\n';
  for (const auto& k : left.keys) out << "K\t" << clean(k) << '\n';
  for (const auto& s : left.client_activity) out << "S\t" << clean(s) << '\n';
  return out.str();
}

history history::parse(std::string_view text) {
  history h;
  std::istringstream in{std::string(text)};
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    const auto f = fields(line);
    auto need = [&](std::size_t k) {
      if (f.size() != k) {
        throw std::runtime_error("history: line " + std::to_string(n) + " has " +
                                 std::to_string(f.size()) + " fields, expected " +
                                 std::to_string(k) + ": " + line);
      }
    };
    const std::string& tag = f.at(0);
    if (tag == "H") {
      need(3);
      h.begin = std::stoll(f[1]);
      h.end = std::stoll(f[2]);
    } else if (tag == "A") {
      need(9);
      h.acquisitions.push_back(
          {f[1], f[2], std::stoll(f[3]), std::stoll(f[4]), std::stoll(f[5]),
           parse_enum(f[6],
                      {end_kind::open, end_kind::released, end_kind::lost, end_kind::not_owner}),
           f[7] == "shared",
           f[7] != "shared" && f[7] != "exclusive" ? static_cast<std::uint32_t>(std::stoul(f[7]))
                                                   : 0u,
           std::stoll(f[8])});
    } else if (tag == "O") {
      need(8);
      h.operations.push_back({parse_enum(f[1], {op_kind::lock, op_kind::try_lock, op_kind::unlock}),
                              f[2], f[3], std::stoll(f[4]), std::stoll(f[5]), std::stoll(f[6]),
                              f[7]});
    } else if (tag == "R") {
      need(4);
      h.restarts.push_back({std::stoll(f[1]), f[2] == "1", std::stoll(f[3])});
    } else if (tag == "Q") {
      if (f.size() < 3) need(3);
      h.queues.push_back({std::stoll(f[1]), f[2], {f.begin() + 3, f.end()}});
    } else if (tag == "P") {
      need(3);
      h.capacities.push_back({f[1], std::stoll(f[2])});
    } else if (tag == "F") {
      need(3);
      h.owner_fields.push_back({f[1], f[2]});
    } else if (tag == "N") {
      need(3);
      h.notes.push_back({std::stoll(f[1]), f[2]});
    } else if (tag == "V") {
      need(10);
      h.observations.push_back({f[1], f[2], std::stoll(f[3]), std::stoull(f[4]), std::stoll(f[5]),
                                f[6], f[7] == "1", f[8], std::stoull(f[9])});
    } else if (tag == "E") {
      need(2);
      h.elections.push_back(f[1]);
    } else if (tag == "C") {
      need(2);
      h.left.channels.push_back(f[1]);
    } else if (tag == "K") {
      need(2);
      h.left.keys.push_back(f[1]);
    } else if (tag == "S") {
      need(2);
      h.left.client_activity.push_back(f[1]);
    } else {
      throw std::runtime_error("history: line " + std::to_string(n) + ": unknown tag " + tag);
    }
  }
  return h;
}

void recorder::observed(observation o) {
  o.at = now_ns();
  std::lock_guard g(mutex_);
  h_.observations.push_back(std::move(o));
}

void recorder::election(std::string_view lock) {
  std::lock_guard g(mutex_);
  if (std::find(h_.elections.begin(), h_.elections.end(), lock) == h_.elections.end()) {
    h_.elections.emplace_back(lock);
  }
}

recorder::id recorder::acquired(std::string_view lock, std::string_view owner, nanos requested,
                                bool shared, std::uint32_t permits, std::int64_t token) {
  const auto t = now_ns();
  std::lock_guard g(mutex_);
  h_.acquisitions.push_back({std::string(lock), std::string(owner), t, requested, 0, end_kind::open,
                             shared, permits, token});
  return h_.acquisitions.size() - 1;
}

void recorder::end(id a, end_kind why) { end_at(a, why, now_ns()); }

void recorder::end_at(id a, end_kind why, nanos at) {
  std::lock_guard g(mutex_);
  auto& acq = h_.acquisitions.at(a);
  if (acq.end != end_kind::open) return;
  acq.end = why;
  acq.ended = at;
}

recorder::id recorder::started(op_kind kind, std::string_view lock, std::string_view owner,
                               nanos bound) {
  const auto t = now_ns();
  std::lock_guard g(mutex_);
  h_.operations.push_back({kind, std::string(lock), std::string(owner), t, -1, bound, {}});
  return h_.operations.size() - 1;
}

void recorder::finished(id op, std::string_view outcome) {
  const auto t = now_ns();
  std::lock_guard g(mutex_);
  auto& o = h_.operations.at(op);
  o.finished = t;
  o.outcome = std::string(outcome);
}

void recorder::capacity_of(std::string_view lock, std::int64_t permits) {
  std::lock_guard g(mutex_);
  for (const auto& c : h_.capacities) {
    if (c.lock == lock) return;
  }
  h_.capacities.push_back({std::string(lock), permits});
}

void recorder::noted(std::string_view text) {
  const auto t = now_ns();
  std::lock_guard g(mutex_);
  h_.notes.push_back({t, std::string(text)});
}

void recorder::named(std::string_view field, std::string_view owner) {
  std::lock_guard g(mutex_);
  for (const auto& f : h_.owner_fields) {
    if (f.field == field) return;
  }
  h_.owner_fields.push_back({std::string(field), std::string(owner)});
}

void recorder::queued(std::string_view lock, std::vector<std::string> fields) {
  const auto t = now_ns();
  std::lock_guard g(mutex_);
  h_.queues.push_back({t, std::string(lock), std::move(fields)});
}

void recorder::restarted(bool data_survived, nanos killed_at) {
  std::lock_guard g(mutex_);
  h_.restarts.push_back({killed_at, data_survived, -1});
}

void recorder::failed_over(bool data_survived, nanos from, nanos to) {
  std::lock_guard g(mutex_);
  h_.restarts.push_back({to, data_survived, from});
}

bool recorder::in_progress(op_kind kind, nanos min_age) const {
  const auto t = now_ns();
  std::lock_guard g(mutex_);
  for (auto it = h_.operations.rbegin(); it != h_.operations.rend(); ++it) {
    if (it->kind == kind && it->finished < 0 && t - it->started >= min_age) return true;
  }
  return false;
}

bool recorder::holding() const {
  std::lock_guard g(mutex_);
  for (auto it = h_.acquisitions.rbegin(); it != h_.acquisitions.rend(); ++it) {
    if (it->end == end_kind::open) return true;
  }
  return false;
}

history recorder::snapshot() const {
  std::lock_guard g(mutex_);
  return h_;
}

history recorder::finish() {
  std::lock_guard g(mutex_);
  h_.end = now_ns();
  return h_;
}

}  // namespace rlock::chaos
