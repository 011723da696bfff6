#pragma once

#include "rlock/error.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace rlock::detail {

/// What a cluster node's error reply asks of the router (cluster spec, "Redirection and
/// resharding"). Parsed from the reply's text; anything else is an answer for the caller.
struct redirect {
  enum class kind : std::uint8_t {
    none,          // not a redirect: the caller's answer
    moved,         // -MOVED slot host:port: the slot lives there now
    ask,           // -ASK slot host:port: this one request, once, there, after ASKING
    try_again,     // -TRYAGAIN: a multi-key request during a slot migration
    cluster_down,  // -CLUSTERDOWN: the node does not serve (uncovered slots, no quorum)
  };
  kind what = kind::none;
  std::uint16_t slot = 0;
  std::string host;
  std::uint16_t port = 0;
};

/// Reads an error reply's text. A MOVED/ASK whose address cannot be read is kind::none: the
/// caller then gets Redis's text as it is.
redirect parse_redirect(std::string_view error_text);

/// Sans-I/O: what the router does with one reply of a request it routed. Decided from the
/// redirect, how many redirects and retries the request has had, and its deadline, so that no
/// node (a MOVED loop, a cluster that stays down) can keep a request past its bound.
struct redirect_decision {
  enum class action : std::uint8_t {
    deliver,  // the reply is the caller's
    resend,   // MOVED: update the map, send again to the owner
    ask,      // ASK: send `ASKING` + the request to the node named, once
    retry,    // TRYAGAIN / CLUSTERDOWN: send again after `delay`
    fail,     // give up: `error` with `diagnostic` (Redis's text included)
  };
  action what = action::deliver;
  std::chrono::milliseconds delay{0};
  errc error = errc::server_error;
  std::string diagnostic;
};

/// The bounds of a routed request's detours.
struct redirect_limits {
  /// MOVED/ASK hops per request (Lettuce's default, 5): a cluster whose nodes disagree about a
  /// slot for longer is reported, not chased.
  int max_redirects = 5;
  /// TRYAGAIN/CLUSTERDOWN: the first delay, doubled per retry up to `retry_cap`.
  std::chrono::milliseconds retry_initial{10};
  std::chrono::milliseconds retry_cap{200};
};

/// The delay before retry number `retries` (0-based) of a TRYAGAIN/CLUSTERDOWN, or of a request
/// whose node could not be reached: `retry_initial` doubled per retry, up to `retry_cap`.
std::chrono::milliseconds retry_delay(int retries, const redirect_limits& limits = {});

redirect_decision decide_redirect(const redirect& r, std::string_view error_text, int redirects,
                                  int retries, std::chrono::steady_clock::time_point now,
                                  std::chrono::steady_clock::time_point deadline,
                                  const redirect_limits& limits = {});

}  // namespace rlock::detail
