# RLOCK_SANITIZE: a comma-separated list for -fsanitize=, e.g. "address,undefined" or "thread".
set(RLOCK_SANITIZE "" CACHE STRING "Sanitizers to build rlock and its tests with")

if(RLOCK_SANITIZE)
  add_compile_options(-fsanitize=${RLOCK_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${RLOCK_SANITIZE})
endif()
