include(CMakePackageConfigHelpers)

install(DIRECTORY include/rlock TYPE INCLUDE)
install(TARGETS rlock EXPORT rlock-targets)
install(EXPORT rlock-targets NAMESPACE rlock:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rlock)

configure_package_config_file(cmake/rlock-config.cmake.in
  ${PROJECT_BINARY_DIR}/rlock-config.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rlock)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rlock-config-version.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rlock-config.cmake ${PROJECT_BINARY_DIR}/rlock-config-version.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rlock)
