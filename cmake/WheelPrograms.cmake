# SPDX-License-Identifier: Apache-2.0
# wheel_install_program(<target> <one-line description>)
#
# Installs the program into ${CMAKE_INSTALL_BINDIR} and its manual page into
# ${CMAKE_INSTALL_MANDIR}/man1, generated from the program's own --help and --version by
# Debian's help2man, so the page never drifts from the program. Without help2man the program
# is still installed, and configuring says once that the manual pages are skipped.
# The global property WHEEL_INSTALLED_PROGRAMS lists the programs installed this way.
include_guard(GLOBAL)
include(GNUInstallDirs)
find_program(WHEEL_HELP2MAN help2man)
if(NOT WHEEL_HELP2MAN)
  message(STATUS "help2man not found: programs are installed without manual pages "
                 "(scripts/install-deps.sh installs it)")
endif()

function(wheel_install_program target description)
  # The list the package tests check (every program installed, --version, its page).
  set_property(GLOBAL APPEND PROPERTY WHEEL_INSTALLED_PROGRAMS ${target})
  install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  if(BUILD_SHARED_LIBS)  # the installed program finds the installed shared libraries
    set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  endif()
  if(NOT WHEEL_HELP2MAN)
    return()
  endif()
  set(page ${PROJECT_BINARY_DIR}/man/${target}.1)
  # --no-discard-stderr: help2man otherwise drops a program whose --help writes to stderr.
  # Compressed as Debian's policy asks (man reads .gz pages everywhere).
  add_custom_command(OUTPUT ${page}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
    COMMAND ${WHEEL_HELP2MAN} --no-info --no-discard-stderr --section 1
            --name "${description}" --output ${page} $<TARGET_FILE:${target}>
    COMMAND gzip -9nf ${page}
    DEPENDS ${target}
    COMMENT "Generating the manual page of ${target} with help2man"
    VERBATIM)
  add_custom_target(${target}-man ALL DEPENDS ${page}.gz)
  install(FILES ${page}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endfunction()
