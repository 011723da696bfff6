#include "session/node/transport.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>

#include <fmt/format.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

namespace rlock::detail {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;

transport::transport(asio::any_io_executor ex, const config& cfg)
    : executor_(std::move(ex)),
      settings_(cfg.tls),
      name_(cfg.tls.server_name.empty() ? cfg.host : cfg.tls.server_name),
      plain_(executor_) {}

std::error_code transport::load_settings(std::string& diagnostic) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  // Redis speaks TLS 1.2 and 1.3; nothing older.
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  boost::system::error_code ec;
  auto fail = [&](std::string_view what, const std::string& path) {
    diagnostic = fmt::format("TLS settings: {} '{}': {}", what, path, ec.message());
    return make_error_code(errc::tls_handshake_failed);
  };
  if (settings_.ca_file.empty() && settings_.ca_dir.empty()) {
    ctx->set_default_verify_paths(ec);
    if (ec) return fail("cannot use the system's trust store", "");
  }
  if (!settings_.ca_file.empty()) {
    ctx->load_verify_file(settings_.ca_file, ec);
    if (ec) return fail("cannot load the CA file", settings_.ca_file);
  }
  if (!settings_.ca_dir.empty()) {
    ctx->add_verify_path(settings_.ca_dir, ec);
    if (ec) return fail("cannot use the CA directory", settings_.ca_dir);
  }
  if (settings_.cert_file.empty() != settings_.key_file.empty()) {
    diagnostic = "TLS settings: a client certificate needs its key, and a key its certificate";
    return make_error_code(errc::tls_handshake_failed);
  }
  if (!settings_.cert_file.empty()) {
    ctx->use_certificate_chain_file(settings_.cert_file, ec);
    if (ec) return fail("cannot load the client certificate", settings_.cert_file);
    ctx->use_private_key_file(settings_.key_file, ssl::context::pem, ec);
    if (ec) return fail("cannot load the client key", settings_.key_file);
    if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
      diagnostic = fmt::format("TLS settings: the key '{}' does not match the certificate '{}'",
                               settings_.key_file, settings_.cert_file);
      return make_error_code(errc::tls_handshake_failed);
    }
  }
  ctx->set_verify_mode(settings_.verify_peer ? ssl::verify_peer : ssl::verify_none);
  context_ = std::move(ctx);
  return {};
}

std::error_code transport::renew(std::string_view host, std::string& diagnostic) {
  close();
  if (!settings_.enabled) return {};
  name_ = settings_.server_name.empty() ? std::string(host) : settings_.server_name;
  if (!context_) {
    if (auto ec = load_settings(diagnostic)) return ec;
  }
  secure_ = std::make_shared<tls_stream>(executor_, *context_);
  SSL* ssl = secure_->native_handle();
  // The name checked against the certificate: an IP address against its IP SANs, a host name
  // against its DNS SANs (and sent for SNI, which takes no addresses).
  boost::system::error_code not_ip;
  (void)asio::ip::make_address(name_, not_ip);
  if (!not_ip) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name_.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl, name_.c_str());
    SSL_set1_host(ssl, name_.c_str());
  }
  return {};
}

bool transport::input_pending() const noexcept {
  if (!secure_) return false;
  // Asio's TLS engine puts what it read from the socket into OpenSSL through a BIO pair: the
  // bytes still in the SSL object's read BIO (or decrypted and not yet read) are records that
  // arrived with the last read.
  SSL* ssl = secure_->native_handle();
  if (SSL_pending(ssl) > 0) return true;  // decrypted, not yet handed out
  // A whole record, not part of one: the rest of a part may still be on the network, and the
  // caller would wait for it. A record is a 5-byte header (type, version, length) and its body.
  char* bytes = nullptr;
  const int available = BIO_nread0(SSL_get_rbio(ssl), &bytes);
  if (available < 5 || bytes == nullptr) return false;
  const auto* header = reinterpret_cast<const unsigned char*>(bytes);
  const int length = header[3] << 8 | header[4];
  return available >= 5 + length;
}

void transport::close() noexcept {
  boost::system::error_code ignored;
  auto& s = socket();
  s.shutdown(tcp::socket::shutdown_both, ignored);
  s.close(ignored);
}

std::optional<std::pair<errc, std::string>> transport::explain(
    const boost::system::error_code& ec) const {
  if (!secure_) return std::nullopt;
  if (ec == ssl::error::stream_truncated) {
    return std::pair{errc::tls_handshake_failed,
                     std::string("the server closed the TLS connection without a close_notify")};
  }
  if (ec.category() != asio::error::get_ssl_category()) return std::nullopt;
  const int reason = ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
  const char* text = ERR_reason_error_string(static_cast<unsigned long>(ec.value()));
  const std::string words = text != nullptr ? text : ec.message();
  if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED) {
    const long result = SSL_get_verify_result(secure_->native_handle());
    const char* why = X509_verify_cert_error_string(result);
    if (result == X509_V_ERR_HOSTNAME_MISMATCH || result == X509_V_ERR_IP_ADDRESS_MISMATCH) {
      return std::pair{errc::tls_hostname_mismatch,
                       fmt::format("the server's certificate is not for '{}' ({}); set "
                                   "tls.server_name to a name it carries",
                                   name_, why)};
    }
    return std::pair{errc::tls_certificate_untrusted,
                     fmt::format("the server's certificate cannot be trusted: {} (tls.ca_file "
                                 "must hold the CA that signed it)",
                                 why)};
  }
  switch (reason) {
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
      return std::pair{errc::tls_client_rejected,
                       fmt::format("the server refused this client's certificate: {}{}", words,
                                   settings_.cert_file.empty()
                                       ? " (none was sent: set tls.cert_file and tls.key_file)"
                                       : "")};
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
      return std::pair{errc::tls_handshake_failed,
                       fmt::format("TLS handshake failed: {} (the port does not speak TLS: a "
                                   "plaintext port? turn tls off or use the server's tls-port)",
                                   words)};
    default:
      return std::pair{errc::tls_handshake_failed, fmt::format("TLS handshake failed: {}", words)};
  }
}

}  // namespace rlock::detail
