#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest: every .pc file in the install in PREFIX (PackageTest.Install) is used the way a user
# without CMake would: `g++ consumer.cc $(pkg-config --cflags --libs MODULE)`, then the consumer
# runs. Each module reports VERSION; an installed .pc without a consumer below fails the test.
# Also builds the README's embedding snippet warning-free.
# Usage: check_pkgconfig.sh SOURCE_DIR PREFIX SCRATCH_DIR VERSION
set -euo pipefail
src=$1 prefix=$2 scratch=$3 expected=$4
rm -rf "$scratch" && mkdir -p "$scratch"
fail() { echo "check_pkgconfig: $*" >&2; exit 1; }
# The consumer of each module: a program that needs every library the module's Requires bring.
declare -A consumer=(
  [wheeltimer]=pkgconfig_consumer.cc  # the timer, prints version.h's version
  [wheelnet]=net_consumer.cc          # a TCP server on libuv answering one PING
  [wheeljobs]=pkgconfig_jobs_log_consumer.cc  # a job log written, reopened and read back
  [wheeljobsserver]=pkgconfig_jobs_consumer.cc  # the same, and a put served by the server
  [wheeljobsredis]=jobs_redis_consumer.cc  # endpoint URLs; hiredis client refused, no server
)
pcdir=$(dirname "$(find "$prefix" -name wheeltimer.pc -print -quit)")
[[ -d $pcdir ]] || fail "no wheeltimer.pc under $prefix"
export PKG_CONFIG_PATH=$pcdir
found=0
for pc in "$pcdir"/*.pc; do
  module=$(basename "$pc" .pc)
  [[ -n ${consumer[$module]:-} ]] || fail "$module.pc has no consumer in check_pkgconfig.sh"
  version=$(pkg-config --modversion "$module")
  [[ $version == "$expected" ]] || fail "pkg-config says $module $version, CMake $expected"
  # shellcheck disable=SC2046  # pkg-config's output is meant to be split into words
  g++ -std=c++20 -o "$scratch/$module-consumer" "$src/tests/package/${consumer[$module]}" \
      $(pkg-config --cflags --libs "$module") || fail "$module: the consumer does not build"
  out=$("$scratch/$module-consumer") || fail "$module: the consumer failed: $out"
  echo "$module $version: $out"
  found=$((found + 1))
done
[[ -f $pcdir/wheelnet.pc || ! -d $prefix/include/wheel/net ]] || fail "wheel::net without wheelnet.pc"
out=$("$scratch/wheeltimer-consumer")
[[ $out == *"wheeltimer $expected"* ]] || fail "version.h does not say $expected"
# The README's embedding snippet must build warning-free the way the README says to build it.
awk '/^## Embedding the timer/{on=1} on&&/^```cpp/{grab=1;next} grab&&/^```/{exit} grab' \
    "$src/README.md" >"$scratch/readme_snippet.cc"
[[ -s $scratch/readme_snippet.cc ]] || fail "no snippet under '## Embedding the timer'"
# shellcheck disable=SC2046
g++ -std=c++20 -Wall -Wextra -Wpedantic -Werror -o "$scratch/readme_snippet" \
    "$scratch/readme_snippet.cc" $(pkg-config --cflags --libs wheeltimer)
"$scratch/readme_snippet"
echo "check_pkgconfig: $found modules built and ran"
