#include "lock/acquire_reply.hpp"

namespace rlock::detail {

acquire_reply decode_acquire_reply(lock_kind kind, const resp3::value& reply) noexcept {
  using outcome = acquire_reply::outcome;
  acquire_reply out;
  if (kind == lock_kind::reentrant) {
    if (reply.is_null()) {
      out.what = outcome::acquired;
    } else if (reply.type == resp3::type::number) {
      out.what = outcome::busy;
      out.ttl = std::chrono::milliseconds(reply.integer);
    }
    return out;
  }
  // {-1, token} or {pttl, -1}. A token is positive (an INCR result); a busy lock's PTTL is >= 0,
  // or -1 for a key without a TTL, which reads {-1, -1}: busy, not a token.
  if (reply.type != resp3::type::array || reply.elements.size() != 2) return out;
  const auto& first = reply.elements[0];
  const auto& second = reply.elements[1];
  if (first.type != resp3::type::number || second.type != resp3::type::number) return out;
  if (first.integer == -1 && second.integer > 0) {
    out.what = outcome::acquired;
    out.token = second.integer;
  } else if (second.integer == -1 && first.integer >= -1) {
    out.what = outcome::busy;
    out.ttl = std::chrono::milliseconds(first.integer);
  }
  return out;
}

}  // namespace rlock::detail
