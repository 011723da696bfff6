// libFuzzer target: the multiplexer and the subscription set, driven the way a connection drives
// them, with arbitrary bytes from the "server" parsed by the real RESP3 parser and fed in.
//
// The input is a program: each byte picks an operation (add a request, want or unwant a channel,
// write, read some server bytes, lose or regain the connection, let time pass, withdraw,
// fail-fast). Checks: no crash or sanitizer report; every handler runs at most once, and exactly
// once by the end; an answer completes only the oldest live written request, and only with an
// answer of its kind (all of its replies for a request of several commands) (a reply for a command,
// a confirmation of its own channel or an error for a (un)subscribe); the bookkeeping stays bounded
// by what was added; a channel is active only while connected.
#include "resp3/parser.hpp"
#include "rlock/error.hpp"
#include "session/node/multiplexer.hpp"
#include "session/node/subscription_set.hpp"

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

using namespace rlock::detail;
using namespace std::chrono_literals;

void check(bool ok) {
  if (!ok) std::abort();
}

constexpr std::array<std::string_view, 3> channels{"a", "b", "c"};

struct request_state {
  answer_kind kind = answer_kind::reply;
  std::uint8_t answers = 1;  // replies that make its answer (a script and its WAIT: 2)
  std::string channel;
  int completions = 0;
  int hooks = 0;
};

class harness {
 public:
  harness() {
    mux_.set_push_handler([this](resp3::value& v) {
      check(v.is_push());
      ++pushes_;
    });
  }

  void add_request(std::uint8_t arg) {
    request_options opts;
    opts.unknown = (arg & 1) != 0 ? if_unknown::retry : if_unknown::fail;
    opts.handshake = (arg & 2) != 0;
    if ((arg & 4) != 0) opts.deadline = now_ + std::chrono::milliseconds(arg >> 3);
    if ((arg & 8) != 0) {
      opts.on_deadline = [](void* ctx) { ++static_cast<request_state*>(ctx)->hooks; };
    }
    if ((arg & 16) != 0 && !opts.handshake) opts.answers = 2;
    add(answer_kind::reply, {}, opts);
  }

  void want(std::uint8_t arg) {
    const auto ch = channels[arg % channels.size()];
    if ((arg & 4) == 0) {
      if (subs_.want(ch, connected_) == subscription_set::action::subscribe) send(ch, true);
    } else {
      if (subs_.unwant(ch, connected_) == subscription_set::action::unsubscribe) send(ch, false);
    }
  }

  void write(std::uint8_t arg) {
    std::string out;
    mux_.prepare_write(out, connected_ && (arg & 1) == 0, now_);
    // Each payload is "<id>\n": the written order, as the server would read it.
    std::size_t pos = 0;
    while (pos < out.size()) {
      const auto nl = out.find('\n', pos);
      check(nl != std::string::npos);
      std::uint64_t id = 0;
      std::from_chars(out.data() + pos, out.data() + nl, id);
      check(requests_.count(id) == 1);
      written_.push_back(id);
      pos = nl + 1;
    }
  }

  void read(std::string_view bytes) {
    parser_.feed(bytes);
    for (int i = 0; i < 64; ++i) {
      std::error_code ec;
      auto v = parser_.next(ec);
      if (ec) return lose();
      if (!v) return;
      const bool answer = !v->is_push() || is_confirmation(*v);
      if (answer) answering_ = true;
      const auto verdict = mux_.on_value(*v);
      answering_ = false;
      if (verdict == multiplexer::verdict::out_of_step) return lose();
    }
  }

  void lose() {
    connected_ = false;
    written_.clear();
    parser_ = resp3::parser(limits());
    mux_.on_connection_lost(make_error_code(rlock::errc::connection_lost));
    subs_.on_disconnect();
  }

  void connect() {
    if (connected_) return;
    connected_ = true;
    for (const auto& ch : subs_.replay()) send(ch, true);
  }

  void tick(std::uint8_t arg) {
    now_ += std::chrono::milliseconds(arg);
    mux_.expire(now_);
  }

  void withdraw(std::uint8_t arg) {
    if (next_id_ > 1)
      mux_.withdraw(1 + arg % (next_id_ - 1), std::make_error_code(std::errc::operation_canceled));
  }

  void fail_queued() { mux_.fail_queued(make_error_code(rlock::errc::connection_lost)); }

  void finish() {
    mux_.fail_all(make_error_code(rlock::errc::connection_lost));
    check(mux_.queued() == 0 && mux_.written() == 0);
    for (const auto& [id, r] : requests_) check(r.completions == 1 && r.hooks <= 1);
    for (const auto ch : channels) check(!subs_.active(ch) || connected_);
    check(subs_.size() <= channels.size());
  }

  void invariants() const {
    check(mux_.queued() + mux_.written() <= requests_.size());
    check(subs_.size() <= channels.size());
    if (!connected_) {
      for (const auto ch : channels) check(!subs_.active(ch));
    }
  }

 private:
  static resp3::parser_limits limits() {
    resp3::parser_limits l;
    l.max_blob = 1u << 16;
    l.max_elements = 1u << 10;
    return l;
  }

  static bool is_confirmation(const resp3::value& v) {
    if (v.elements.empty()) return false;
    const auto& k = v.elements.front().str;
    return k == "subscribe" || k == "ssubscribe" || k == "unsubscribe" || k == "sunsubscribe";
  }

  void send(std::string_view ch, bool on) {
    const auto kind = on ? answer_kind::subscribe : answer_kind::unsubscribe;
    add(kind, std::string(ch), {});
  }

  void add(answer_kind kind, std::string channel, request_options opts) {
    const auto id = next_id_++;
    auto& r = requests_[id];
    r.kind = kind;
    r.channel = channel;
    r.answers = opts.answers;
    if (opts.on_deadline != nullptr) opts.context = &r;
    const bool on = kind == answer_kind::subscribe;
    const auto got = mux_.add(std::to_string(id) + "\n", kind, std::move(channel), opts,
                              [this, id, on](std::error_code ec, resp3::value v) {
                                completed(id, ec, std::move(v), on);
                              });
    check(got == id);
  }

  void completed(std::uint64_t id, std::error_code ec, resp3::value v, bool on) {
    auto& r = requests_.at(id);
    check(++r.completions == 1);
    if (r.kind != answer_kind::reply && !ec) {
      // As the connection does: the subscription set learns the server's answer.
      if (!on) {
        subs_.on_unsubscribed(r.channel);
      } else if (v.is_error()) {
        subs_.on_refused(r.channel);
      } else {
        subs_.on_subscribed(r.channel);
      }
    }
    if (ec) return;
    // An answer: it must be the oldest live written request's, read just now, of its kind.
    check(answering_);
    answering_ = false;
    while (!written_.empty() && written_.front() != id) {
      check(requests_.at(written_.front()).completions > 0);  // a live request was skipped
      written_.pop_front();
    }
    check(!written_.empty());
    written_.pop_front();
    if (r.kind == answer_kind::reply && r.answers > 1) {
      // All of its replies, in one array, none of them a push.
      check(v.type == resp3::type::array && v.elements.size() == r.answers);
      for (const auto& e : v.elements) check(!e.is_push());
    } else if (r.kind == answer_kind::reply) {
      check(!v.is_push());
    } else if (!v.is_error()) {
      check(v.is_push() && v.elements.size() >= 2 && v.elements[1].str == r.channel);
      const auto& k = v.elements[0].str;
      check(r.kind == answer_kind::subscribe ? (k == "subscribe" || k == "ssubscribe")
                                             : (k == "unsubscribe" || k == "sunsubscribe"));
    }
    // Handlers may add requests, as lock operations do.
    if (id % 5 == 0 && requests_.size() < 4096) add(answer_kind::reply, {}, {});
  }

  multiplexer mux_;
  subscription_set subs_;
  resp3::parser parser_{limits()};
  std::unordered_map<std::uint64_t, request_state> requests_;
  std::deque<std::uint64_t> written_;  // ids in the order the server read them
  std::uint64_t next_id_ = 1;
  clock_type::time_point now_{};
  bool connected_ = false;
  bool answering_ = false;
  std::size_t pushes_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  harness h;
  std::size_t i = 0;
  auto arg = [&]() -> std::uint8_t { return i < size ? data[i++] : 0; };
  while (i < size) {
    const std::uint8_t op = data[i++];
    switch (op % 10) {
      case 0:
        h.add_request(arg());
        break;
      case 1:
        h.want(arg());
        break;
      case 2:
        h.write(arg());
        break;
      case 3: {
        const std::size_t n = std::min<std::size_t>(arg(), size - i);
        h.read(std::string_view(reinterpret_cast<const char*>(data + i), n));
        i += n;
        break;
      }
      case 4:
        h.lose();
        break;
      case 5:
        h.connect();
        break;
      case 6:
        h.tick(arg());
        break;
      case 7:
        h.withdraw(arg());
        break;
      case 8:
        h.fail_queued();
        break;
      default:
        h.connect();
        h.write(0);
        break;
    }
    h.invariants();
  }
  h.finish();
  return 0;
}
