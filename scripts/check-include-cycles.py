#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# No two files include each other: treats X.h and X.cc as one unit X and fails when the units'
# "..." includes (resolved by file name within the given folders) form a cycle, e.g.
# connection.cc -> server_core.h and server_core.h -> tcp_server.h while tcp_server.cc ->
# server_core.h. Usage: check-include-cycles.py [folder ...] (default: every C++ folder).
import os
import re
import subprocess
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
folders = sys.argv[1:] or ["timer", "net", "jobs", "load", "apps", "examples"]
files = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                        "--exclude-standard", "--", *folders], check=True,
                       capture_output=True, text=True).stdout.split()
files = [f for f in files
         if f.endswith((".h", ".cc")) and os.path.exists(os.path.join(root, f))]


def unit(path):
    return os.path.splitext(os.path.basename(path))[0]


headers = {}  # include text suffix -> unit
for f in files:
    if f.endswith(".h"):
        headers.setdefault(os.path.basename(f), set()).add(unit(f))
edges = {}
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
for f in files:
    text = open(os.path.join(root, f), encoding="utf-8").read()
    for name in include.findall(text):
        for target in headers.get(os.path.basename(name), ()):
            if target != unit(f):
                edges.setdefault(unit(f), set()).add(target)

# Depth-first search for a cycle among the units.
state, stack, cycles = {}, [], []


def visit(u):
    state[u] = 1
    stack.append(u)
    for v in sorted(edges.get(u, ())):
        if state.get(v) == 1:
            cycles.append(stack[stack.index(v):] + [v])
        elif v not in state:
            visit(v)
    stack.pop()
    state[u] = 2


for u in sorted(edges):
    if u not in state:
        visit(u)
for c in cycles:
    print("include cycle: " + " -> ".join(c), file=sys.stderr)
print(f"include cycles: {len(cycles)} among {len(edges)} units", file=sys.stderr)
sys.exit(1 if cycles else 0)
