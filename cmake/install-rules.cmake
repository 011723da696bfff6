# `cmake --install`: headers (with the generated export header), the library, the CMake package
# (rlockConfig.cmake, rlockConfigVersion.cmake, rlockTargets.cmake) and rlock.pc.
include(CMakePackageConfigHelpers)

install(DIRECTORY include/rlock TYPE INCLUDE)
install(FILES ${PROJECT_BINARY_DIR}/include/rlock/export.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rlock)
install(TARGETS rlock EXPORT rlockTargets)
if(RLOCK_BUILD_TOOLS)
  install(TARGETS rlockctl)
endif()
install(EXPORT rlockTargets NAMESPACE rlock:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rlock)

configure_package_config_file(cmake/rlockConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rlockConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rlock)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rlockConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rlockConfig.cmake ${PROJECT_BINARY_DIR}/rlockConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rlock)

# pkg-config: the prefix is found from the .pc file's own place, so the package can be
# installed anywhere (cmake --install --prefix) or moved. A static librlock.a needs fmt at link
# time: then it is a plain requirement, not a private one.
file(RELATIVE_PATH rlock_pc_prefix ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
if(rlock_shared)
  set(rlock_pc_requires "")
  set(rlock_pc_requires_private "fmt, libssl, libcrypto")
  set(rlock_pc_cflags "")
else()
  set(rlock_pc_requires "fmt, libssl, libcrypto")
  set(rlock_pc_requires_private "")
  set(rlock_pc_cflags " -DRLOCK_STATIC_DEFINE")
endif()
configure_file(cmake/rlock.pc.in ${PROJECT_BINARY_DIR}/rlock.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rlock.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
