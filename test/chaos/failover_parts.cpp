#include "chaos/failover_parts.hpp"

#include "support/raw_client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace rlock::chaos {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using rlock::test::raw_client;

canary::canary(std::uint16_t port, std::string key) : key_(std::move(key)) {
  thread_ = std::thread([this, port] {
    try {
      raw_client raw(port);
      for (int i = 0; i < 60'000 && !stop_; ++i) {
        const auto v = raw.command({"INCR", key_});
        if (v.type != rlock::detail::resp3::type::number) break;  // READONLY: demoted
        acked_ = v.integer;
        std::this_thread::sleep_for(1ms);
      }
    } catch (const std::exception&) {
      // The master died: what it acknowledged until then is in acked_.
    }
  });
}
std::int64_t canary::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  return acked_;
}

held_lock::held_lock(const std::function<rlock::config(const std::string&)>& config_of,
                     recorder& rec, std::string name)
    : rec_(rec), name_(std::move(name)) {
  holder_.emplace(io_.get_executor(), config_of("holder"));
  contender_.emplace(io_.get_executor(), config_of("contender"));
  asio::co_spawn(io_, hold(), asio::detached);
  asio::co_spawn(io_, contend(), asio::detached);
  thread_ = std::thread([this] { io_.run_for(120s); });
}
void held_lock::finish() {
  if (!thread_.joinable()) return;
  asio::post(io_, [this] {
    stopping_ = true;
    stop_holding_.emit(asio::cancellation_type::all);
  });
  thread_.join();
}

asio::awaitable<void> held_lock::hold() {
  co_await holder_->connect();
  auto l = holder_->get_lock(name_);
  const nanos asked = now_ns();
  co_await l.lock();
  const auto a = rec_.acquired(name_, "holder", asked);
  holding_ = true;
  // finish() may have come while the lock was being taken: its signal found nobody to cancel.
  bool lost = false;
  if (!stopping_) {
    auto [ec] = co_await l.async_lost(
        asio::bind_cancellation_slot(stop_holding_.slot(), asio::as_tuple(asio::use_awaitable)));
    lost = !ec;
  }
  if (lost) {
    rec_.end(a, end_kind::lost);
    lost_ = true;
  } else {
    const nanos at = now_ns();
    auto [uec] = co_await l.async_unlock(asio::as_tuple(asio::use_awaitable));
    rec_.end_at(a, uec ? end_kind::not_owner : end_kind::released, at);
  }
  holding_ = false;
  co_await holder_->close();
}

asio::awaitable<void> held_lock::contend() {
  co_await contender_->connect();
  auto l = contender_->get_lock(name_);
  asio::steady_timer pause(io_);
  for (int i = 0; i < 10'000 && !stopping_; ++i) {
    const nanos asked = now_ns();
    auto [ec, got] = co_await l.async_try_lock(200ms, asio::as_tuple(asio::use_awaitable));
    if (ec || !got) continue;
    const auto a = rec_.acquired(name_, "contender", asked);
    pause.expires_after(5ms);  // a short hold, then a pause: a readable history
    co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
    const nanos at = now_ns();
    auto [uec] = co_await l.async_unlock(asio::as_tuple(asio::use_awaitable));
    rec_.end_at(a, uec ? end_kind::not_owner : end_kind::released, at);
    pause.expires_after(5ms);
    co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  co_await contender_->close();
}

}  // namespace rlock::chaos
