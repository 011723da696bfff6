#pragma once

// An engine context over its own parts, for unit tests of the engine without a client or a
// server: a fake session the test answers (support/fake_session.hpp), and the real registry, hub,
// gate, watchdog and latch sweeper over it.
#include "engine/engine_context.hpp"
#include "support/fake_session.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <string>

namespace rlock::test {

class engine_fixture : public std::enable_shared_from_this<engine_fixture> {
 public:
  static std::shared_ptr<engine_fixture> make(const boost::asio::any_io_executor& ex,
                                              config c = {}) {
    std::shared_ptr<engine_fixture> f(new engine_fixture(ex, std::move(c)));
    // As the client does: timers of the parts act only while their owner lives.
    f->dog.set_owner(f);
    f->hub.set_owner(f);
    f->latches.set_owner(f);
    return f;
  }
  ~engine_fixture() { dog.stop(); }

  /// The context, keeping this fixture alive as a client's context keeps its client.
  std::shared_ptr<detail::engine_context> context() { return {shared_from_this(), &ctx}; }

  const config cfg;
  fake_session session;
  detail::script_registry scripts;
  detail::notify_hub hub;
  detail::attempt_gate attempts;
  detail::watchdog dog;
  detail::latch_sweeper latches;
  detail::engine_context ctx;

 private:
  engine_fixture(const boost::asio::any_io_executor& ex, config c)
      : cfg(std::move(c)),
        session(cfg),
        scripts(session, ex),
        hub(session, ex),
        attempts(cfg.max_attempts_in_flight),
        dog(ex, scripts, cfg.watchdog_timeout),
        latches(ex, session, cfg.command_timeout),
        ctx(ex, cfg, "00000000-0000-4000-8000-000000000000",
            {session, scripts, hub, dog, attempts, latches}) {
    session.complete_handshake();
  }
};

}  // namespace rlock::test
