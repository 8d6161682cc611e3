# SPDX-License-Identifier: Apache-2.0
# wheel_library(<target> <name> [OUTPUT_NAME <file name>] [BUILD_INCLUDES <dir>...])
#
# What every library of the project sets up after its add_library(<target> ...): the alias
# wheel::<name> (consumers link the same name whether the library is built in the tree or
# installed), C++20, include/ as its public headers (in the build tree and under the install
# prefix) and src/ as private ones. With OUTPUT_NAME it is one of the installed libraries:
# exported as wheel::<name>, built as lib<file name>, position-independent so that a shared
# library may link it. BUILD_INCLUDES are more public header directories of the build tree
# (generated headers), searched right after include/.
include_guard(GLOBAL)
include(GNUInstallDirs)

function(wheel_library target name)
  cmake_parse_arguments(ARG "" "OUTPUT_NAME" "BUILD_INCLUDES" ${ARGN})
  set(build_includes "")
  foreach(dir IN LISTS ARG_BUILD_INCLUDES)
    list(APPEND build_includes "$<BUILD_INTERFACE:${dir}>")
  endforeach()
  add_library(wheel::${name} ALIAS ${target})
  target_compile_features(${target} PUBLIC cxx_std_20)
  # CMAKE_CURRENT_SOURCE_DIR is the calling directory's (timer/, net/, ...).
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
           ${build_includes}
           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  if(ARG_OUTPUT_NAME)
    set_target_properties(${target} PROPERTIES EXPORT_NAME ${name}
                          OUTPUT_NAME ${ARG_OUTPUT_NAME} POSITION_INDEPENDENT_CODE ON)
  endif()
endfunction()
