# SPDX-License-Identifier: Apache-2.0
# `cpack -G DEB` in a build directory: one Debian package with everything `cmake --install`
# installs (programs and manual pages, libraries, headers, CMake and pkg-config files) under
# /usr. Its dependencies use Debian's package names: the shared libraries the programs link
# (libuv1, libspdlog1.10, ...) found by dpkg-shlibdeps, and the -dev packages the installed
# headers, wheeltimerConfig.cmake and the .pc files refer to.
include_guard(GLOBAL)
set(CPACK_PACKAGE_NAME wheeltimer)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_CONTACT "wheeltimer maintainers <wheeltimer@localhost>")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # wheeltimer_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_LICENSE "Apache-2.0")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(wheel_deb_depends libspdlog-dev)
if(WHEEL_BUILD_NET)
  list(APPEND wheel_deb_depends libuv1-dev libhiredis-dev)  # libhiredis-dev: wheel::jobs_redis
endif()
list(JOIN wheel_deb_depends ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS pkg-config)
include(CPack)
