#include "rlock/version.hpp"

namespace rlock {

const char* library_version() noexcept { return RLOCK_VERSION_STRING; }

}  // namespace rlock
