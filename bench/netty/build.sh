#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the project's Netty harness (NettyTimerBench, NettyIdleServer) against Debian's
# libnetty-java jars into OUT (default: build/netty-bench at the repository root), and writes
# OUT/classpath.txt for run.sh. Installs libnetty-java and default-jdk-headless with apt-get
# when missing, skipping what is present. Diagnostics on stderr only.
# Usage: bench/netty/build.sh [OUT]
set -euo pipefail
exec 1>&2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-$ROOT/build/netty-bench}
# The Netty modules the harness uses (HashedWheelTimer lives in netty-common; the server needs
# the transport, buffers, codecs and IdleStateHandler).
JARS=(netty-common netty-buffer netty-transport netty-resolver netty-codec netty-handler)

missing=()
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
[[ -f /usr/share/java/netty-common.jar ]] || installed libnetty-java || missing+=(libnetty-java)
command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
if ((${#missing[@]})); then
  echo "netty build: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" \
    || { $sudo apt-get update -q && $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"; }
fi

cp=""
for j in "${JARS[@]}"; do
  [[ -f /usr/share/java/$j.jar ]] || { echo "netty build: /usr/share/java/$j.jar missing"; exit 1; }
  cp+="${cp:+:}/usr/share/java/$j.jar"
done
mkdir -p "$OUT/classes"
rm -f "$OUT"/classes/*.class
mapfile -t sources < <(find "$HERE" -maxdepth 1 -name '*.java' | sort)
javac -Xlint:all -Werror -d "$OUT/classes" -cp "$cp" "${sources[@]}"
echo "$OUT/classes:$cp" > "$OUT/classpath.txt"
echo "netty build: ${#sources[@]} sources -> $OUT/classes, libnetty-java" \
  "$(dpkg-query -W -f='${Version}' libnetty-java 2>/dev/null || echo '(version unknown)')," \
  "$(javac -version 2>&1)"
