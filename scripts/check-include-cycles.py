#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# No two files include each other: treats X.h and X.cc as one unit X and fails when the units'
# "..." includes (resolved by file name within the given folders) form a cycle, e.g.
# connection.cc -> server_core.h and server_core.h -> tcp_server.h while tcp_server.cc ->
# server_core.h. Usage: check-include-cycles.py [folder ...] (default: every C++ folder).
# It also checks the layer order of the libraries (LAYERS below, drawn in docs/architecture.md):
# a file of one layer may include the public headers of the layers it is allowed only, so that
# dependencies point one way (jobs/log imports nothing else from jobs, the model no protocol, ...).
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

# The layers: folder -> the layers its files may include (besides their own).
LAYERS = {
    "common": set(),
    "timer": {"common"},
    "net": {"common", "timer"},
    "redis": {"common", "timer", "net"},
    "jobs/log": {"common"},
    "jobs/model": {"common", "timer"},
    "jobs/beanstalk": {"common", "timer", "jobs/model"},
    "jobs/durable": {"common", "timer", "jobs/model", "jobs/log"},
    "jobs/server": {"common", "timer", "net", "jobs/log", "jobs/model", "jobs/beanstalk",
                    "jobs/durable"},
    "jobs/fleet": {"common", "timer", "net", "redis", "jobs/log", "jobs/model",
                   "jobs/beanstalk", "jobs/durable", "jobs/server"},
    "server": {"common", "timer", "net"},
    "jobs/console": {"common", "timer", "net", "redis", "server", "jobs/log", "jobs/model",
                     "jobs/beanstalk", "jobs/durable", "jobs/server", "jobs/fleet"},
}
# The public header of a layer -> its layer: where git has it, under <layer>/include/.
header_layer = {}
all_files = subprocess.run(["git", "-C", root, "ls-files", "--", *LAYERS], check=True,
                           capture_output=True, text=True).stdout.split()
for f in all_files:
    for layer in LAYERS:
        prefix = layer + "/include/"
        if f.startswith(prefix):
            header_layer[f[len(prefix):]] = layer
wrong = []
for f in all_files:
    own = next((layer for layer in sorted(LAYERS, key=len, reverse=True)
                if f.startswith(layer + "/")), None)
    if own is None or not f.endswith((".h", ".cc")):
        continue
    text = open(os.path.join(root, f), encoding="utf-8").read()
    for name in include.findall(text):
        layer = header_layer.get(name)
        if layer is not None and layer != own and layer not in LAYERS[own]:
            wrong.append(f"{f} includes {name} ({layer}): {own} may include only "
                         f"{', '.join(sorted(LAYERS[own])) or 'nothing of the project'}")
for w in wrong:
    print("layer order: " + w, file=sys.stderr)
print(f"layer order: {len(wrong)} includes against it in {len(LAYERS)} layers", file=sys.stderr)
sys.exit(1 if cycles or wrong else 0)
