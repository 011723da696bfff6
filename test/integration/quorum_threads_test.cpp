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

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace quorum_threads_test {

namespace asio = boost::asio;
using namespace std::chrono_literals;

/// Whether no server on `ports` has `key` within 2 s: the last unlock completes once a majority
/// confirmed, and the others let go within their command_timeout.
bool released_everywhere(const std::vector<std::uint16_t>& ports, const std::string& key) {
  for (int i = 0; i < 1000; ++i) {
    bool any = false;
    for (auto port : ports) {
      rlock::test::raw_client raw(port);
      any = any || raw.command_int({"EXISTS", key}) != 0;
    }
    if (!any) return true;
    std::this_thread::sleep_for(2ms);
  }
  return false;
}

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
  EXPECT_TRUE(released_everywhere(ports, prefix + "threads"));
  a.close();
  b.close();
}

/// The blocking form: threads are owners (std::unique_lock with a timeout, re-entry, unlock by a
/// thread that holds nothing), over one blocking client per node.
TEST(quorum_threads, the_blocking_form_makes_each_thread_an_owner_on_every_node) {
  std::vector<std::unique_ptr<rlock::test::redis_server>> servers;
  std::vector<std::unique_ptr<rlock::blocking::client>> clients;
  std::vector<std::reference_wrapper<rlock::blocking::client>> nodes;
  const std::string prefix = rlock::test::unique_prefix();
  for (int i = 0; i < 3; ++i) {
    servers.push_back(std::make_unique<rlock::test::redis_server>());
    auto cfg = rlock::test::make_config();
    cfg.port = servers.back()->port();
    cfg.key_prefix = prefix;
    clients.push_back(std::make_unique<rlock::blocking::client>(cfg));
    nodes.emplace_back(*clients.back());
  }
  rlock::quorum_options fenced;
  fenced.fenced = true;
  rlock::blocking::quorum_lock q(nodes, "blocking", fenced);
  static_assert(std::is_same_v<decltype(q.try_lock_for(1ms)), bool>);
  EXPECT_THROW(rlock::blocking::quorum_lock({}, "none"), boost::system::system_error);

  // Re-entry by the holding thread; a second thread is another owner and times out.
  q.lock();
  EXPECT_TRUE(q.try_lock());  // re-entered
  const auto token = q.token();
  EXPECT_GT(token, 0);
  std::thread other([&] {
    EXPECT_FALSE(q.try_lock_for(50ms));
    EXPECT_FALSE(q.is_held());
    try {
      q.unlock();
      ADD_FAILURE() << "unlock by a thread that holds nothing";
    } catch (const boost::system::system_error& e) {
      EXPECT_EQ(e.code(), rlock::errc::not_owner);
    }
  });
  other.join();
  q.unlock();
  EXPECT_TRUE(q.is_held());  // one hold left
  q.unlock();
  EXPECT_FALSE(q.is_held());
  std::vector<std::uint16_t> ports;
  for (const auto& s : servers) ports.push_back(s->port());
  EXPECT_TRUE(released_everywhere(ports, prefix + "blocking"));

  // Threads under std::unique_lock exclude each other, and each hold's token is the largest yet.
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::mutex tokens_mutex;
  std::vector<std::int64_t> tokens;
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (int r = 0; r < 5; ++r) {
        std::unique_lock<rlock::blocking::quorum_lock> hold(q, 20s);
        if (!hold.owns_lock()) {
          ADD_FAILURE() << "not acquired within 20 s";
          return;
        }
        if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
        {
          std::lock_guard g(tokens_mutex);
          tokens.push_back(q.token());
        }
        std::this_thread::sleep_for(1ms);
        inside.fetch_sub(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  ASSERT_EQ(tokens.size(), 15u);
  EXPECT_TRUE(std::is_sorted(tokens.begin(), tokens.end()));
  EXPECT_EQ(std::adjacent_find(tokens.begin(), tokens.end()), tokens.end());  // strictly
  EXPECT_GT(tokens.front(), token);
}

}  // namespace quorum_threads_test
