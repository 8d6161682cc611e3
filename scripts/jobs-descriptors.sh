#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# wheel-jobs --dir out of descriptors at a segment rotation (issue 36, item 3): the server runs
# under prlimit --nofile=300 with small segments (--segment-size 65536); CLIENTS idle clients
# take every descriptor left, then one client puts 1 KiB jobs until the head has rotated a few
# times. Each put must answer INSERTED or OUT_OF_MEMORY (refused for now), never
# INTERNAL_ERROR; after the idle clients leave, puts work again without a restart; SIGTERM
# exits 0; a restart finds every acknowledged job.
# Usage: scripts/jobs-descriptors.sh [puts]   (default 300; the ctest slice runs 150)
# Environment: BUILD (build/plain), CLIENTS (320)
# Exit 77 (skipped) when prlimit or python3 is missing; 1 when a check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build/plain}
puts=${1:-300}
clients=${CLIENTS:-320}
[[ $puts =~ ^[0-9]+$ && $puts -ge 1 && $puts -le 100000 ]] ||
  { echo "jobs-descriptors: puts is 1 to 100000, got '$puts'" >&2; exit 2; }
[[ $clients =~ ^[0-9]+$ && $clients -ge 1 && $clients -le 10000 ]] ||
  { echo "jobs-descriptors: CLIENTS is 1 to 10000, got '$clients'" >&2; exit 2; }
server=$build/apps/wheel-jobs/wheel-jobs
[[ -x $server ]] || { echo "jobs-descriptors: build wheel-jobs in $build first" >&2; exit 2; }
for tool in prlimit python3; do
  command -v "$tool" >/dev/null || { echo "jobs-descriptors: skipped: no $tool"; exit 77; }
done

work=$(mktemp -d /tmp/jobs-descriptors.XXXXXX)
pid=
cleanup() {
  [[ -n $pid ]] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start() {
  : >"$work/server.out"
  prlimit --nofile=300 "$server" --dir "$work/log" --segment-size 65536 --host 127.0.0.1 \
    --port "$port" >"$work/server.out" 2>>"$work/server.err" &
  pid=$!
  for _ in $(seq 100); do
    grep -q listening "$work/server.out" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "jobs-descriptors: wheel-jobs did not start:" >&2
  cat "$work/server.err" >&2
  exit 1
}

start
python3 - "$port" "$puts" "$clients" "$work/acked" <<'EOF'
import socket, sys, time
port, puts, clients, acked_path = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def connect():
    return socket.create_connection(("127.0.0.1", port), timeout=30)
c = connect()
f = c.makefile("rb")
def ask(data):
    c.sendall(data)
    return f.readline().decode().strip()
body = b"x" * 1024
put = b"put 0 0 60 %d\r\n%s\r\n" % (len(body), body)
assert ask(put).startswith("INSERTED ")
idle = []
for _ in range(clients):
    try: idle.append(connect())
    except OSError: break
# Make sure the server took what it could: one round trip on the busy client.
ask(b"list-tube-used\r\n")
acked, refused, failed = [], 0, []
for _ in range(puts):
    r = ask(put)
    if r.startswith("INSERTED "): acked.append(r.split()[1])
    elif r == "OUT_OF_MEMORY": refused += 1
    else: failed.append(f"put while short of descriptors: {r!r}"); break
print(f"jobs-descriptors: {len(idle)} idle clients connected; {len(acked)} puts acknowledged, "
      f"{refused} refused for now while short of descriptors")
for s in idle: s.close()
deadline = time.monotonic() + 20
back = None
while time.monotonic() < deadline:
    r = ask(put)
    if r.startswith("INSERTED "):
        acked.append(r.split()[1]); back = time.monotonic(); break
    if r != "OUT_OF_MEMORY": failed.append(f"put after the clients left: {r!r}"); break
    time.sleep(0.05)
if back is None and not failed: failed.append("puts never came back after the clients left")
r = ask(b"delete %s\r\n" % acked[0].encode()) if acked else "DELETED"
if r != "DELETED": failed.append(f"delete after the clients left: {r!r}")
else: acked = acked[1:]
open(acked_path, "w").write(" ".join(acked))
for m in failed: print("jobs-descriptors: FAILED:", m)
sys.exit(1 if failed else 0)
EOF
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=
if ((status != 0)); then
  echo "jobs-descriptors: FAILED: wheel-jobs exited $status on SIGTERM" >&2
  tail -5 "$work/server.err" >&2
  exit 1
fi
echo "jobs-descriptors: SIGTERM: exit 0"
grep -m3 -i "descriptor" "$work/server.err" || true
start
python3 - "$port" "$work/acked" <<'EOF'
import socket, sys
port, ids = int(sys.argv[1]), open(sys.argv[2]).read().split()
s = socket.create_connection(("127.0.0.1", port), timeout=30)
f = s.makefile("rb")
lost = []
for i in ids:
    s.sendall(b"stats-job %s\r\n" % i.encode())
    line = f.readline().decode().strip()
    if not line.startswith("OK "): lost.append(i); continue
    f.read(int(line.split()[1]) + 2)
print(f"jobs-descriptors: after a restart: {len(ids) - len(lost)} of {len(ids)} acknowledged jobs kept")
sys.exit(1 if lost else 0)
EOF
echo "jobs-descriptors: passed"
