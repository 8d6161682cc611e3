#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest: `cpack -G DEB` on BUILD_DIR, then the package is checked the way dpkg sees it: its
# version, its dependencies on Debian's package names, its contents (programs, manual pages,
# libraries, headers, CMake and pkg-config files); its files are unpacked into a scratch root
# (dpkg-deb -x, no root needed) where the programs answer --version and a consumer builds with
# the unpacked wheelnet.pc.
# Usage: check_deb.sh SOURCE_DIR BUILD_DIR SCRATCH_DIR VERSION MANPAGES PROGRAM...
set -euo pipefail
src=$1 build=$2 scratch=$3 version=$4 manpages=$5
shift 5
rm -rf "$scratch" && mkdir -p "$scratch"
fail() { echo "check_deb: $*" >&2; exit 1; }
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$scratch" >"$scratch/cpack.log" 2>&1 ||
  { cat "$scratch/cpack.log" >&2; fail "cpack -G DEB failed"; }
debs=("$scratch"/wheeltimer_*.deb)
[[ -f ${debs[0]} && ${#debs[@]} -eq 1 ]] || fail "expected one wheeltimer_*.deb, got: ${debs[*]}"
deb=${debs[0]}
echo "package: $(basename "$deb")"
[[ $(dpkg-deb -f "$deb" Version) == "$version" ]] || fail "package version is not $version"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
names=$(tr ',' '\n' <<<"$depends" | sed 's/^ *//; s/ .*//')
for dep in libc6 'libstdc++6' libuv1 'libspdlog1\..*' libuv1-dev libspdlog-dev \
           libhiredis-dev; do
  grep -qx "$dep" <<<"$names" || fail "Depends does not name $dep"
done
contents=$(dpkg-deb -c "$deb" | awk '{print $NF}')
expect=(./usr/include/wheel/version.h ./usr/include/wheel/net/tcp_server.h
        ./usr/lib/libwheeltimer ./usr/lib/libwheelnet
        ./usr/lib/cmake/wheeltimer/wheeltimerConfig.cmake
        ./usr/lib/pkgconfig/wheeltimer.pc ./usr/lib/pkgconfig/wheelnet.pc)
for program in "$@"; do
  expect+=("./usr/bin/$program")
  [[ $manpages == yes ]] && expect+=("./usr/share/man/man1/$program.1.gz")
done
for path in "${expect[@]}"; do
  grep -q "^$path" <<<"$contents" || fail "the package has no $path"
done
root=$scratch/root
dpkg-deb -x "$deb" "$root"
for program in "$@"; do
  out=$("$root/usr/bin/$program" --version)
  [[ $out == "$program $version" ]] || fail "unpacked $program --version printed '$out'"
  echo "unpacked: usr/bin/$program --version -> $out"
done
# shellcheck disable=SC2046  # pkg-config's output is meant to be split into words
g++ -std=c++20 -o "$scratch/net_consumer" "$src/tests/package/net_consumer.cc" \
    $(PKG_CONFIG_PATH=$root/usr/lib/pkgconfig pkg-config --cflags --libs wheelnet)
"$scratch/net_consumer"
