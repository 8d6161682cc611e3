#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest: each binary was linked by LINKER (lld or mold), as WHEEL_LINKER chose: both write
# their name in the ELF .comment section, GNU ld writes nothing there.
# Usage: check_linker.sh LINKER BINARY...
set -euo pipefail
linker=$1
shift
case $linker in
  lld) mark="Linker: .*LLD" ;;
  mold) mark="mold " ;;
  *) echo "check_linker: no mark known for '$linker'" >&2; exit 2 ;;
esac
for binary in "$@"; do
  if ! readelf -p .comment "$binary" | grep -qE "$mark"; then
    echo "$(basename "$binary") was not linked by $linker (.comment has no '$mark')" >&2
    exit 1
  fi
  echo "$(basename "$binary"): $linker"
done
