# Refuse in-source builds: they litter the tree and break `git status`.
if(PROJECT_SOURCE_DIR STREQUAL PROJECT_BINARY_DIR)
  message(FATAL_ERROR "In-source builds are not supported; use a build directory (cmake -B build).")
endif()

include(GNUInstallDirs)
