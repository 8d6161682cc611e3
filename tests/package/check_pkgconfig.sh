#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest: installs wheeltimer from BUILD_DIR into a scratch prefix, then compiles a consumer with
# nothing but g++ and `pkg-config wheeltimer`, runs it, and checks that pkg-config, version.h and
# the CMake project report the same version; then a wheel::jobs consumer with `pkg-config wheeljobs`.
# Usage: check_pkgconfig.sh SOURCE_DIR BUILD_DIR SCRATCH_DIR EXPECTED_VERSION
set -euo pipefail
src=$1 build=$2 scratch=$3 expected=$4
rm -rf "$scratch" && mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
pcdir=$(dirname "$(find "$scratch/prefix" -name wheeltimer.pc -print -quit)")
export PKG_CONFIG_PATH=$pcdir
version=$(pkg-config --modversion wheeltimer)
[[ $version == "$expected" ]] || { echo "pkg-config says $version, CMake $expected" >&2; exit 1; }
# shellcheck disable=SC2046  # pkg-config's output is meant to be split into words
g++ -std=c++20 -o "$scratch/consumer" "$src/tests/package/pkgconfig_consumer.cc" \
    $(pkg-config --cflags --libs wheeltimer)
out=$("$scratch/consumer")
echo "$out"
[[ $out == *"wheeltimer $expected"* ]] || { echo "version.h does not say $expected" >&2; exit 1; }
# The README's embedding snippet must build warning-free the way the README says to build it.
awk '/^## Embedding the timer/{on=1} on&&/^```cpp/{grab=1;next} grab&&/^```/{exit} grab' \
    "$src/README.md" >"$scratch/readme_snippet.cc"
[[ -s $scratch/readme_snippet.cc ]] || { echo "no snippet under '## Embedding the timer'" >&2; exit 1; }
# shellcheck disable=SC2046
g++ -std=c++20 -Wall -Wextra -Wpedantic -Werror -o "$scratch/readme_snippet" \
    "$scratch/readme_snippet.cc" $(pkg-config --cflags --libs wheeltimer)
"$scratch/readme_snippet"
# wheeljobs.pc: its Requires bring wheeltimer (and spdlog for a static build) along.
# shellcheck disable=SC2046
g++ -std=c++20 -Wall -Wextra -Wpedantic -Werror -o "$scratch/jobs_consumer" \
    "$src/tests/package/pkgconfig_jobs_consumer.cc" $(pkg-config --cflags --libs wheeljobs)
out=$("$scratch/jobs_consumer" "$scratch/jobs-log")
echo "$out"
[[ $out == *"body hello"* ]] || { echo "the wheeljobs consumer did not read its job back" >&2; exit 1; }
