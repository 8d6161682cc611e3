# SPDX-License-Identifier: Apache-2.0
# wheel_embed_lua(<target> HEADER <name.h> NAMESPACE <c++ namespace> FILES <file.lua>...)
#
# Lua scripts live as .lua files (read, linted with luac5.1 -p and diffed as Lua) and reach the
# C++ code as text generated at build time: <name.h>, in a build directory that becomes a
# private include directory of <target>, holds one constant per file, its bytes exactly
# (put.lua -> kPut, reserve_job.lua -> kReserveJob, std::string_view), and kFiles, every file's
# name and text in the order given. Editing a .lua regenerates the header; nothing in C++ holds
# a hand-made copy of a script. It is wheel_embed_files() with the constants named by stem.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/WheelEmbedFiles.cmake)

function(wheel_embed_lua target)
  wheel_embed_files(${target} ${ARGN} NAMES stem)
endfunction()
