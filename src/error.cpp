#include "rlock/error.hpp"

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
    }
    return "unknown rlock error";
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const category instance;
  return instance;
}

void throw_error(errc e, const std::string& what) {
  throw std::system_error(make_error_code(e), what);
}

}  // namespace rlock
