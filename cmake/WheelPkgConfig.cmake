# SPDX-License-Identifier: Apache-2.0
# wheel_install_pkgconfig(NAME <name> DESCRIPTION <text> LIBS <flags...>
#                         [REQUIRES <modules...>] [PRIVATE_REQUIRES <modules...>])
#
# Writes <name>.pc (relocatable: the prefix is found from the file's own place) and installs it
# into ${CMAKE_INSTALL_LIBDIR}/pkgconfig. REQUIRES are modules the library's headers and callers
# need (always `Requires:`). PRIVATE_REQUIRES are modules only the library's own code uses: a
# static library needs them on the consumer's link line, so they are `Requires:` in a static
# build and `Requires.private:` in a shared one (BUILD_SHARED_LIBS).
include_guard(GLOBAL)
include(GNUInstallDirs)

function(wheel_install_pkgconfig)
  cmake_parse_arguments(ARG "" "NAME;DESCRIPTION" "LIBS;REQUIRES;PRIVATE_REQUIRES" ${ARGN})
  if(NOT ARG_NAME OR NOT ARG_LIBS)
    message(FATAL_ERROR "wheel_install_pkgconfig: NAME and LIBS are required")
  endif()
  set(requires ${ARG_REQUIRES})
  set(requires_private "")
  if(BUILD_SHARED_LIBS)
    set(requires_private ${ARG_PRIVATE_REQUIRES})
  else()
    list(APPEND requires ${ARG_PRIVATE_REQUIRES})
  endif()
  list(JOIN requires ", " WHEEL_PC_REQUIRES)
  list(JOIN requires_private ", " WHEEL_PC_REQUIRES_PRIVATE)
  list(JOIN ARG_LIBS " " WHEEL_PC_LIBS)
  set(WHEEL_PC_NAME ${ARG_NAME})
  set(WHEEL_PC_DESCRIPTION ${ARG_DESCRIPTION})
  # The prefix relative to the .pc file's directory ("../.." for lib/pkgconfig).
  file(RELATIVE_PATH WHEEL_PC_PREFIX_FROM_PCDIR "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" WHEEL_PC_PREFIX_FROM_PCDIR "${WHEEL_PC_PREFIX_FROM_PCDIR}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/wheel.pc.in
                 ${PROJECT_BINARY_DIR}/pkgconfig/${ARG_NAME}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${ARG_NAME}.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()
