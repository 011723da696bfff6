#include "rlock/error.hpp"

#include "rlock/detail/completion.hpp"
#include "rlock/detail/failure.hpp"

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

namespace rlock {
namespace {

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "rlock"; }

  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::not_owner:
        return "lock is not held by this owner";
      case errc::lock_lost:
        return "lock was lost: it is no longer held by this owner";
      case errc::timeout:
        return "operation timed out";
      case errc::invalid_argument:
        return "invalid argument";
      case errc::protocol_error:
        return "RESP3 protocol error";
      case errc::server_error:
        return "Redis replied with an error";
      case errc::connection_lost:
        return "connection to Redis lost";
      case errc::would_deadlock:
        return "blocking call from the client's own io thread would deadlock";
      case errc::permission_denied:
        return "Redis denied permission (ACL)";
      case errc::auth_failed:
        return "Redis rejected the credentials";
      case errc::unsupported_server:
        return "the server does not speak RESP3: rlock needs Redis 6 or later";
      case errc::resolve_failed:
        return "cannot resolve the Redis host name";
      case errc::connect_failed:
        return "cannot connect to Redis";
      case errc::tls_handshake_failed:
        return "TLS handshake failed";
      case errc::tls_certificate_untrusted:
        return "the server's TLS certificate is not trusted";
      case errc::tls_hostname_mismatch:
        return "the server's TLS certificate does not match its name";
      case errc::tls_client_rejected:
        return "the server refused this client's TLS certificate";
      case errc::handshake_closed:
        return "the server closed the connection during the handshake";
      case errc::command_not_permitted:
        return "the ACL user may not run a command rlock needs";
      case errc::key_not_permitted:
        return "the ACL user may not access the lock's keys";
      case errc::replicas_not_synced:
        return "fewer replicas than required acknowledged the write";
      case errc::not_master:
        return "the node Sentinel named is not a master";
      case errc::master_not_found:
        return "no sentinel could name the master";
      case errc::not_a_cluster:
        return "no seed node answered with a cluster slot map";
      case errc::cluster_down:
        return "the cluster does not serve the key's slot";
      case errc::too_many_redirects:
        return "too many cluster redirects";
      case errc::reentry_refused:
        return "the owner already holds the lock, which refuses this acquisition";
      case errc::upgrade_refused:
        return "the owner holds the read lock, so its write acquisition would wait for itself";
      case errc::quorum_unavailable:
        return "too few of a quorum lock's nodes could answer for a majority";
    }
    return "unknown rlock error";
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const category instance;
  return instance;
}

void throw_error(errc e, const std::string& what) { detail::failure(e, what).raise(); }

namespace detail {

void failure::raise() const {
  if (text().empty()) throw boost::system::system_error(code);
  throw boost::system::system_error(code, std::string(text()));
}

std::exception_ptr exception_of(const failure& f) {
  if (!f) return nullptr;
  if (f.text().empty()) return std::make_exception_ptr(boost::system::system_error(f.code));
  return std::make_exception_ptr(boost::system::system_error(f.code, std::string(f.text())));
}

failure failure_of_exception(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const boost::system::system_error& ex) {
    return {ex.code(), ex.what()};
  } catch (const std::system_error& ex) {
    return {ex.code(), ex.what()};
  } catch (const std::bad_alloc&) {
    return {boost::asio::error::no_memory, "out of memory"};
  } catch (const std::exception& ex) {
    return {std::make_error_code(std::errc::state_not_recoverable), ex.what()};
  } catch (...) {
    return {std::make_error_code(std::errc::state_not_recoverable), "unknown exception"};
  }
}

failure cancelled(std::string_view why) { return {boost::asio::error::operation_aborted, why}; }

}  // namespace detail

}  // namespace rlock
