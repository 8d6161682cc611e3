#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest: builds and runs the consumers (wheel::timer, wheel::net, wheel::jobs and
# wheel::jobs_redis) with find_package(wheeltimer) against the install in PREFIX
# (PackageTest.Install), and again with add_subdirectory(SOURCE_DIR).
# Only the consumers' targets are built (the subdirectory build compiles the four libraries and
# nothing else), through ccache when it is installed.
# Usage: check_package.sh SOURCE_DIR PREFIX SCRATCH_DIR VERSION
set -euo pipefail
src=$1 prefix=$2 scratch=$3 version=$4
rm -rf "$scratch" && mkdir -p "$scratch"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$src/tests/package" -B "$scratch/find" "${launcher[@]}" \
      -DCMAKE_PREFIX_PATH="$prefix" -DWHEEL_VERSION="$version" >/dev/null
cmake --build "$scratch/find" -j 2 --target consumer net_consumer jobs_consumer \
      jobs_redis_consumer >/dev/null
"$scratch/find/consumer"
"$scratch/find/net_consumer"
"$scratch/find/jobs_consumer"
"$scratch/find/jobs_redis_consumer"
cmake -S "$src/tests/package" -B "$scratch/subdir" "${launcher[@]}" \
      -DWHEEL_SOURCE_DIR="$src" >/dev/null
cmake --build "$scratch/subdir" -j 2 --target consumer net_consumer jobs_consumer \
      jobs_redis_consumer >/dev/null
"$scratch/subdir/consumer"
"$scratch/subdir/net_consumer"
"$scratch/subdir/jobs_consumer"
"$scratch/subdir/jobs_redis_consumer"
