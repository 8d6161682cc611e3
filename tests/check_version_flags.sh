#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest: every program answers --version with "<name> <version>" on stdout and exit status 0,
# the version being the one project(VERSION) sets.
# Usage: check_version_flags.sh VERSION PROGRAM...
set -euo pipefail
version=$1
shift
for program in "$@"; do
  name=$(basename "$program")
  out=$("$program" --version)
  [[ $out == "$name $version" ]] || { echo "$name --version printed '$out'" >&2; exit 1; }
  echo "$out"
done
