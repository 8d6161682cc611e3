# SPDX-License-Identifier: Apache-2.0
# Sourced by the test scripts that drive Node clients (tests/clients, tests/console).
# npm_ci_once DIR WORK: installs DIR's package-lock.json into WORK/node_modules once per
# lockfile; a lock keeps two tests that run at the same time from installing over each other.
# Exits 1 naming what failed.
npm_ci_once() {
  local here=$1 work=$2
  mkdir -p "$work"
  (
    flock -w 600 9 || { echo "timed out waiting for another npm ci" >&2; exit 1; }
    if ! cmp -s "$here/package-lock.json" "$work/package-lock.json" || [[ ! -d $work/node_modules ]]; then
      cp "$here/package.json" "$here/package-lock.json" "$work/"
      echo "npm ci in $work" >&2
      (cd "$work" && timeout 600 npm ci --no-audit --no-fund --ignore-scripts >&2) ||
        { rm -f "$work/package-lock.json"; echo "npm ci failed" >&2; exit 1; }
    fi
  ) 9>"$work/.npm-ci.lock" || exit 1
}
