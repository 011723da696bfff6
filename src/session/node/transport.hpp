#pragma once

#include "rlock/config.hpp"
#include "rlock/error.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/error_code.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace rlock::detail {

/// The byte stream of one connection to a node: plain TCP, or TLS over it (Asio's SSL stream on
/// OpenSSL). The connection above connects socket(), calls the TLS handshake when tls(), then
/// only reads and writes; which stream it is stays in here.
///
/// Every connection attempt gets a fresh stream (renew()): an SSL session that failed cannot
/// be reused. A TLS stream is shared: operations still pending on a replaced one (their
/// aborted completions not run yet) keep it alive through keep_alive().
class transport {
 public:
  using tcp = boost::asio::ip::tcp;
  using tls_stream = boost::asio::ssl::stream<tcp::socket>;

  transport(boost::asio::any_io_executor ex, const config& cfg);

  /// Closes the current stream and makes a new one for the next attempt, to `host` (the name
  /// checked against the certificate unless tls.server_name is set: with Sentinel each attempt
  /// may go elsewhere). With TLS, loads the settings on first use; returns
  /// tls_handshake_failed and the words if they cannot be used (an unreadable CA file, a key
  /// that does not match its certificate).
  std::error_code renew(std::string_view host, std::string& diagnostic);

  bool tls() const noexcept { return secure_ != nullptr; }
  /// The TCP layer, to connect and close.
  tcp::socket& socket() noexcept { return secure_ ? secure_->next_layer() : plain_; }
  /// The TLS stream (tls() only), for the handshake.
  tls_stream& secure() noexcept { return *secure_; }
  /// Holds the current stream for as long as an operation on it is pending.
  std::shared_ptr<void> keep_alive() const noexcept { return secure_; }

  template <typename Buffers, typename Token>
  auto async_read_some(const Buffers& buffers, Token&& token) {
    if (secure_) return secure_->async_read_some(buffers, std::forward<Token>(token));
    return plain_.async_read_some(buffers, std::forward<Token>(token));
  }
  /// Plaintext only: writes what the socket takes now without blocking (0 over TLS, whose
  /// records only the stream may cut, or when the socket's buffer is full). The caller writes
  /// the rest asynchronously; an error is left for that write to report.
  std::size_t write_now(boost::asio::const_buffer bytes) noexcept {
    if (secure_) return 0;
    boost::system::error_code ec;
    if (!plain_.non_blocking()) plain_.non_blocking(true, ec);
    if (ec) return 0;
    const std::size_t n = plain_.write_some(bytes, ec);
    return ec ? 0 : n;
  }
  /// TLS only: whether more of the server's bytes are already here, read from the socket but
  /// not yet handed out (further records in the TLS stream's buffer): the next read completes
  /// without waiting. Plaintext: false (the kernel merges what arrives; one read takes it all).
  bool input_pending() const noexcept;
  template <typename Buffers, typename Token>
  auto async_write(const Buffers& buffers, Token&& token) {
    if (secure_) return boost::asio::async_write(*secure_, buffers, std::forward<Token>(token));
    return boost::asio::async_write(plain_, buffers, std::forward<Token>(token));
  }

  /// Closes the TCP layer (no TLS close_notify: the connection is being given up).
  void close() noexcept;

  /// The name the server's certificate is checked against, and sent for SNI.
  const std::string& server_name() const noexcept { return name_; }

  /// What a failure of the TLS layer (the handshake, or a read during the Redis handshake, where
  /// TLS 1.3 servers report a refused client certificate) means: rlock's error and the words
  /// for it; nothing if `ec` is not a TLS failure.
  std::optional<std::pair<errc, std::string>> explain(const boost::system::error_code& ec) const;

 private:
  std::error_code load_settings(std::string& diagnostic);

  boost::asio::any_io_executor executor_;
  config::tls_settings settings_;
  std::string name_;
  tcp::socket plain_;
  std::unique_ptr<boost::asio::ssl::context> context_;
  std::shared_ptr<tls_stream> secure_;
};

}  // namespace rlock::detail
