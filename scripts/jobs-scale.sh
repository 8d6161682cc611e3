#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 19's scale run (not in CI; minutes and ~10 GB of RAM): 10^7 pending jobs with 100-byte
# bodies in one wheel-jobs process, and in beanstalkd at the same count, both durable with a
# 50 ms sync interval: RSS per job, log bytes, restart to serving after kill -9 (goal: <= 10 s),
# then log bytes after 90 % are deleted. The pending suite of `wheel-jobs-load compare`
# (wheel::load's jobs_compare.h), one round, no lateness run.
# Writes OUT/compare.jsonl and OUT/table.md like scripts/compare-jobs.sh.
#
# Usage: scripts/jobs-scale.sh [extra `wheel-jobs-load compare` options, e.g. --pending 3000000]
# Env:   BUILD (build/plain), OUT (docs/bench/raw-YYYY-MM-DD-HHMM-jobs-scale), WORK (temporary)
set -euo pipefail
cd "$(dirname "$0")/.."
export OUT=${OUT:-docs/bench/raw-$(date -u +%Y-%m-%d-%H%M)-jobs-scale}
exec scripts/compare-jobs.sh --no-puts --no-lateness --rounds 1 --pending 10000000 "$@"
