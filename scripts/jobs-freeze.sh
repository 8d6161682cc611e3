#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# wheel-jobs --dir on a frozen disk (issue 36, item 6), as root: the log's directory is on an
# ext4 image mounted through a loop device (truncate + mkfs.ext4 + mount -o loop), and only that
# image is frozen (fsfreeze -f). While it is frozen a put waits, unanswered, and peek, stats and
# /metrics must each answer within BOUND_MS; /metrics shows the age of the oldest unwritten
# change. After the thaw the put is answered; then a kill -9 and a restart on the same
# directory must find every acknowledged job. A trap always thaws, stops the server and
# unmounts.
# Usage: scripts/jobs-freeze.sh [freeze-seconds]   (default 5; the ctest slice runs 2)
# Environment: BUILD (build/plain), BOUND_MS (2000), FSYNC (always; or never, or MS)
# Exit 77 (skipped) when not root or a tool is missing; 1 when a check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build/plain}
freeze_s=${1:-5}
bound_ms=${BOUND_MS:-2000}
fsync=${FSYNC:-always}
[[ $freeze_s =~ ^[0-9]+$ && $freeze_s -ge 1 && $freeze_s -le 600 ]] ||
  { echo "jobs-freeze: freeze-seconds is 1 to 600, got '$freeze_s'" >&2; exit 2; }
[[ $bound_ms =~ ^[0-9]+$ && $bound_ms -ge 1 ]] ||
  { echo "jobs-freeze: BOUND_MS is a whole number of milliseconds, got '$bound_ms'" >&2; exit 2; }
server=$build/apps/wheel-jobs/wheel-jobs
[[ -x $server ]] || { echo "jobs-freeze: build wheel-jobs in $build first" >&2; exit 2; }
if [[ $(id -u) != 0 ]]; then echo "jobs-freeze: skipped: needs root (loop mount, fsfreeze)"; exit 77; fi
for tool in truncate mkfs.ext4 mount umount fsfreeze python3; do
  command -v "$tool" >/dev/null || { echo "jobs-freeze: skipped: no $tool"; exit 77; }
done

work=$(mktemp -d /tmp/jobs-freeze.XXXXXX)
mnt=$work/mnt
pid=
mounted=
cleanup() {
  # Thaw first: a server or umount blocked on the frozen image would hang here otherwise.
  [[ -n $mounted ]] && fsfreeze -u "$mnt" 2>/dev/null || true
  [[ -n $pid ]] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  [[ -n $mounted ]] && umount "$mnt" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
truncate -s 64M "$work/disk.img"
mkfs.ext4 -q -F "$work/disk.img"
mkdir "$mnt"
mount -o loop "$work/disk.img" "$mnt" || { echo "jobs-freeze: skipped: no loop mount here"; exit 77; }
mounted=1

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start() {
  port=$(free_port)
  metrics=$(free_port)
  "$server" --dir "$mnt/log" --fsync "$fsync" --host 127.0.0.1 --port "$port" \
    --metrics-port "$metrics" >"$work/server.out" 2>>"$work/server.err" &
  pid=$!
  for _ in $(seq 100); do
    grep -q listening "$work/server.out" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "jobs-freeze: wheel-jobs did not start:" >&2
  cat "$work/server.err" >&2
  exit 1
}

start
python3 - "$port" "$metrics" "$mnt" "$freeze_s" "$bound_ms" <<'EOF'
import socket, subprocess, sys, time, urllib.request
port, metrics, mnt, freeze_s, bound_ms = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
bound = bound_ms / 1000.0
failed = []

class Client:
    def __init__(self):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = b""
    def send(self, data): self.s.sendall(data)
    def line(self, timeout=30):
        self.s.settimeout(timeout)
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk: raise EOFError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode()
    def take(self, n, timeout=30):
        self.s.settimeout(timeout)
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk: raise EOFError("closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data
    def ask(self, data, timeout=30):
        self.send(data); return self.line(timeout)
    def silent(self):
        self.s.settimeout(0.2)
        try: return not self.buf and not self.s.recv(1, socket.MSG_PEEK)
        except socket.timeout: return True

def timed(f):
    t = time.monotonic(); r = f(); return r, time.monotonic() - t

def scrape():
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=30) as r:
        return r.read().decode()

def gauge(text, name):
    for l in text.splitlines():
        if l.startswith(name + " "): return float(l.split()[1])
    return None

c = Client(); p = Client()
r = c.ask(b"put 0 0 60 5\r\nfirst\r\n")
assert r.startswith("INSERTED "), r
first = int(r.split()[1])
subprocess.run(["fsfreeze", "-f", mnt], check=True)
frozen_at = time.monotonic()
p.send(b"put 0 0 60 6\r\nsecond\r\n")
worst = {"peek": 0.0, "stats": 0.0, "metrics": 0.0}
age = 0.0
try:
    while time.monotonic() - frozen_at < freeze_s:
        r, t = timed(lambda: c.ask(b"peek %d\r\n" % first, timeout=bound * 3))
        if r != f"FOUND {first} 5": failed.append(f"peek while frozen: {r!r}")
        c.take(7)
        worst["peek"] = max(worst["peek"], t)
        r, t = timed(lambda: c.ask(b"stats\r\n", timeout=bound * 3))
        c.take(int(r.split()[1]) + 2)
        worst["stats"] = max(worst["stats"], t)
        text, t = timed(scrape)
        worst["metrics"] = max(worst["metrics"], t)
        age = gauge(text, "wheel_jobs_log_oldest_unwritten_seconds") or 0.0
        time.sleep(0.2)
    if not p.silent(): failed.append("the put was answered while the disk was frozen")
except (socket.timeout, OSError, EOFError) as e:
    failed.append(f"no answer within {bound * 3:.1f} s while frozen ({e})")
finally:
    subprocess.run(["fsfreeze", "-u", mnt], check=True)
for what, t in worst.items():
    print(f"jobs-freeze: slowest {what} while frozen: {t * 1000:.1f} ms (bound {bound_ms} ms)")
    if t > bound: failed.append(f"{what} took {t * 1000:.0f} ms while frozen")
print(f"jobs-freeze: wheel_jobs_log_oldest_unwritten_seconds at the end of the freeze: {age:.2f}")
if age < min(1.0, freeze_s / 2): failed.append(f"the age metric showed {age} after a {freeze_s} s freeze")
r = p.line(timeout=30)
if not r.startswith("INSERTED "): failed.append(f"put after the thaw: {r!r}")
else: open(mnt + "/../second.id", "w").write(r.split()[1])
open(mnt + "/../first.id", "w").write(str(first))
for f in failed: print("jobs-freeze: FAILED:", f)
sys.exit(1 if failed else 0)
EOF
# Nothing acknowledged is lost: kill -9, restart, both jobs are there.
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=
start
python3 - "$port" "$(cat "$work/first.id")" "$(cat "$work/second.id")" <<'EOF'
import socket, sys
port, ids = int(sys.argv[1]), sys.argv[2:]
s = socket.create_connection(("127.0.0.1", port), timeout=30)
f = s.makefile("rb")
bad = 0
for i in ids:
    s.sendall(b"peek %s\r\n" % i.encode())
    line = f.readline().decode().strip()
    if not line.startswith("FOUND " + i + " "):
        print(f"jobs-freeze: FAILED: job {i} after kill -9 and restart: {line!r}"); bad = 1
    else:
        f.read(int(line.split()[2]) + 2)
print("jobs-freeze: after kill -9 and a restart: jobs", ", ".join(ids), "lost" if bad else "kept")
sys.exit(bad)
EOF
echo "jobs-freeze: passed"
