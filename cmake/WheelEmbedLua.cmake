# SPDX-License-Identifier: Apache-2.0
# wheel_embed_lua(<target> HEADER <name.h> NAMESPACE <c++ namespace> FILES <file.lua>...)
#
# Lua scripts live as .lua files (read, linted with luac5.1 -p and diffed as Lua) and reach the
# C++ code as text generated at build time: <name.h>, in a build directory that becomes a
# private include directory of <target>, holds one constant per file, its bytes exactly
# (put.lua -> kPut, reserve_job.lua -> kReserveJob, std::string_view), and kFiles, every file's
# name and text in the order given. Editing a .lua regenerates the header; nothing in C++ holds
# a hand-made copy of a script. The generator is cmake/embed_lua.cmake.
include_guard(GLOBAL)

function(wheel_embed_lua target)
  cmake_parse_arguments(ARG "" "HEADER;NAMESPACE" "FILES" ${ARGN})
  if(NOT ARG_HEADER OR NOT ARG_NAMESPACE OR NOT ARG_FILES)
    message(FATAL_ERROR "wheel_embed_lua(${target}): HEADER, NAMESPACE and FILES are required")
  endif()
  set(files "")
  foreach(f IN LISTS ARG_FILES)
    get_filename_component(path ${f} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    list(APPEND files ${path})
  endforeach()
  set(script ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/embed_lua.cmake)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/${target}_lua)
  set(out ${dir}/${ARG_HEADER})
  string(JOIN "|" joined ${files})  # one -D argument; embed_lua.cmake splits it again
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DNAMESPACE=${ARG_NAMESPACE} -DFILES=${joined}
            -P ${script}
    DEPENDS ${files} ${script}
    COMMENT "Embedding ${ARG_HEADER} (${target})" VERBATIM)
  target_sources(${target} PRIVATE ${out})
  target_include_directories(${target} PRIVATE ${dir})
endfunction()
