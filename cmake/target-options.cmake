# Options for rlock's own targets only, never for its consumers or the projects that
# add_subdirectory it: warnings, sanitizers, and Asio without its deprecated API.

option(RLOCK_WARNINGS_AS_ERRORS "Treat compiler warnings as errors" OFF)
# RLOCK_SANITIZE: a comma-separated list for -fsanitize=, e.g. "address,undefined" or "thread".
set(RLOCK_SANITIZE "" CACHE STRING "Sanitizers to build rlock and its tests with")

function(rlock_set_target_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion)
  if(RLOCK_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  target_compile_definitions(${target} PRIVATE BOOST_ASIO_NO_DEPRECATED)
  if(RLOCK_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=${RLOCK_SANITIZE} -fno-omit-frame-pointer
                                             -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=${RLOCK_SANITIZE})
    if(RLOCK_SANITIZE MATCHES "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      # g++ 12 warns that TSan does not model std::atomic_thread_fence, which Asio's fenced
      # blocks use; TSan still sees the atomics around them.
      target_compile_options(${target} PRIVATE -Wno-tsan)
    endif()
  endif()
endfunction()
