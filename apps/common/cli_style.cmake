# SPDX-License-Identifier: Apache-2.0
# wheel_cli_style: the shared command-line style (cli_style.h). Included by each program that
# uses it; the guard makes the target once whichever program comes first.
if(NOT TARGET wheel_cli_style)
  find_package(CLI11 CONFIG REQUIRED)
  add_library(wheel_cli_style STATIC ${CMAKE_CURRENT_LIST_DIR}/cli_style.cc)
  target_include_directories(wheel_cli_style PUBLIC ${CMAKE_CURRENT_LIST_DIR})
  target_compile_features(wheel_cli_style PUBLIC cxx_std_20)
  target_link_libraries(wheel_cli_style PUBLIC CLI11::CLI11)
endif()
