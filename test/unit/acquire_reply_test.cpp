// The decoding of the acquire scripts' replies, per lock kind, without a server.
#include "lock/acquire_reply.hpp"

#include "support/resp3_values.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>

namespace {

using rlock::detail::acquire_reply;
using rlock::detail::decode_acquire_reply;
using rlock::detail::lock_kind;
namespace resp3 = rlock::detail::resp3;
using outcome = acquire_reply::outcome;
using rlock::test::array;
using rlock::test::number;
using namespace std::chrono_literals;

resp3::value null() { return {}; }

TEST(acquire_reply, reentrant_nil_is_acquired_a_number_is_busy) {
  EXPECT_EQ(decode_acquire_reply(lock_kind::reentrant, null()).what, outcome::acquired);
  EXPECT_EQ(decode_acquire_reply(lock_kind::reentrant, null()).token, 0);
  const auto busy = decode_acquire_reply(lock_kind::reentrant, number(2500));
  EXPECT_EQ(busy.what, outcome::busy);
  EXPECT_EQ(busy.ttl, 2500ms);
  EXPECT_EQ(decode_acquire_reply(lock_kind::reentrant, number(-1)).ttl, -1ms);
  // The fenced shape is not a reentrant reply.
  EXPECT_EQ(decode_acquire_reply(lock_kind::reentrant, array({number(-1), number(3)})).what,
            outcome::malformed);
}

TEST(acquire_reply, fenced_pairs) {
  const auto got = decode_acquire_reply(lock_kind::fenced, array({number(-1), number(42)}));
  EXPECT_EQ(got.what, outcome::acquired);
  EXPECT_EQ(got.token, 42);
  const auto busy = decode_acquire_reply(lock_kind::fenced, array({number(900), number(-1)}));
  EXPECT_EQ(busy.what, outcome::busy);
  EXPECT_EQ(busy.ttl, 900ms);
  EXPECT_EQ(busy.token, 0);
  // A holder's key without a TTL: {-1, -1} is busy (PTTL -1), not a token.
  const auto no_ttl = decode_acquire_reply(lock_kind::fenced, array({number(-1), number(-1)}));
  EXPECT_EQ(no_ttl.what, outcome::busy);
  EXPECT_EQ(no_ttl.ttl, -1ms);
  const auto zero_ttl = decode_acquire_reply(lock_kind::fenced, array({number(0), number(-1)}));
  EXPECT_EQ(zero_ttl.what, outcome::busy);
  EXPECT_EQ(zero_ttl.ttl, 0ms);
}

TEST(acquire_reply, fenced_rejects_every_other_shape) {
  resp3::value text;
  text.type = resp3::type::blob_string;
  text.str = "-1";
  for (const auto& bad :
       {null(), number(-1), array({}), array({number(-1)}),
        array({number(-1), number(1), number(2)}), array({number(-1), number(0)}),
        array({number(-1), number(-7)}), array({number(5), number(6)}),
        array({number(-2), number(-1)}), array({text, number(3)}), array({number(-1), text})}) {
    EXPECT_EQ(decode_acquire_reply(lock_kind::fenced, bad).what, outcome::malformed);
  }
}

}  // namespace
