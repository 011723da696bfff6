// A fenced write under a quorum lock (Redlock): what the token buys when a holder outlives its
// lease, the point Redlock's critics make (Kleppmann, "How to do distributed locking", 2016).
//
// Writer A takes the quorum lock over three independent servers with a 300 ms lease, then
// stalls for 800 ms (a GC pause, a stopped VM): its validity ends, writer B takes the lock with a
// larger token and writes. A wakes still believing it holds the lock and writes too: the resource
// refuses, because A's token is lower than one it has already accepted. The tokens stay
// increasing whichever majority each writer got, even if a server restarted empty in between
// (docs/guide/kinds/quorum.md, "Fencing").
//
// The resource here is a record in this process that keeps the highest token it accepted; a real
// one is any store that compares before it writes (a SQL row with a `token` column and
// `UPDATE ... WHERE token <= ?`, a Redis script, an object store's conditional put).
//
// Usage: rlock_quorum_fenced_write [redis-url ...]   (default: three servers on 127.0.0.1,
//        ports 6379, 6380 and 6381)
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <rlock/rlock.hpp>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

/// The resource: refuses a write whose token is lower than the highest it accepted (an equal one
/// passes: one holder may write twice).
struct fenced_record {
  std::int64_t highest = 0;
  std::string value;

  bool write(std::int64_t token, const std::string& v) {
    if (token < highest) return false;
    highest = token;
    value = v;
    return true;
  }
};

asio::awaitable<void> pause(milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

/// Takes the lock with `lease`, works for `work`, then writes `value` with the hold's token.
asio::awaitable<bool> write_under_lock(rlock::quorum_lock lock, fenced_record& record,
                                       const std::string& value, milliseconds lease,
                                       milliseconds work) {
  co_await lock.lock(lease);
  const std::int64_t token = lock.token();  // read now: it is 0 again once the hold ends
  std::cout << value << ": acquired on a majority of " << lock.nodes() << " nodes with token "
            << token << std::endl;
  co_await pause(work);  // the validity may end meanwhile: lock.is_held() would say so
  const bool accepted = record.write(token, value);
  std::cout << value << ": write with token " << token << (accepted ? " accepted" : " refused")
            << std::endl;
  try {
    co_await lock.unlock();
  } catch (const boost::system::system_error& e) {
    std::cout << value << ": unlock: " << e.what() << std::endl;  // not_owner once lost
  }
  co_return accepted;
}

int main(int argc, char** argv) {
  try {
    std::vector<std::string> urls(argv + 1, argv + argc);
    if (urls.empty()) {
      urls = {"redis://127.0.0.1:6379", "redis://127.0.0.1:6380", "redis://127.0.0.1:6381"};
    }
    asio::io_context io;
    std::vector<std::unique_ptr<rlock::client>> clients;
    std::vector<std::reference_wrapper<rlock::client>> nodes;
    for (const auto& url : urls) {
      clients.push_back(
          std::make_unique<rlock::client>(io.get_executor(), rlock::config::from_url(url)));
      nodes.emplace_back(*clients.back());
    }
    rlock::quorum_options options;
    options.fenced = true;
    fenced_record record;
    int status = 1;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          for (auto& c : clients) co_await c->connect();
          // Two owners over the same nodes. A stalls past its 300 ms lease; B waits meanwhile,
          // woken when A stops believing and gives back what it still holds.
          rlock::quorum_lock a(nodes, "rlock-example:quorum:ledger", options);
          rlock::quorum_lock b(nodes, "rlock-example:quorum:ledger", options);
          auto writer_b = [&]() -> asio::awaitable<bool> {
            co_await pause(50ms);  // A first
            co_return co_await write_under_lock(b, record, "B", 5s, 0ms);
          };
          const auto [a_accepted, b_accepted] =
              co_await (write_under_lock(a, record, "A", 300ms, 800ms) && writer_b());
          std::cout << "record holds \"" << record.value << "\"\n";
          status = b_accepted && !a_accepted && record.value == "B" ? 0 : 1;
          for (auto& c : clients) co_await c->close();
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
