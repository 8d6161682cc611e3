# SPDX-License-Identifier: Apache-2.0
# Run at build time by wheel_embed_files() and wheel_embed_lua() (cmake/WheelEmbedFiles.cmake,
# cmake/WheelEmbedLua.cmake):
#   cmake -DOUT=<header> -DNAMESPACE=<ns> -DFILES=<a.js|b.css|...> [-DNAMES=stem] -P embed_files.cmake
# Writes <header> with each file's text as a raw string literal, byte for byte (so what Redis
# hashes, SCRIPT LOAD's sha1, is a .lua file's text). A file holding the raw string's delimiter
# is refused rather than cut short. Constants are named after the whole file name, or with
# NAMES=stem after the name without its extension (put.lua -> kPut).
cmake_minimum_required(VERSION 3.25)
string(REPLACE "|" ";" files "${FILES}")
set(delimiter "file_text")
set(constants "")
set(table "")
foreach(path IN LISTS files)
  get_filename_component(file ${path} NAME)
  file(READ ${path} text)
  string(FIND "${text}" ")${delimiter}\"" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${path} holds ')${delimiter}\"', the end of the raw string it goes in")
  endif()
  set(base ${file})
  if(NAMES STREQUAL "stem")
    get_filename_component(base ${path} NAME_WE)
  endif()
  set(name "k")  # console.js -> kConsoleJs; with NAMES=stem, reserve_job.lua -> kReserveJob
  string(REGEX MATCHALL "[A-Za-z0-9]+" words "${base}")
  foreach(word IN LISTS words)
    string(SUBSTRING "${word}" 0 1 head)
    string(SUBSTRING "${word}" 1 -1 tail)
    string(TOUPPER "${head}" head)
    string(APPEND name "${head}${tail}")
  endforeach()
  string(APPEND constants
    "// ${file}\ninline constexpr std::string_view ${name} = R\"${delimiter}(${text})${delimiter}\";\n\n")
  string(APPEND table "    {\"${file}\", ${name}},\n")
endforeach()
set(content "// Generated at build time by cmake/embed_files.cmake from the files named below: edit
// those, not this.
#pragma once

#include <string_view>

namespace ${NAMESPACE} {

${constants}struct EmbeddedFile {
  std::string_view name;  // the file's name, e.g. \"console.js\" or \"put.lua\"
  std::string_view text;
};
// Every file, in the order they were given.
inline constexpr EmbeddedFile kFiles[] = {
${table}};

}  // namespace ${NAMESPACE}
")
# Rewritten only when it changes, so that its includers are not rebuilt for nothing.
file(WRITE ${OUT}.tmp "${content}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
