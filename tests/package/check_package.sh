#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest: installs wheeltimer from BUILD_DIR into a scratch prefix, then builds and runs the
# consumers (wheel::timer and wheel::net) with find_package(wheeltimer), and again with
# add_subdirectory(SOURCE_DIR).
# Usage: check_package.sh SOURCE_DIR BUILD_DIR SCRATCH_DIR
set -euo pipefail
src=$1 build=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
cmake -S "$src/tests/package" -B "$scratch/find" -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/find" -j 2 >/dev/null
"$scratch/find/consumer"
"$scratch/find/net_consumer"
cmake -S "$src/tests/package" -B "$scratch/subdir" -DWHEEL_SOURCE_DIR="$src" >/dev/null
cmake --build "$scratch/subdir" -j 2 >/dev/null
"$scratch/subdir/consumer"
"$scratch/subdir/net_consumer"
