#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace rlock::test {

/// Which way bytes flow through the proxy.
enum class direction : std::uint8_t {
  to_server,  // client → redis-server: commands
  to_client,  // redis-server → client: replies and pushes
};

/// A TCP proxy for fault injection, placed between a client and redis-server: the client
/// connects to `port()`, the proxy to the server. Every control takes effect before it returns
/// and applies to the connections open now and to later ones.
///
/// The faults are the network's, with TCP's guarantees kept: bytes inside one connection are
/// never lost, reordered or corrupted. A stalled direction (`drop`, `black_hole`) holds what it
/// reads; `heal` delivers it (the partition ended before TCP gave up) and `cut_all` loses it with
/// the connection (TCP gave up). Runs on its own thread; the controls may be called from any.
class fault_proxy {
 public:
  /// Listens on a free 127.0.0.1 port; forwards to 127.0.0.1:`upstream_port`.
  explicit fault_proxy(std::uint16_t upstream_port);
  fault_proxy(const fault_proxy&) = delete;
  fault_proxy& operator=(const fault_proxy&) = delete;
  /// Closes every connection and stops the proxy's thread.
  ~fault_proxy();

  std::uint16_t port() const noexcept;

  /// Delivers each chunk read from now on `d` later than it was read (order kept).
  void set_delay(direction d, std::chrono::milliseconds d_delay);
  /// Stops delivering in direction `d` (bytes are read and held).
  void drop(direction d);
  /// Accepts connections but answers nothing and forwards nothing, in both directions.
  void black_hole();
  /// Stalls the connections open now, both ways; later ones flow (one TCP flow's path broke).
  void freeze_open();
  /// New connections are refused: accepted and reset at once (RST), so the client's handshake
  /// fails. Connections open now are not touched.
  void refuse();
  /// Writes what the server sends one byte per write (each its own TCP segment).
  void split_replies(bool on);
  /// Stalls, both ways, the connections coming from `address` (their client side's IP, e.g. a
  /// server's `bind-source-addr`), open now and later; the others flow. One peer cut off.
  void isolate(const std::string& address);
  /// Ends drop, black_hole, isolate, refuse, delays and splitting; held bytes are delivered.
  void heal();
  /// Closes every open connection now (held bytes are lost with them).
  void cut_all();

  /// Connections open now, and accepted since the start.
  std::size_t open_connections() const;
  std::uint64_t accepted() const;
  /// Bytes read in direction `d` since the start (delivered, held or lost with a cut).
  std::uint64_t received(direction d) const;
  /// Bytes delivered in direction `d` since the start.
  std::uint64_t delivered(direction d) const;
  /// Write operations made in direction `d` (with split_replies, one per byte).
  std::uint64_t writes(direction d) const;

 private:
  class impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace rlock::test
