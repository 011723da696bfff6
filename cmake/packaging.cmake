# Debian packages, built by CPack from the ci preset's tree (scripts/package), one per install
# component (cmake/install-rules.cmake), named as Debian names them:
#   librlock<soversion>  the shared library (the runtime package carries the SONAME);
#   librlock-dev         headers, the link-time name, the CMake package and rlock.pc;
#   rlockctl             the operators' tool (statically linked to rlock: it uses internals).
# Each carries its copyright and changelog.Debian.gz; rlockctl its manual page (help2man).
if(NOT rlock_shared)
  # A static build packages no runtime: the Debian packages need BUILD_SHARED_LIBS=ON.
  return()
endif()

set(rlock_deb_release 1)
set(rlock_deb_version ${PROJECT_VERSION}-${rlock_deb_release})
set(rlock_deb_maintainer "rlock developers <rlock-maintainers@users.noreply.github.com>")
set(rlock_runtime_package librlock${rlock_soversion})
string(TIMESTAMP rlock_deb_date "%a, %d %b %Y %H:%M:%S +0000" UTC)

# /usr/share/doc/<package>/{copyright,changelog.Debian.gz} for each package.
file(READ ${PROJECT_SOURCE_DIR}/LICENSE rlock_license)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/LICENSE)
string(REGEX REPLACE "\n$" "" rlock_license "${rlock_license}")
# DEP-5: a license's text is indented by one space, an empty line is " .".
string(REPLACE "\n\n" "\n.\n" rlock_license "${rlock_license}")
string(REPLACE "\n" "\n " rlock_license_text " ${rlock_license}")
set(rlock_deb_doc ${PROJECT_BINARY_DIR}/debian)
configure_file(cmake/debian/copyright.in ${rlock_deb_doc}/copyright @ONLY)
configure_file(cmake/debian/changelog.in ${rlock_deb_doc}/changelog.Debian @ONLY)
find_program(RLOCK_GZIP gzip REQUIRED)
execute_process(COMMAND ${RLOCK_GZIP} -9nf ${rlock_deb_doc}/changelog.Debian
                COMMAND_ERROR_IS_FATAL ANY)

set(rlock_deb_packages runtime ${rlock_runtime_package} dev librlock-dev)
if(RLOCK_BUILD_TOOLS)
  list(APPEND rlock_deb_packages rlockctl rlockctl)
endif()
set(rlock_components)
while(rlock_deb_packages)
  list(POP_FRONT rlock_deb_packages component package)
  list(APPEND rlock_components ${component})
  string(TOUPPER ${component} upper)
  set(CPACK_DEBIAN_${upper}_PACKAGE_NAME ${package})
  install(FILES ${rlock_deb_doc}/copyright ${rlock_deb_doc}/changelog.Debian.gz
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} COMPONENT ${component}
          EXCLUDE_FROM_ALL)
endwhile()

# rlockctl(1), from its --help (help2man), where Debian's help2man is installed.
find_program(RLOCK_HELP2MAN help2man)
if(RLOCK_BUILD_TOOLS AND RLOCK_HELP2MAN)
  set(rlock_man ${PROJECT_BINARY_DIR}/man/rlockctl.1)
  add_custom_command(OUTPUT ${rlock_man}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
    COMMAND ${RLOCK_HELP2MAN} --no-info --no-discard-stderr
            --name "inspect and handle rlock and Redisson locks in Redis"
            --output ${rlock_man} $<TARGET_FILE:rlockctl>
    COMMAND ${RLOCK_GZIP} -9nf ${rlock_man}
    DEPENDS rlockctl
    COMMENT "rlockctl(1) from rlockctl --help")
  # Part of the default build, so that cpack run by hand finds it too.
  add_custom_target(rlockctl_man ALL DEPENDS ${rlock_man}.gz)
  install(FILES ${rlock_man}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT rlockctl
          EXCLUDE_FROM_ALL)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME rlock)
set(CPACK_PACKAGE_VENDOR "The rlock developers")
set(CPACK_PACKAGE_CONTACT "${rlock_deb_maintainer}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# Each package's description starts with its own synopsis (CPACK_DEBIAN_<COMPONENT>_DESCRIPTION);
# CPack prepends the summary to them unless it is CPack's default, so it is left at that.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_NAME} built using CMake")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${rlock_components})
set(CPACK_COMPONENTS_GROUPING IGNORE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${rlock_deb_release})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${rlock_deb_maintainer}")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# A shlibs file, so that packages built against the library depend on it, and the ldconfig
# trigger Debian asks of a shared library (CPack adds an ldconfig call to postinst and postrm
# besides: lintian's one warning on this package, maintscript-calls-ldconfig).
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
file(WRITE ${rlock_deb_doc}/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${rlock_deb_doc}/triggers)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
  "Redisson-compatible distributed locks for C++20 coroutines (library)
rlock is a C++20 library for distributed locks on Redis, built on Boost.Asio
coroutines. It follows Redisson's lock model and speaks its wire format, so
Java and C++ services share locks: reentrant, fenced, fair, read-write and
spin locks, semaphores, count-down latches and multi-locks, with a lease
watchdog, pub/sub wake-ups, Sentinel, Redis Cluster and TLS.

This package contains the shared library.")

set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# Boost 1.81: Debian 12's libboost-dev is 1.74, too old, so 1.81's package is named first.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
  "${rlock_runtime_package} (= ${rlock_deb_version}), libboost1.81-dev | libboost-dev (>= 1.81), libfmt-dev, libssl-dev")
set(CPACK_DEBIAN_DEV_DESCRIPTION
  "Redisson-compatible distributed locks for C++20 coroutines (development files)
rlock is a C++20 library for distributed locks on Redis, built on Boost.Asio
coroutines, compatible with Redisson's locks.

This package contains the headers, the CMake package (find_package(rlock))
and the pkg-config file (rlock.pc).")

set(CPACK_DEBIAN_RLOCKCTL_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_RLOCKCTL_DESCRIPTION
  "command-line tool for rlock and Redisson locks in Redis
rlockctl shows who holds a lock of any kind (rlock's or Redisson's), lists
held locks without blocking the server, holds a lock from a shell, releases
one by force, watches a lock's events live and measures lock latency.")

include(CPack)
