// A fenced write: why a lease-based lock needs the resource's help, and how a fencing token
// gives it (Kleppmann, "How to do distributed locking", 2016).
//
// Writer A takes the fenced lock with a 300 ms lease, then stalls for 800 ms (a GC pause, a
// stopped VM, a slow disk: anything that outlasts the lease). Its lease runs out; writer B takes
// the lock with a larger token and writes. A wakes up still believing it holds the lock and
// writes too: the resource refuses, because A's token is lower than one it has already seen.
// Without the check, A's stale write would silently overwrite B's.
//
// The resource is a Redis hash updated by a Lua script that keeps the highest token seen, written
// through its own connection (hiredis here; any client, or any store that can compare before it
// writes: a SQL row with a `token` column and `UPDATE ... WHERE token <= ?`, for one).
//
// Usage: rlock_fenced_write [redis-url]
//        rlock_fenced_write redis-url --writer VALUE LEASE_MS WORK_MS
//          One writer: acquire with a LEASE_MS lease, print "acquired <token>", work for
//          WORK_MS, write VALUE with the token, print "accepted" or "refused"; exit 0 if
//          accepted, 3 if refused. The chaos suite stops such a writer (SIGSTOP) past its lease.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <cstdint>
#include <hiredis/hiredis.h>
#include <iostream>
#include <memory>
#include <rlock/rlock.hpp>
#include <stdexcept>
#include <string>

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

constexpr const char* lock_name = "rlock-example:fenced:ledger";

/// The resource: a record that refuses writes carrying a token lower than the highest it has
/// accepted. Equal tokens pass (one holder may write twice).
class fenced_record {
 public:
  fenced_record(const rlock::config& cfg, std::string key) : key_(std::move(key)) {
    conn_.reset(redisConnect(cfg.host.c_str(), cfg.port));
    if (!conn_ || conn_->err) throw std::runtime_error("resource: cannot connect to Redis");
    if (!cfg.password.empty()) {
      reply r(cfg.username.empty() ? redisCommand(conn_.get(), "AUTH %s", cfg.password.c_str())
                                   : redisCommand(conn_.get(), "AUTH %s %s", cfg.username.c_str(),
                                                  cfg.password.c_str()));
      check(r.get());
    }
    reply r(redisCommand(conn_.get(), "SELECT %d", cfg.database));
    check(r.get());
  }

  /// KEYS[1] = the record, ARGV[1] = token, ARGV[2] = value; 1 written, 0 refused.
  bool write(std::int64_t token, const std::string& value) {
    static constexpr const char* script =
        "local last = tonumber(redis.call('hget', KEYS[1], 'token') or '0') "
        "if tonumber(ARGV[1]) < last then return 0 end "
        "redis.call('hset', KEYS[1], 'token', ARGV[1], 'value', ARGV[2]) "
        "return 1";
    const std::string t = std::to_string(token);
    reply r(redisCommand(conn_.get(), "EVAL %s 1 %s %s %s", script, key_.c_str(), t.c_str(),
                         value.c_str()));
    check(r.get());
    return r->integer == 1;
  }

  std::string value() {
    reply r(redisCommand(conn_.get(), "HGET %s value", key_.c_str()));
    check(r.get());
    return r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : std::string("(none)");
  }

  void clear() { reply r(redisCommand(conn_.get(), "DEL %s", key_.c_str())); }

 private:
  struct free_reply {
    void operator()(void* r) const { freeReplyObject(r); }
  };
  struct reply : std::unique_ptr<redisReply, free_reply> {
    explicit reply(void* r)
        : std::unique_ptr<redisReply, free_reply>(static_cast<redisReply*>(r)) {}
  };
  void check(const redisReply* r) const {
    if (r == nullptr) throw std::runtime_error("resource: connection lost");
    if (r->type == REDIS_REPLY_ERROR) throw std::runtime_error(std::string("resource: ") + r->str);
  }

  struct free_context {
    void operator()(redisContext* c) const { redisFree(c); }
  };
  std::unique_ptr<redisContext, free_context> conn_;
  std::string key_;
};

asio::awaitable<void> pause(milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

/// Takes the lock, works for `work`, then writes `value` with the acquisition's token.
asio::awaitable<bool> write_under_lock(rlock::fenced_lock lock, fenced_record& record,
                                       const std::string& value, milliseconds lease,
                                       milliseconds work) {
  const std::int64_t token = co_await lock.lock(lease);
  std::cout << value << ": acquired with token " << token << std::endl;
  co_await pause(work);  // the lease may run out meanwhile: nothing here can tell
  const bool accepted = record.write(token, value);
  std::cout << value << ": write with token " << token << (accepted ? " accepted" : " refused")
            << std::endl;
  try {
    co_await lock.unlock();
  } catch (const boost::system::system_error& e) {
    std::cout << value << ": unlock: " << e.what() << std::endl;  // not_owner once expired
  }
  co_return accepted;
}

int main(int argc, char** argv) {
  try {
    const auto cfg = rlock::config::from_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379");
    const bool writer_mode = argc == 6 && std::string(argv[2]) == "--writer";
    asio::io_context io;
    rlock::client redis(io.get_executor(), cfg);
    fenced_record record(cfg, "rlock-example:fenced:record");
    int status = 1;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await redis.connect();
          if (writer_mode) {
            auto lock = redis.get_fenced_lock(lock_name);
            const std::int64_t token = co_await lock.lock(milliseconds(std::stoll(argv[4])));
            std::cout << "acquired " << token << std::endl;
            co_await pause(milliseconds(std::stoll(argv[5])));
            const bool accepted = record.write(token, argv[3]);
            std::cout << (accepted ? "accepted" : "refused") << std::endl;
            status = accepted ? 0 : 3;
            co_await redis.close();
            co_return;
          }
          record.clear();
          // A stalls past its 300 ms lease; B waits for the lock meanwhile (woken when A's
          // lease runs out) and writes first.
          auto writer_b = [&]() -> asio::awaitable<bool> {
            co_await pause(50ms);  // A first
            co_return co_await write_under_lock(redis.get_fenced_lock(lock_name), record, "B", 5s,
                                                0ms);
          };
          const auto [a_accepted, b_accepted] = co_await (
              write_under_lock(redis.get_fenced_lock(lock_name), record, "A", 300ms, 800ms) &&
              writer_b());
          std::cout << "record holds \"" << record.value() << "\"\n";
          status = b_accepted && !a_accepted && record.value() == "B" ? 0 : 1;
          co_await redis.close();
        },
        [](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
        });
    io.run();
    return status;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
}
