# `cmake --install`: headers (with the generated export header), the library, the CMake package
# (rlockConfig.cmake, rlockConfigVersion.cmake, rlockTargets.cmake) and rlock.pc. Each file
# belongs to a component, which is a Debian package (cmake/packaging.cmake): runtime (the shared
# library), dev (headers, the link-time name, the packages for CMake and pkg-config, a static
# library) and rlockctl.
include(CMakePackageConfigHelpers)

install(DIRECTORY include/rlock TYPE INCLUDE COMPONENT dev)
install(FILES ${PROJECT_BINARY_DIR}/include/rlock/export.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rlock COMPONENT dev)
install(TARGETS rlock EXPORT rlockTargets
        LIBRARY COMPONENT runtime NAMELINK_COMPONENT dev
        ARCHIVE COMPONENT dev
        RUNTIME COMPONENT runtime)
if(RLOCK_BUILD_TOOLS)
  install(TARGETS rlockctl RUNTIME COMPONENT rlockctl)
endif()
install(EXPORT rlockTargets NAMESPACE rlock:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rlock
        COMPONENT dev)

configure_package_config_file(cmake/rlockConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rlockConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rlock)
# Compatible versions: those that share the SONAME (rlock_version_compatibility, CMakeLists.txt).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rlockConfigVersion.cmake
  COMPATIBILITY ${rlock_version_compatibility})
install(FILES ${PROJECT_BINARY_DIR}/rlockConfig.cmake ${PROJECT_BINARY_DIR}/rlockConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rlock COMPONENT dev)

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
install(FILES ${PROJECT_BINARY_DIR}/rlock.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT dev)
