# SPDX-License-Identifier: Apache-2.0
# Sourced by the build scripts: compile through ccache when it is installed and no launcher was
# chosen. A fresh machine starts with an empty cache, so this pays off from the second run on
# (docs/testing.md has both times). Paths are hashed relative to the checkout and the build
# directory is not hashed, so a second clone elsewhere hits the same cache entries.
if [[ -z ${CMAKE_CXX_COMPILER_LAUNCHER:-} ]] && command -v ccache >/dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache  # read by CMake when a build directory is created
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
fi
