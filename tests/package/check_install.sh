#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest fixture and test: `cmake --install` of BUILD_DIR into PREFIX (the one install the other
# package tests reuse), then checks what a user finds there: every program in bin/ answering
# --version with VERSION, its manual page in share/man/man1 (when MANPAGES is "yes", i.e.
# help2man was found), the headers, libraries, CMake package and one .pc per library.
# Usage: check_install.sh BUILD_DIR PREFIX VERSION MANPAGES PROGRAM...
set -euo pipefail
build=$1 prefix=$2 version=$3 manpages=$4
shift 4
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
fail() { echo "check_install: $*" >&2; exit 1; }
for program in "$@"; do
  [[ -x $prefix/bin/$program ]] || fail "bin/$program is not installed"
  out=$("$prefix/bin/$program" --version)
  [[ $out == "$program $version" ]] || fail "installed $program --version printed '$out'"
  if [[ $manpages == yes ]]; then
    page=$prefix/share/man/man1/$program.1.gz
    [[ -s $page ]] || fail "no manual page $page"
    zgrep -q "^\.TH \"*${program^^}" "$page" || fail "$page is not a man page of $program"
    zgrep -q -- 'version' "$page" || fail "$page does not list the options"
  fi
  echo "installed: bin/$program ($out)"
done
for f in include/wheel/hashed_wheel_timer.h include/wheel/version.h \
         lib*/libwheeltimer.* lib*/cmake/wheeltimer/wheeltimerConfig.cmake \
         lib*/pkgconfig/wheeltimer.pc; do
  compgen -G "$prefix/$f" >/dev/null || fail "$f is not installed"
done
if [[ -d $prefix/include/wheel/net ]]; then  # built with wheel::net: wheel::jobs_redis too
  for f in include/wheel/jobs/fleet/redis_store.h include/wheel/redis/redis_client.h lib*/libwheeljobsfleet.* lib*/libwheelredis.* \
           lib*/pkgconfig/wheeljobsredis.pc; do
    compgen -G "$prefix/$f" >/dev/null || fail "$f is not installed"
  done
fi
