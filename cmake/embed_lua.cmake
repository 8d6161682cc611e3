# SPDX-License-Identifier: Apache-2.0
# Run at build time by wheel_embed_lua() (cmake/WheelEmbedLua.cmake):
#   cmake -DOUT=<header> -DNAMESPACE=<ns> -DFILES=<a.lua|b.lua|...> -P embed_lua.cmake
# Writes <header> with each file's text as a raw string literal, byte for byte, so that what
# Redis hashes (SCRIPT LOAD's sha1) is the file's text. A file holding the raw string's
# delimiter is refused rather than cut short.
cmake_minimum_required(VERSION 3.25)
string(REPLACE "|" ";" files "${FILES}")
set(delimiter "lua_text")
set(constants "")
set(table "")
foreach(path IN LISTS files)
  get_filename_component(file ${path} NAME)
  get_filename_component(stem ${path} NAME_WE)
  file(READ ${path} text)
  string(FIND "${text}" ")${delimiter}\"" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${path} holds ')${delimiter}\"', the end of the raw string it goes in")
  endif()
  # put -> kPut, reserve_job -> kReserveJob
  set(name "k")
  string(REGEX MATCHALL "[A-Za-z0-9]+" words "${stem}")
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
set(content "// Generated at build time by cmake/embed_lua.cmake from the .lua files named below: edit
// those, not this.
#pragma once

#include <string_view>

namespace ${NAMESPACE} {

${constants}struct LuaFile {
  std::string_view name;  // the file's name, e.g. \"put.lua\"
  std::string_view text;
};
// Every file, in the order wheel_embed_lua() was given them.
inline constexpr LuaFile kFiles[] = {
${table}};

}  // namespace ${NAMESPACE}
")
# Rewritten only when it changes, so that its includers are not rebuilt for nothing.
file(WRITE ${OUT}.tmp "${content}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
