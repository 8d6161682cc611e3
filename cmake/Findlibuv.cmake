# SPDX-License-Identifier: Apache-2.0
# Findlibuv: provides the imported target libuv::uv (the name libuv's own CMake package uses).
# libuv's CMake package is used when installed; otherwise pkg-config's `libuv` (Debian 12's
# libuv1-dev ships only the .pc file). Installed beside wheeltimerConfig.cmake, so that
# find_package(wheeltimer) can find_dependency(libuv) on such systems too.
if(TARGET libuv::uv)
  set(libuv_FOUND TRUE)
  return()
endif()
find_package(libuv CONFIG QUIET)
if(TARGET libuv::uv)
  set(libuv_FOUND TRUE)
  return()
endif()
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_LIBUV QUIET libuv)
endif()
find_path(LIBUV_INCLUDE_DIR uv.h HINTS ${PC_LIBUV_INCLUDE_DIRS})
find_library(LIBUV_LIBRARY NAMES uv libuv HINTS ${PC_LIBUV_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(libuv REQUIRED_VARS LIBUV_LIBRARY LIBUV_INCLUDE_DIR
                                  VERSION_VAR PC_LIBUV_VERSION)
if(libuv_FOUND AND NOT TARGET libuv::uv)
  add_library(libuv::uv UNKNOWN IMPORTED)
  set_target_properties(libuv::uv PROPERTIES IMPORTED_LOCATION "${LIBUV_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${LIBUV_INCLUDE_DIR}")
endif()
mark_as_advanced(LIBUV_INCLUDE_DIR LIBUV_LIBRARY)
