# SPDX-License-Identifier: Apache-2.0
# Sourced by the build scripts: compile through ccache when it is installed and no launcher was
# chosen. A fresh machine starts with an empty cache, so this pays off from the second run on
# (docs/testing.md has both times). Paths are hashed relative to the checkout and the build
# directory is not hashed, so a second clone elsewhere hits the same cache entries.
if [[ -z ${CMAKE_CXX_COMPILER_LAUNCHER:-} ]] && command -v ccache >/dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
fi
# CMake reads the environment variable only when it creates a build directory, so a directory
# made without it (by hand, or before ccache was installed) would keep compiling without it.
# The scripts pass this at every configure instead: the launcher is set, or repaired, each time.
wheel_launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-}")
