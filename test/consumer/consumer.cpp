// A program as a user of the installed package writes it: public headers only. Locks, checks
// that another owner is excluded, unlocks. Usage: consumer PORT. Exit 0 and "consumer ok" when
// everything held.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <rlock/rlock.hpp>
#include <string>

namespace asio = boost::asio;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer PORT\n");
    return 2;
  }
  // The headers and the library linked in must be one version.
  if (std::strcmp(rlock::library_version(), RLOCK_VERSION_STRING) != 0) {
    std::fprintf(stderr, "headers %s, library %s\n", RLOCK_VERSION_STRING,
                 rlock::library_version());
    return 1;
  }
  rlock::config cfg;
  cfg.port = static_cast<std::uint16_t>(std::atoi(argv[1]));
  cfg.key_prefix = "consumer:";
  asio::io_context io;
  rlock::client redis(io.get_executor(), cfg);
  int result = 1;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await redis.connect();
        auto mine = redis.get_lock("package");
        auto theirs = redis.get_lock("package");
        co_await mine.lock();
        const bool excluded = !(co_await theirs.try_lock());
        co_await mine.unlock();
        const bool free_again = co_await theirs.try_lock();
        if (free_again) co_await theirs.unlock();
        co_await redis.close();
        result = excluded && free_again ? 0 : 1;
      },
      [&](std::exception_ptr e) {
        if (!e) return;
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          std::fprintf(stderr, "consumer: %s\n", ex.what());
        }
      });
  io.run();
  if (result == 0) std::printf("consumer ok (rlock %s)\n", rlock::library_version());
  return result;
}
