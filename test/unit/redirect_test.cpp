// The redirect decision without a server: what MOVED, ASK, TRYAGAIN and CLUSTERDOWN make the
// router do, and that no reply can keep a request past its bound.
#include "session/cluster/redirect.hpp"

#include <gtest/gtest.h>

namespace {

using namespace std::chrono_literals;
using rlock::detail::decide_redirect;
using rlock::detail::parse_redirect;
using rlock::detail::redirect;
using redirect_action = rlock::detail::redirect_decision::action;

TEST(redirect, parses_moved_and_ask) {
  auto r = parse_redirect("MOVED 3999 127.0.0.1:6381");
  EXPECT_EQ(r.what, redirect::kind::moved);
  EXPECT_EQ(r.slot, 3999);
  EXPECT_EQ(r.host, "127.0.0.1");
  EXPECT_EQ(r.port, 6381);
  r = parse_redirect("ASK 3999 ::1:6381");  // IPv6: the last ':' splits
  EXPECT_EQ(r.what, redirect::kind::ask);
  EXPECT_EQ(r.host, "::1");
  r = parse_redirect("MOVED 3999 :6381");  // an unknown endpoint: the answering node's host
  EXPECT_EQ(r.what, redirect::kind::moved);
  EXPECT_EQ(r.host, "");
}

TEST(redirect, other_errors_are_answers) {
  EXPECT_EQ(parse_redirect("ERR unknown command").what, redirect::kind::none);
  EXPECT_EQ(parse_redirect("CROSSSLOT Keys in request don't hash to the same slot").what,
            redirect::kind::none);
  EXPECT_EQ(parse_redirect("MOVED nonsense").what, redirect::kind::none);
  EXPECT_EQ(parse_redirect("MOVED 99999 127.0.0.1:1").what, redirect::kind::none);
  EXPECT_EQ(parse_redirect("MOVED 1 127.0.0.1:0").what, redirect::kind::none);
  EXPECT_EQ(parse_redirect("TRYAGAIN Multiple keys request during rehashing of slot").what,
            redirect::kind::try_again);
  EXPECT_EQ(parse_redirect("CLUSTERDOWN The cluster is down").what, redirect::kind::cluster_down);
}

TEST(redirect, moved_resends_and_ask_asks_until_the_redirect_limit) {
  const auto now = std::chrono::steady_clock::now();
  const auto moved = parse_redirect("MOVED 1 127.0.0.1:7002");
  EXPECT_EQ(decide_redirect(moved, "MOVED", 0, 0, now, now + 1s).what, redirect_action::resend);
  EXPECT_EQ(
      decide_redirect(parse_redirect("ASK 1 127.0.0.1:7002"), "ASK", 4, 0, now, now + 1s).what,
      redirect_action::ask);
  const auto loop = decide_redirect(moved, "MOVED 1 127.0.0.1:7002", 5, 0, now, now + 1s);
  EXPECT_EQ(loop.what, redirect_action::fail);
  EXPECT_EQ(loop.error, rlock::errc::too_many_redirects);
  EXPECT_NE(loop.diagnostic.find("MOVED 1 127.0.0.1:7002"), std::string::npos);
}

TEST(redirect, tryagain_and_clusterdown_back_off_within_the_bound) {
  const auto now = std::chrono::steady_clock::now();
  const auto down = parse_redirect("CLUSTERDOWN The cluster is down");
  auto d = decide_redirect(down, "CLUSTERDOWN", 0, 0, now, now + 1s);
  EXPECT_EQ(d.what, redirect_action::retry);
  EXPECT_EQ(d.delay, 10ms);
  d = decide_redirect(down, "CLUSTERDOWN", 0, 3, now, now + 1s);
  EXPECT_EQ(d.delay, 80ms);
  d = decide_redirect(down, "CLUSTERDOWN", 0, 30, now, now + 1s);
  EXPECT_EQ(d.delay, 200ms);  // capped
  // No room for another try before the bound: fail now, with Redis's words.
  d = decide_redirect(down, "CLUSTERDOWN The cluster is down", 0, 30, now, now + 150ms);
  EXPECT_EQ(d.what, redirect_action::fail);
  EXPECT_EQ(d.error, rlock::errc::cluster_down);
  EXPECT_NE(d.diagnostic.find("The cluster is down"), std::string::npos);
  const auto again = parse_redirect("TRYAGAIN");
  EXPECT_EQ(decide_redirect(again, "TRYAGAIN", 0, 0, now, now + 5ms).error, rlock::errc::timeout);
}

TEST(redirect, not_a_redirect_is_delivered) {
  const auto now = std::chrono::steady_clock::now();
  EXPECT_EQ(decide_redirect(redirect{}, "ERR x", 9, 9, now, now).what, redirect_action::deliver);
}

}  // namespace
