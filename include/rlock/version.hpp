#pragma once

#include "rlock/export.hpp"

/// @file
/// The headers' version (macros) and the linked library's (rlock::library_version()).

// rlock's version, written here and nowhere else: CMakeLists.txt reads it from this file.
/// The major version (while it is 0, the API may change between minor versions).
#define RLOCK_VERSION_MAJOR 0
/// The minor version.
#define RLOCK_VERSION_MINOR 1
/// The patch version.
#define RLOCK_VERSION_PATCH 0

/// MAJOR * 10000 + MINOR * 100 + PATCH, for `#if RLOCK_VERSION >= 100`.
#define RLOCK_VERSION \
  (RLOCK_VERSION_MAJOR * 10000 + RLOCK_VERSION_MINOR * 100 + RLOCK_VERSION_PATCH)

/// @cond
#define RLOCK_VERSION_STRINGIZE_(x) #x
#define RLOCK_VERSION_STRINGIZE(x) RLOCK_VERSION_STRINGIZE_(x)
/// @endcond
/// "MAJOR.MINOR.PATCH".
#define RLOCK_VERSION_STRING                   \
  RLOCK_VERSION_STRINGIZE(RLOCK_VERSION_MAJOR) \
  "." RLOCK_VERSION_STRINGIZE(RLOCK_VERSION_MINOR) "." RLOCK_VERSION_STRINGIZE(RLOCK_VERSION_PATCH)

namespace rlock {

/// The version of the rlock library linked in ("MAJOR.MINOR.PATCH"), which may differ from the
/// headers' RLOCK_VERSION_STRING when a shared library was replaced.
RLOCK_EXPORT const char* library_version() noexcept;

}  // namespace rlock
