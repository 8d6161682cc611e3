#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest: every program answers a mistyped option with exit status 2 and one line naming the
# stray words in the order given and the option meant:
#   <name>: unexpected argument(s): --versoin now; did you mean --version?
# Usage: check_typo_suggestions.sh PROGRAM...
set -uo pipefail
for program in "$@"; do
  name=$(basename "$program")
  err=$("$program" --versoin now 2>&1 >/dev/null)
  rc=$?
  want="$name: unexpected argument(s): --versoin now; did you mean --version?"
  [[ $rc == 2 ]] || { echo "$name --versoin now: exit status $rc, not 2" >&2; exit 1; }
  [[ ${err%%$'\n'*} == "$want" ]] || { echo "$name printed '$err', not '$want'" >&2; exit 1; }
  echo "${err%%$'\n'*}"
done
