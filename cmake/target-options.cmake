# Options for rlock's own targets only, never for its consumers or the projects that
# add_subdirectory it: warnings, sanitizers, and Asio without its deprecated API.

option(RLOCK_WARNINGS_AS_ERRORS "Treat compiler warnings as errors" OFF)
# RLOCK_SANITIZE: a comma-separated list for -fsanitize=, e.g. "address,undefined" or "thread".
set(RLOCK_SANITIZE "" CACHE STRING "Sanitizers to build rlock and its tests with")

# For the many links of rlock's own tests, tools and benchmarks (the dev, CI and sanitizer
# presets turn both on): a faster linker, and debug info left in .dwo files beside the objects
# instead of copied through every link. Consumers' targets never get either.
set(RLOCK_LINKER "" CACHE STRING "Linker for rlock's own targets (-fuse-ld=NAME: mold, lld, gold); empty: the compiler's default")
option(RLOCK_SPLIT_DWARF "Debug info of rlock's own targets in .dwo files (-gsplit-dwarf)" OFF)
if(RLOCK_LINKER)
  find_program(rlock_linker_program NAMES ${RLOCK_LINKER} ld.${RLOCK_LINKER})
  if(NOT rlock_linker_program)
    message(WARNING "RLOCK_LINKER=${RLOCK_LINKER}: no such linker here; using the compiler's default")
    set(RLOCK_LINKER "")
  endif()
endif()

function(rlock_set_target_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion)
  if(RLOCK_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # In a unity build (RLOCK_UNITY_BUILD) every file is included by a generated one, so g++
    # takes a file's own anonymous-namespace types in its coroutine frames for a header's, and
    # warns as if a header's type with no linkage were used there.
    target_compile_options(${target} PRIVATE
      $<$<BOOL:$<TARGET_PROPERTY:UNITY_BUILD>>:-Wno-subobject-linkage>)
    # GCC bug 109224: g++ 12 takes an Asio coroutine frame's operator delete for a mismatch with
    # its operator new, depending on what it inlines (it appeared in a test when config grew,
    # and in the library's Sentinel files when they were compiled as one unity group).
    target_compile_options(${target} PRIVATE -Wno-mismatched-new-delete)
  endif()
  target_compile_definitions(${target} PRIVATE BOOST_ASIO_NO_DEPRECATED)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # Precompiled headers without their inputs' timestamps: ccache serves a clang compile that
    # uses one only then (ninja, not clang, decides when the header is made again).
    target_compile_options(${target} PRIVATE "SHELL:-Xclang -fno-pch-timestamp")
  endif()
  if(RLOCK_LINKER)
    target_link_options(${target} PRIVATE -fuse-ld=${RLOCK_LINKER})
  endif()
  if(RLOCK_SPLIT_DWARF)
    # Only where there is debug info to split: a build type without -g stays as it was.
    target_compile_options(${target} PRIVATE $<$<CONFIG:Debug,RelWithDebInfo>:-gsplit-dwarf>)
  endif()
  if(RLOCK_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=${RLOCK_SANITIZE} -fno-omit-frame-pointer
                                             -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=${RLOCK_SANITIZE})
    if(RLOCK_SANITIZE MATCHES "undefined" AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
      # clang's `function` check (a call through a function pointer of the wrong type) cannot
      # be emitted for coroutines ("Cannot represent a difference across sections"); g++ has
      # no such check, so UBSan checks the same under either compiler.
      target_compile_options(${target} PRIVATE -fno-sanitize=function)
      target_link_options(${target} PRIVATE -fno-sanitize=function)
    endif()
    if(RLOCK_SANITIZE MATCHES "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      # g++ 12 warns that TSan does not model std::atomic_thread_fence, which Asio's fenced
      # blocks use; TSan still sees the atomics around them.
      target_compile_options(${target} PRIVATE -Wno-tsan)
    endif()
  endif()
endfunction()

# rlock_unity_batches(<target>): a target of several files (tests, tools) compiled in unity
# batches of eight (RLOCK_UNITY_BUILD).
function(rlock_unity_batches target)
  get_target_property(sources ${target} SOURCES)
  list(LENGTH sources count)
  if(RLOCK_UNITY_BUILD AND count GREATER 1)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()
