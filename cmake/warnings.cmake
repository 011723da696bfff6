# Warnings apply to rlock's own targets only, never to consumers or dependencies.
option(RLOCK_WARNINGS_AS_ERRORS "Treat compiler warnings as errors" OFF)

function(rlock_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion)
  if(RLOCK_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
