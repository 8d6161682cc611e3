#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest: no binary holds its own copy of fmt's formatter (fmt::detail::vformat_to<char>): every
# file that logs calls libfmt's, as cmake/fmt_extern_templates.h declares. A copy means the
# declaration stopped working (the -include dropped, fmt's signature changed) and every logging
# file compiles the formatter again: seconds of CPU per file (docs/testing.md).
# Usage: check_fmt_extern.sh BINARY...
set -euo pipefail
for binary in "$@"; do
  symbols=$(nm -C --defined-only "$binary")  # defined only: an undefined one is the call into libfmt
  if grep -qE ' [TtWw] void fmt::v[0-9]+::detail::vformat_to<char>\(' <<<"$symbols"; then
    echo "$(basename "$binary") holds its own fmt::detail::vformat_to<char> (see cmake/fmt_extern_templates.h)" >&2
    exit 1
  fi
  echo "$(basename "$binary"): calls libfmt's formatter"
done
