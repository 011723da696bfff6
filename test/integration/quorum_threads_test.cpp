// rlock::quorum_lock with each node's client on its own thread (its own io_context), as a
// service that gives each Redis deployment its own I/O thread would run it: the lock's own work
// runs on the first client's executor and each node's on its client's, so two owners that
// contend exclude each other, every hold is given back, and TSan sees no race.
#include "rlock/rlock.hpp"
#include "support/lock_env.hpp"
#include "support/raw_client.hpp"
#include "support/redis_server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace quorum_threads_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;

/// One owner's clients, one per node, each on an io_context of its own thread.
class threaded_clients {
 public:
  threaded_clients(const std::vector<std::uint16_t>& ports, const std::string& prefix) {
    for (auto port : ports) {
      auto io = std::make_unique<asio::io_context>();
      rlock::config cfg;
      cfg.port = port;
      cfg.key_prefix = prefix;
      cfg.command_timeout = 2s;
      clients_.push_back(std::make_unique<rlock::client>(io->get_executor(), cfg));
      guards_.emplace_back(io->get_executor());
      ios_.push_back(std::move(io));
    }
    for (auto& io : ios_) threads_.emplace_back([&ctx = *io] { ctx.run(); });
  }
  ~threaded_clients() {
    for (auto& g : guards_) g.reset();
    for (auto& io : ios_) io->stop();
    for (auto& t : threads_) t.join();
  }
  void connect() {
    for (auto& c : clients_) c->async_connect(asio::use_future).get();
  }
  void close() {
    for (auto& c : clients_) c->async_close(asio::use_future).get();
  }
  std::vector<std::reference_wrapper<rlock::client>> refs() {
    std::vector<std::reference_wrapper<rlock::client>> out;
    for (auto& c : clients_) out.emplace_back(*c);
    return out;
  }

 private:
  std::vector<std::unique_ptr<asio::io_context>> ios_;
  std::vector<std::unique_ptr<rlock::client>> clients_;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::vector<std::thread> threads_;
};

TEST(quorum_threads, owners_whose_nodes_run_on_their_own_threads_exclude_each_other) {
  std::vector<std::unique_ptr<rlock::test::redis_server>> servers;
  std::vector<std::uint16_t> ports;
  for (int i = 0; i < 3; ++i) {
    servers.push_back(std::make_unique<rlock::test::redis_server>());
    ports.push_back(servers.back()->port());
  }
  const std::string prefix = rlock::test::unique_prefix();
  threaded_clients a(ports, prefix);
  threaded_clients b(ports, prefix);
  a.connect();
  b.connect();
  rlock::quorum_options fenced;
  fenced.fenced = true;
  fenced.restart_delay = 30s;  // nothing reconnects: each node is asked on its own thread first
  rlock::quorum_lock qa(a.refs(), "threads", fenced);
  rlock::quorum_lock qb(b.refs(), "threads", fenced);
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::atomic<std::int64_t> last_token{0};
  std::atomic<int> regressions{0};
  auto contend = [&](rlock::quorum_lock q) -> asio::awaitable<void> {
    for (int r = 0; r < 10; ++r) {
      co_await q.lock(10s);
      if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
      if (q.token() <= last_token.exchange(q.token())) regressions.fetch_add(1);
      co_await rlock::test::sleep_for(1ms);
      inside.fetch_sub(1);
      co_await q.unlock();
    }
  };
  auto fa = asio::co_spawn(qa.get_executor(), contend(qa), asio::use_future);
  auto fb = asio::co_spawn(qb.get_executor(), contend(qb), asio::use_future);
  ASSERT_EQ(fa.wait_for(60s), std::future_status::ready);
  ASSERT_EQ(fb.wait_for(60s), std::future_status::ready);
  EXPECT_NO_THROW(fa.get());
  EXPECT_NO_THROW(fb.get());
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(regressions.load(), 0);
  EXPECT_EQ(qa.metrics().rounds_won + qb.metrics().rounds_won, 20u);
  for (auto port : ports) {
    rlock::test::raw_client raw(port);
    EXPECT_EQ(raw.command_int({"EXISTS", prefix + "threads"}), 0);
  }
  a.close();
  b.close();
}

}  // namespace quorum_threads_test
