// Sharing a lock with a Java service that uses Redisson. Both sides name the lock the same and
// leave rlock's key prefix empty (Redisson has none):
//
//   // Java (Redisson 3.24.1 or later)
//   RLock lock = redisson.getLock("orders:42");
//   lock.lock();                 // watchdog lease, 30 s, renewed every 10 s
//   try { ... } finally { lock.unlock(); }
//
// The Redis layout both use (docs/design/wire-compatibility.md):
//   key      orders:42                               a hash
//   field    <client uuid>:<owner id>                hold count; Redisson: <uuid>:<thread id>
//   channel  redisson_lock__channel:{orders:42}      "0" published on the final unlock
//   latch    redisson_unlock_latch:{orders:42}:<id>  the first answer of an unlock, for retries
// so a Java thread waiting on the lock is woken by rlock's unlock and the other way round.
// This program takes the lock as rlock does and prints what a Redisson client would see. (CI has
// no Redisson; the wire format is checked by test/integration/interop_test.cpp.)
// Usage: rlock_redisson_interop [redis-url]
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <iostream>
#include <rlock/rlock.hpp>

namespace asio = boost::asio;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
  try {
    asio::io_context io;
    auto cfg = rlock::config::from_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379");
    cfg.key_prefix = "";              // as Redisson: the key is the name
    cfg.watchdog_timeout = 30'000ms;  // Redisson's lockWatchdogTimeout
    rlock::client redis(io.get_executor(), cfg);
    int status = 1;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await redis.connect();
          auto lock = redis.get_lock("rlock-example:orders:42");
          co_await lock.lock();
          std::cout << "key     " << lock.key() << "\nfield   " << lock.owner_field()
                    << "\nchannel redisson_lock__channel:{" << lock.key() << "}\n"
                    << "count   " << co_await lock.hold_count() << ", ttl "
                    << (co_await lock.remaining_ttl()).count() << " ms (watchdog)\n";
          co_await lock.unlock();
          status = 0;
          co_await redis.close();
        },
        [](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
        });
    io.run_for(30s);
    return status;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
}
