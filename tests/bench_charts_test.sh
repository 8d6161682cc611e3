#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest slice of scripts/bench-charts.py: runs it on the committed raw runs (docs/bench) into a
# temporary directory and checks that every chart docs/img holds was written again, as SVG.
# Usage: tests/bench_charts_test.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: bench_charts_test.sh SOURCE_DIR}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
/usr/bin/python3 "$src/scripts/bench-charts.py" --bench "$src/docs/bench" --out "$out"
status=0
for chart in timer-lateness-cdf idle-close-million jobs-vs-beanstalkd jobs-vs-bullmq; do
  f="$out/$chart.svg"
  if [[ ! -s $f ]] || ! grep -q '<svg' "$f"; then
    echo "FAIL: $chart.svg not written" >&2
    status=1
  elif [[ ! -f $src/docs/img/$chart.svg ]]; then
    echo "FAIL: docs/img/$chart.svg is not committed" >&2
    status=1
  fi
done
exit $status
