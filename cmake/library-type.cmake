# Static or shared, decided once: rlock_shared (ON/OFF) is defined whether rlock is the
# top-level project or vendored (add_subdirectory, FetchContent), and it is the only name the
# rest of the build reads. A parent that never set BUILD_SHARED_LIBS gets CMake's own default,
# a static library; one that set it (as a cache entry or a plain variable) is followed.
# Reading BUILD_SHARED_LIBS only through DEFINED keeps `--warn-uninitialized` quiet.
if(PROJECT_IS_TOP_LEVEL)
  option(BUILD_SHARED_LIBS "Build rlock as a shared library" OFF)
endif()
if(DEFINED BUILD_SHARED_LIBS AND BUILD_SHARED_LIBS)
  set(rlock_shared ON)
  set(rlock_library_type SHARED)
else()
  set(rlock_shared OFF)
  set(rlock_library_type STATIC)
endif()
