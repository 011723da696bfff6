#include "engine/lock_state.hpp"

#include "engine/engine_context.hpp"
#include "engine/round_trip.hpp"
#include "names/permit_id.hpp"
#include "rlock/error.hpp"
#include "session/redis_error.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <string_view>

namespace rlock::detail {

namespace asio = boost::asio;

failure failure_of(const engine_context& c, std::error_code ec, const resp3::value& reply,
                   std::string_view what) {
  if (ec == std::errc::operation_canceled) return cancelled();
  if (reply.is_error()) return {ec ? ec : make_error_code(errc_of_reply(reply.str)), reply.str};
  std::string text(what);
  if (ec == errc::timeout) {
    text = fmt::format("{}: no answer within {} ms", what, c.cfg.command_timeout.count());
  } else if (ec == errc::connection_lost) {
    const auto& last = c.session.last_error();
    text = last.empty() ? fmt::format("{}: not connected", what)
                        : fmt::format("{}: not connected ({})", what, last);
  }
  return {ec, std::move(text)};
}

namespace {

std::string names_of(std::string_view prefix, std::string_view name, std::string_view uuid,
                     std::uint64_t owner, const lock_kind& kind) {
  if (kind.permit_id_field) {
    std::string out;
    out.reserve(prefix.size() + name.size() + permit_id_size);
    out.append(prefix).append(name).append(permit_id_of(uuid, owner));
    return out;
  }
  const std::string_view suffix = kind.field_suffix;
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, owner).ptr;
  std::string out;
  out.reserve(prefix.size() + name.size() + uuid.size() + 1 + (end - digits) + suffix.size());
  out.append(prefix).append(name).append(uuid).append(1, ':').append(digits, end).append(suffix);
  return out;
}

}  // namespace

lock_state::lock_state(std::shared_ptr<engine_context> c, std::string_view n, std::uint64_t o,
                       const lock_kind& k, bool in_table)
    : ctx(std::move(c)),
      kind(k),
      owner(o),
      registered(in_table),
      key_size_(static_cast<std::uint32_t>(ctx->cfg.key_prefix.size() + n.size())),
      names_(names_of(ctx->cfg.key_prefix, n, ctx->uuid, o, k)) {}

std::string lock_state::shown_field() const {
  return kind.permit_id_field ? permit_id_hex(field()) : std::string(field());
}

std::string_view lock_state::name() const noexcept {
  return key().substr(ctx->cfg.key_prefix.size());
}

const boost::asio::any_io_executor& lock_state::executor() const noexcept { return ctx->executor; }

std::chrono::steady_clock::time_point lock_state::renewal_confirmed() const noexcept {
  return ctx->dog.confirmed(*this);
}

bool lock_state::logging() const noexcept { return ctx->logging(); }

void lock_state::log_line(log_level level, std::string_view text) const {
  ctx->log(level, "lock '{}' (owner {}){}", name(), ctx->short_owner(owner), text);
}

lock_state::~lock_state() {
  owners().set_last_error(this, {});
  if (registered) owners().forget(*this);
}

void lock_state::on_lease_lost(std::string_view why) {
  ctx->metrics.lock_lost();
  log(log_level::error, " lost: {}", why);
  if (local_holds > 0) count_hold_ended();
  server_holds = 0;
  reset(true);
}

void lock_state::on_acquired(std::chrono::milliseconds lease_ms, bool renew,
                             std::chrono::steady_clock::time_point sent,
                             std::chrono::milliseconds claim) {
  if (local_holds++ == 0) {
    lost = false;
    granted_at = std::chrono::steady_clock::now();
    handoff_streak = 0;  // a new hold; a handoff that made it sets its streak after this
  }
  ++server_holds;
  ++grants;
  orphan_releases = 0;
  lease = lease_ms;
  ctx->metrics.hold_granted(lease_ms);
  watched = renew;
  // The watchdog holds the state: a held lock stays renewed even if every handle is gone.
  if (renew) renew_from(sent, claim);
}

void lock_state::renew_from(std::chrono::steady_clock::time_point confirmed,
                            std::chrono::milliseconds claim) {
  ctx->dog.add(*this, shared_from_this(), confirmed, claim);
}

void lock_state::count_hold_ended() const {
  ctx->metrics.hold_ended(std::chrono::steady_clock::now() - granted_at);
}

lock_state::release_undo lock_state::before_release() {
  // Shortly after a failover the new master may count holds of this owner that a lost release
  // should have removed, whichever state (old or made since) releases now: see
  // engine_context::counts_uncertain_until.
  // Checked for a time only once a move happened: no clock read per unlock otherwise.
  const auto uncertain_until = ctx->counts_uncertain_until;
  if (uncertain_until != std::chrono::steady_clock::time_point{} &&
      std::chrono::steady_clock::now() < uncertain_until) {
    maybe_orphaned = true;
  }
  release_undo undo{local_holds, renewing(), renewal_confirmed(), ctx->dog.claim(*this)};
  if (local_holds == 1) count_hold_ended();
  if (local_holds <= 1) reset(false);
  return undo;
}

void lock_state::release_not_sent(const release_undo& undo) {
  if (local_holds != 0 || undo.holds == 0) return;
  local_holds = undo.holds;
  if (undo.watched) renew_from(undo.confirmed, undo.claim);
}

lock_state::release_outcome lock_state::on_released(const resp3::value& reply,
                                                    std::chrono::steady_clock::time_point sent,
                                                    std::uint32_t grants_at_start) {
  const bool released = reply.type == resp3::type::number && reply.integer == 1;
  if ((reply.is_null() || released) && grants != grants_at_start && local_holds > 0) {
    // A hold was granted since this release began (its answer came late: retried across a
    // reconnect, or told to its caller as unknown). Had that hold run first, this release
    // would have found it and answered "still held"; so it ran after, and stands, unless it
    // was this very count claimed twice. Resetting here would stop renewing a hold a caller
    // has, and its lease would run out with the caller still believing: ask instead. On one
    // connection answers come in order, so this needs an answer that overtakes: a grant by push
    // (fair kinds) before a retried unlock's answer.
    log(log_level::debug,
        ": an unlock begun before this owner's latest acquisition was answered {}; asking "
        "whether that acquisition still holds",
        released ? "released" : "not held");
    return {released ? failure()
                     : failure(errc::not_owner,
                               fmt::format("lock '{}' was not held by {}", name(), shown_field())),
            false, true};
  }
  if (reply.is_null()) {
    server_holds = 0;
    maybe_orphaned = false;
    reset(false);
    return {failure(errc::not_owner,
                    fmt::format("lock '{}' is not held by {}", name(), shown_field()))};
  }
  if (reply.type != resp3::type::number) {
    return {failure(errc::protocol_error, "release script: unexpected reply")};
  }
  if (reply.integer == 1) {
    server_holds = 0;
    maybe_orphaned = false;
    reset(false);
    return {};
  }
  server_holds = server_holds > 1 ? server_holds - 1 : 1;  // still held: one at least
  if (local_holds > 1) {
    --local_holds;
  } else if (local_holds == 0 && maybe_orphaned) {
    // Still held, nobody here holds it, and an acquire of ours may have run late: those holds
    // belong to no caller, and keeping (or renewing) them would keep the lock for no one.
    return {failure(), true};
  } else {
    // The server counts a hold this owner did not know of: another handle of the same owner
    // (a blocking lock's state is looked up per call), or a re-acquisition since this release
    // was sent. The owner holds on; the script set the TTL to the lease again when it was sent.
    if (local_holds == 0) {
      log(log_level::debug,
          ": its final unlock was answered 'still held'; the owner holds on (another handle of "
          "it holds the lock)");
    }
    local_holds = 1;
    if (watched) renew_from(sent);
  }
  return {};
}

multiplexer::id_type lock_state::ask(command question, reply_handler answered,
                                     std::chrono::steady_clock::time_point deadline) const {
  auto opts = round_trip(*this);
  if (deadline != std::chrono::steady_clock::time_point{}) opts.deadline = deadline;
  return ctx->session.exec(std::move(question), opts, std::move(answered));
}

void lock_state::set_last_error(const failure& e) {
  if (!e) return;
  // The failure's own words (Redis's, the bound's); the code's message if it has none.
  owners().set_last_error(this, e.text().empty() ? e.code.message() : std::string(e.text()));
}

std::string lock_state::last_error() const { return owners().last_error(this); }

void lock_state::set_argument(std::string value) { owners().set_argument(this, std::move(value)); }
void lock_state::clear_argument() { owners().clear_argument(this); }
const std::string* lock_state::argument() const { return owners().argument(this); }

owner_table& lock_state::owners() const noexcept { return ctx->owners; }

void lock_state::reset(bool was_lost) {
  local_holds = 0;
  lost = was_lost;
  if (lost_signal) lost_signal->cancel();
  ctx->dog.remove(*this);  // last: it may drop the watchdog's reference to us
}

}  // namespace rlock::detail
