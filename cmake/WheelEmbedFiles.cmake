# SPDX-License-Identifier: Apache-2.0
# wheel_embed_files(<target> HEADER <name.h> NAMESPACE <c++ namespace> FILES <file>...
#                   [NAMES stem])
#
# Text files (a web page, its script, style and a vendored library) reach the C++ code as
# constants generated at build time, as wheel_embed_lua() does for Lua: <name.h>, in a build
# directory that becomes a private include directory of <target>, holds one std::string_view
# per file, its bytes exactly, named after the whole file name (console.js -> kConsoleJs,
# uPlot.iife.min.js -> kUPlotIifeMinJs), and kFiles, every file's name and text in the order
# given (NAMES stem: named without the extension, put.lua -> kPut). Editing a file regenerates
# the header. The generator is cmake/embed_files.cmake.
include_guard(GLOBAL)

function(wheel_embed_files target)
  cmake_parse_arguments(ARG "" "HEADER;NAMESPACE;NAMES" "FILES" ${ARGN})
  if(NOT ARG_HEADER OR NOT ARG_NAMESPACE OR NOT ARG_FILES)
    message(FATAL_ERROR "wheel_embed_files(${target}): HEADER, NAMESPACE and FILES are required")
  endif()
  set(files "")
  foreach(f IN LISTS ARG_FILES)
    get_filename_component(path ${f} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    list(APPEND files ${path})
  endforeach()
  set(script ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/embed_files.cmake)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/${target}_files)
  set(out ${dir}/${ARG_HEADER})
  string(JOIN "|" joined ${files})  # one -D argument; embed_files.cmake splits it again
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DNAMESPACE=${ARG_NAMESPACE} -DFILES=${joined}
            -DNAMES=${ARG_NAMES} -P ${script}
    DEPENDS ${files} ${script}
    COMMENT "Embedding ${ARG_HEADER} (${target})" VERBATIM)
  target_sources(${target} PRIVATE ${out})
  target_include_directories(${target} PRIVATE ${dir})
endfunction()
