#include "support/fake_session.hpp"

#include "resp3/parser.hpp"
#include "rlock/error.hpp"

#include <algorithm>

namespace rlock::test {

std::vector<std::string> fake_session::request::words() const {
  detail::resp3::parser p;
  p.feed(payload);
  std::error_code ec;
  std::vector<std::string> out;
  auto v = p.next(ec);  // the first command of the payload (a script's WAIT may follow)
  if (!v) return out;
  for (const auto& e : v->elements) out.push_back(e.str);
  return out;
}

void fake_session::complete_handshake() {
  shas_.clear();
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    detail::resp3::value sha;
    sha.type = detail::resp3::type::blob_string;
    sha.str = fmt::format("{:040x}", i + 1);
    shas_.push_back(sha.str);
    std::string diagnostic;
    (void)steps_[i].check(sha, diagnostic);
  }
}

std::optional<std::size_t> fake_session::script_of(const request& r) const {
  const auto w = r.words();
  if (w.size() < 2 || w[0] != "EVALSHA") return std::nullopt;
  auto it = std::find(shas_.begin(), shas_.end(), w[1]);
  if (it == shas_.end()) return std::nullopt;
  return static_cast<std::size_t>(it - shas_.begin());
}

std::vector<std::size_t> fake_session::pending() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].handler) out.push_back(i);
  }
  return out;
}

void fake_session::answer(std::size_t i, detail::resp3::value v) {
  auto& r = requests.at(i);
  auto h = std::move(r.handler);  // leaves it empty: answered
  // Answered, so written: when exec wrote it, or (still queued until now) now.
  if (r.opts.written_at != nullptr && *r.opts.written_at == detail::clock_type::time_point{}) {
    *r.opts.written_at = detail::clock_type::now();
  }
  std::move(h)(std::error_code{}, std::move(v));
}

void fake_session::fail(std::size_t i, std::error_code ec) {
  auto& r = requests.at(i);
  auto h = std::move(r.handler);  // leaves it empty: answered
  std::move(h)(ec, detail::resp3::value{});
}

void fake_session::pass_deadline(std::size_t i) {
  auto& r = requests.at(i);
  if (r.opts.on_deadline != nullptr) return r.opts.on_deadline(r.opts.context);
  fail(i, make_error_code(errc::timeout));
}

void fake_session::close(std::error_code reason) {
  state_ = connection_state::closed;
  for (auto i : pending()) fail(i, reason);
}

detail::multiplexer::id_type fake_session::exec(detail::command c, detail::request_options opts,
                                                detail::reply_handler handler) {
  request r(std::move(handler));
  r.id = next_id_++;
  r.kind = c.kind();
  r.route = std::string(c.route());
  r.payload = c.take_payload();
  r.opts = opts;
  r.withdrawable = !written_at_once;
  if (written_at_once && opts.written_at != nullptr) *opts.written_at = detail::clock_type::now();
  requests.push_back(std::move(r));
  return requests.back().id;
}

bool fake_session::withdraw(std::string_view, detail::multiplexer::id_type id,
                            std::error_code reason) {
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].id == id && requests[i].handler && requests[i].withdrawable) {
      fail(i, reason);
      return true;
    }
  }
  return false;  // written: its answer settles it
}

}  // namespace rlock::test
