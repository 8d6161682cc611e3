#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages wheeltimer builds with, skipping those already present.
# Usage: scripts/install-deps.sh [extra-package ...]
set -euo pipefail
packages=(g++ cmake make pkg-config libuv1-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev
          libcli11-dev nlohmann-json3-dev beanstalkd nodejs ccache libhiredis-dev redis-server
          redis-sentinel "$@")
# The beanstalkd client scenario (tests/clients) runs an npm client under node against Debian's
# beanstalkd. Debian packages npm apart from nodejs; NodeSource's nodejs brings its own npm.
# ccache: the build scripts compile through it when it is there (scripts/ccache-env.sh).
# libhiredis-dev: wheel::jobs_redis (wheel-jobs --store); redis-server: its tests start one;
# redis-sentinel: the Sentinel tests start three beside a primary and its replica.
command -v npm >/dev/null || packages+=(npm)
# Installing and packaging: manual pages from --help (help2man), the .deb's dependencies
# (dpkg-shlibdeps, in dpkg-dev). The build goes on without them.
packages+=(help2man dpkg-dev)
# The build links with lld when it is there (WHEEL_LINKER in CMakeLists.txt): GNU ld took twice
# its CPU (docs/testing.md).
packages+=(lld)
# Lint: luac5.1 -p checks the Lua scripts (Redis runs Lua 5.1) in scripts/lint.sh.
packages+=(lua5.1)
# Docs: scripts/bench-charts.py draws docs/img/*.svg from docs/bench with matplotlib; a ctest
# test runs it, so CI needs it too.
packages+=(python3-matplotlib)
# The web console's browser test (tests/console) drives Debian's chromium headless; npm ci of its
# lockfile (playwright-core) runs when the test does.
packages+=(chromium)
# Bench only: Boost.Asio for wheel-idle-bench's asio implementation (the build goes on without).
packages+=(libboost-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
