#include "chaos/fault_proxy.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <atomic>
#include <deque>
#include <future>
#include <list>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

namespace rlock::test {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

namespace {

std::size_t index(direction d) { return d == direction::to_server ? 0 : 1; }

}  // namespace

class fault_proxy::impl {
 public:
  explicit impl(std::uint16_t upstream)
      : upstream_(asio::ip::make_address("127.0.0.1"), upstream),
        acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    port_ = acceptor_.local_endpoint().port();
  }

  void start() {
    asio::co_spawn(ioc_, accept_loop(this), asio::detached);
    thread_ = std::thread([this] { ioc_.run(); });
  }

  void stop() {
    run([this] {
      stopping_ = true;
      boost::system::error_code ignored;
      acceptor_.close(ignored);
      close_all();
    });
    ioc_.stop();
    if (thread_.joinable()) thread_.join();
  }

  /// Runs `f` on the proxy's thread and waits for it: the control is in effect on return.
  template <typename F>
  void run(F f) {
    std::promise<void> done;
    asio::dispatch(ioc_, [&] {
      try {
        f();
        done.set_value();
      } catch (...) {
        done.set_exception(std::current_exception());
      }
    });
    done.get_future().get();
  }

  std::uint16_t port_ = 0;
  std::atomic<std::size_t> open_{0};
  std::atomic<std::uint64_t> accepted_{0};
  std::array<std::atomic<std::uint64_t>, 2> received_{};
  std::array<std::atomic<std::uint64_t>, 2> delivered_{};
  std::array<std::atomic<std::uint64_t>, 2> writes_{};

  // Touched on the proxy's thread only.
  std::array<std::chrono::milliseconds, 2> delay_{};
  std::array<bool, 2> stalled_{};
  bool refusing_ = false;
  bool split_ = false;
  std::set<asio::ip::address> isolated_;

  void wake_all() {
    for (auto& l : links_) {
      l->frozen = false;
      l->wake();
    }
  }

  void freeze_all() {
    for (auto& l : links_) l->frozen = true;
  }

  void close_all() {
    auto links = links_;  // closing unlinks
    for (auto& l : links) l->close();
  }

 private:
  /// One proxied connection: a reader and a writer per direction, with a queue between them.
  struct link : std::enable_shared_from_this<link> {
    struct chunk {
      clock_type::time_point due;
      std::string bytes;
    };
    struct lane {
      std::deque<chunk> queue;
      asio::steady_timer timer;
      explicit lane(asio::io_context& ioc) : timer(ioc) {}
    };

    impl& proxy;
    tcp::socket client;
    tcp::socket server;
    std::array<lane, 2> lanes;
    bool closed = false;
    bool frozen = false;
    asio::ip::address from;  // the client side's address
    std::list<std::shared_ptr<link>>::iterator self;

    link(impl& p, tcp::socket c)
        : proxy(p), client(std::move(c)), server(p.ioc_), lanes{lane(p.ioc_), lane(p.ioc_)} {}

    tcp::socket& source(direction d) { return d == direction::to_server ? client : server; }
    tcp::socket& sink(direction d) { return d == direction::to_server ? server : client; }

    void wake() {
      for (auto& l : lanes) l.timer.cancel();
    }

    void close() {
      if (closed) return;
      closed = true;
      boost::system::error_code ignored;
      client.close(ignored);
      server.close(ignored);
      wake();
      proxy.links_.erase(self);
      --proxy.open_;
    }
  };

  static asio::awaitable<void> accept_loop(impl* self) {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket s(self->ioc_);
      co_await self->acceptor_.async_accept(s, asio::redirect_error(asio::use_awaitable, ec));
      if (self->stopping_) co_return;
      if (ec) continue;  // e.g. too many open files: the next accept may succeed
      if (self->refusing_) {
        // Reset at once. The listening socket stays open: closing it would let the port go to
        // any socket, even a client's self-connection while it retries.
        s.set_option(asio::socket_base::linger(true, 0), ec);
        s.close(ec);
        continue;
      }
      ++self->accepted_;
      auto l = std::make_shared<link>(*self, std::move(s));
      l->from = l->client.remote_endpoint(ec).address();
      self->links_.push_front(l);
      l->self = self->links_.begin();
      ++self->open_;
      asio::co_spawn(self->ioc_, run_link(self, l), asio::detached);
    }
  }

  static asio::awaitable<void> run_link(impl* self, std::shared_ptr<link> l) {
    boost::system::error_code ec;
    co_await l->server.async_connect(self->upstream_,
                                     asio::redirect_error(asio::use_awaitable, ec));
    if (ec || l->closed) {
      l->close();
      co_return;
    }
    l->client.set_option(tcp::no_delay(true), ec);
    l->server.set_option(tcp::no_delay(true), ec);
    for (auto d : {direction::to_server, direction::to_client}) {
      asio::co_spawn(self->ioc_, read_lane(self, l, d), asio::detached);
      asio::co_spawn(self->ioc_, write_lane(self, l, d), asio::detached);
    }
  }

  static asio::awaitable<void> read_lane(impl* self, std::shared_ptr<link> l, direction d) {
    std::array<char, 16 * 1024> buf{};
    auto& lane = l->lanes[index(d)];
    while (!l->closed) {
      boost::system::error_code ec;
      const auto n = co_await l->source(d).async_read_some(
          asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
      if (ec || l->closed) break;
      self->received_[index(d)] += n;
      lane.queue.push_back(
          {clock_type::now() + self->delay_[index(d)], std::string(buf.data(), n)});
      lane.timer.cancel();
    }
    // One side closed: pass the close on after what was read, as TCP would (an empty chunk marks
    // the end).
    lane.queue.push_back({clock_type::time_point{}, std::string()});
    lane.timer.cancel();
  }

  static asio::awaitable<void> write_lane(impl* self, std::shared_ptr<link> l, direction d) {
    auto& lane = l->lanes[index(d)];
    const auto i = index(d);
    while (!l->closed) {
      const bool stalled = self->stalled_[i] || l->frozen || self->isolated_.count(l->from) != 0;
      const bool ready =
          !lane.queue.empty() && !stalled && lane.queue.front().due <= clock_type::now();
      if (!ready) {
        const bool wait_forever = lane.queue.empty() || stalled;
        lane.timer.expires_at(wait_forever ? clock_type::time_point::max()
                                           : lane.queue.front().due);
        boost::system::error_code ec;
        co_await lane.timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        continue;
      }
      auto c = std::move(lane.queue.front());
      lane.queue.pop_front();
      if (c.bytes.empty()) break;  // the end marker
      boost::system::error_code ec;
      if (d == direction::to_client && self->split_) {
        for (std::size_t k = 0; k < c.bytes.size() && !ec && !l->closed; ++k) {
          co_await asio::async_write(l->sink(d), asio::buffer(c.bytes.data() + k, 1),
                                     asio::redirect_error(asio::use_awaitable, ec));
          ++self->writes_[i];
        }
      } else {
        co_await asio::async_write(l->sink(d), asio::buffer(c.bytes),
                                   asio::redirect_error(asio::use_awaitable, ec));
        ++self->writes_[i];
      }
      if (ec) break;
      self->delivered_[i] += c.bytes.size();
    }
    l->close();
  }

  asio::io_context ioc_;
  tcp::endpoint upstream_;
  tcp::acceptor acceptor_;
  std::list<std::shared_ptr<link>> links_;
  bool stopping_ = false;
  std::thread thread_;
};

fault_proxy::fault_proxy(std::uint16_t upstream_port)
    : impl_(std::make_unique<impl>(upstream_port)) {
  impl_->start();
}

fault_proxy::~fault_proxy() { impl_->stop(); }

std::uint16_t fault_proxy::port() const noexcept { return impl_->port_; }

void fault_proxy::set_delay(direction d, std::chrono::milliseconds delay) {
  impl_->run([&] { impl_->delay_[index(d)] = delay; });
}

void fault_proxy::drop(direction d) {
  impl_->run([&] { impl_->stalled_[index(d)] = true; });
}

void fault_proxy::black_hole() {
  impl_->run([&] { impl_->stalled_ = {true, true}; });
}

void fault_proxy::freeze_open() {
  impl_->run([&] { impl_->freeze_all(); });
}

void fault_proxy::isolate(const std::string& address) {
  const auto a = asio::ip::make_address(address);
  impl_->run([&] { impl_->isolated_.insert(a); });
}

void fault_proxy::refuse() {
  impl_->run([&] { impl_->refusing_ = true; });
}

void fault_proxy::split_replies(bool on) {
  impl_->run([&] { impl_->split_ = on; });
}

void fault_proxy::heal() {
  impl_->run([&] {
    impl_->stalled_ = {false, false};
    impl_->delay_ = {};
    impl_->split_ = false;
    impl_->refusing_ = false;
    impl_->isolated_.clear();
    impl_->wake_all();
  });
}

void fault_proxy::cut_all() {
  impl_->run([&] { impl_->close_all(); });
}

std::size_t fault_proxy::open_connections() const { return impl_->open_.load(); }
std::uint64_t fault_proxy::accepted() const { return impl_->accepted_.load(); }
std::uint64_t fault_proxy::writes(direction d) const { return impl_->writes_[index(d)].load(); }

std::uint64_t fault_proxy::received(direction d) const { return impl_->received_[index(d)].load(); }

std::uint64_t fault_proxy::delivered(direction d) const {
  return impl_->delivered_[index(d)].load();
}

}  // namespace rlock::test
