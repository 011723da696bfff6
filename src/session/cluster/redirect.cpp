#include "session/cluster/redirect.hpp"

#include "session/cluster/key_slot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace rlock::detail {

namespace {

bool read_number(std::string_view s, unsigned& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && end == s.data() + s.size();
}

}  // namespace

redirect parse_redirect(std::string_view text) {
  redirect r;
  if (text.starts_with("TRYAGAIN")) {
    r.what = redirect::kind::try_again;
    return r;
  }
  if (text.starts_with("CLUSTERDOWN")) {
    r.what = redirect::kind::cluster_down;
    return r;
  }
  const bool moved = text.starts_with("MOVED ");
  const bool ask = text.starts_with("ASK ");
  if (!moved && !ask) return r;
  // "MOVED 3999 127.0.0.1:6381"; the host may be an IPv6 address (the last ':' splits) or
  // empty ("MOVED 3999 :6381": the node that answered, per cluster-preferred-endpoint-type).
  text.remove_prefix(moved ? 6 : 4);
  const auto space = text.find(' ');
  if (space == std::string_view::npos) return r;
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon < space) return r;
  unsigned slot = 0;
  unsigned port = 0;
  if (!read_number(text.substr(0, space), slot) || slot >= slot_count ||
      !read_number(text.substr(colon + 1), port) || port == 0 || port > 65535) {
    return r;
  }
  r.what = moved ? redirect::kind::moved : redirect::kind::ask;
  r.slot = static_cast<std::uint16_t>(slot);
  r.host = std::string(text.substr(space + 1, colon - space - 1));
  r.port = static_cast<std::uint16_t>(port);
  return r;
}

std::chrono::milliseconds retry_delay(int retries, const redirect_limits& limits) {
  auto delay = limits.retry_initial;
  for (int i = 0; i < retries && delay < limits.retry_cap; ++i) delay *= 2;
  return std::min(delay, limits.retry_cap);
}

redirect_decision decide_redirect(const redirect& r, std::string_view text, int redirects,
                                  int retries, std::chrono::steady_clock::time_point now,
                                  std::chrono::steady_clock::time_point deadline,
                                  const redirect_limits& limits) {
  redirect_decision d;
  switch (r.what) {
    case redirect::kind::none:
      return d;
    case redirect::kind::moved:
    case redirect::kind::ask:
      if (redirects >= limits.max_redirects) {
        d.what = redirect_decision::action::fail;
        d.error = errc::too_many_redirects;
        d.diagnostic = fmt::format(
            "the cluster redirected the request {} times (last: {}); its nodes disagree about "
            "who serves slot {}",
            redirects, text, r.slot);
        return d;
      }
      d.what = r.what == redirect::kind::moved ? redirect_decision::action::resend
                                               : redirect_decision::action::ask;
      return d;
    case redirect::kind::try_again:
    case redirect::kind::cluster_down: {
      const auto delay = retry_delay(retries, limits);
      if (now + delay >= deadline) {
        d.what = redirect_decision::action::fail;
        d.error = r.what == redirect::kind::cluster_down ? errc::cluster_down : errc::timeout;
        d.diagnostic =
            fmt::format("{} (retried {} times within the operation's bound)", text, retries);
        return d;
      }
      d.what = redirect_decision::action::retry;
      d.delay = delay;
      return d;
    }
  }
  return d;
}

}  // namespace rlock::detail
