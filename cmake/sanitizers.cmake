# RLOCK_SANITIZE: a comma-separated list for -fsanitize=, e.g. "address,undefined" or "thread".
set(RLOCK_SANITIZE "" CACHE STRING "Sanitizers to build rlock and its tests with")

if(RLOCK_SANITIZE)
  add_compile_options(-fsanitize=${RLOCK_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${RLOCK_SANITIZE})
  if(RLOCK_SANITIZE MATCHES "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # g++ 12 warns that TSan does not model std::atomic_thread_fence, which Asio's fenced
    # blocks use; TSan still sees the atomics around them.
    add_compile_options(-Wno-tsan)
  endif()
endif()
