#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Turns the raw benchmark runs under docs/bench/ into the SVG charts docs/benchmarks.md shows.

usage: scripts/bench-charts.py [--bench DIR] [--out DIR]
  --bench  the raw runs (default: docs/bench beside this script's repository)
  --out    where the SVGs go (default: docs/img)

Each chart names the run it comes from (RUNS below); a percentile CDF is drawn through the
quantiles the run recorded (min, p50, p90, p99, max), not through every sample: the raw files
keep quantiles only. Needs python3-matplotlib (scripts/install-deps.sh installs it). The output
is deterministic (fixed SVG ids, no date), so a rerun on the same data changes no file.
"""
import argparse
import json
import pathlib
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# The runs each chart reads (directories under --bench).
RUNS = {
    "timer": "raw-2026-11-24-0703-netty-quiet",
    "idle": "raw-2026-11-23-million",
    "jobs": "raw-2026-11-24-0925-jobs-final",
    "fleet": "raw-2026-11-24-2130-fleet",
}

# Chart file name -> the function that draws it.
CHARTS = {}


def chart(name):
    def register(fn):
        CHARTS[name] = fn
        return fn

    return register


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def style():
    plt.rcParams.update({
        "svg.hashsalt": "wheeltimer",  # stable element ids
        "svg.fonttype": "none",  # text stays text: smaller files
        "font.size": 9,
        "axes.grid": True,
        "grid.alpha": 0.3,
    })


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)


@chart("timer-lateness-cdf.svg")
def timer_lateness(bench, run):
    """Expiry lateness, wheel-bench (ours) against Netty's HashedWheelTimer, ticks 1 and 10 ms."""
    rows = []
    for f in sorted((bench / run).glob("*.jsonl")):
        rows += read_jsonl(f)
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    for ax, tick in zip(axes, (1, 10)):
        for impl, label in (("wheel", "wheeltimer"), ("netty", "Netty 4.1")):
            q = {}
            for name, p in (("min", 0.0), ("p50", 0.5), ("p99", 0.99), ("max", 1.0)):
                vals = [r["value"] for r in rows if r.get("impl") == impl and
                        r.get("tick_ms") == tick and r.get("metric") == f"lateness_{name}_us"]
                if vals:
                    q[p] = statistics.median(vals) / 1000.0
            if len(q) < 2:
                raise SystemExit(f"{run}: no lateness quantiles for {impl}, tick {tick} ms")
            ps = sorted(q)
            ax.plot([q[p] for p in ps], ps, marker="o", drawstyle="default", label=label)
        ax.set_title(f"tick {tick} ms")
        ax.set_xscale("log")
        ax.set_xlabel("lateness, ms (log)")
        ax.set_ylabel("fraction of timeouts expired")
        ax.legend(loc="lower right")
    fig.suptitle(f"Timer expiry lateness CDF, 10,000 timeouts (min, p50, p99, max; medians of 3 rounds)\n{run}")
    return fig


@chart("idle-close-million.svg")
def idle_close(bench, run):
    """Idle-close lateness over 900,000 idle connections of the million, from wheel-load's report."""
    text = (bench / run / "report.txt").read_text(encoding="utf-8")
    line = next((l for l in text.splitlines() if l.strip().startswith("idle")), None)
    m = line and re.search(r"lateness p50 ([\d.]+) p90 ([\d.]+) p99 ([\d.]+) max ([\d.]+) ms "
                           r"\(n=(\d+)\)", line)
    if not m:
        raise SystemExit(f"{run}/report.txt: no idle lateness line")
    p50, p90, p99, mx, n = (float(g) for g in m.groups())
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ps = [0.5, 0.9, 0.99, 1.0]
    vals = [p50, p90, p99, mx]
    ax.plot(vals, ps, marker="o", color="tab:blue")
    for v, p in zip(vals, ps):
        ax.annotate(f"{'max' if p == 1.0 else f'p{round(p * 100)}'} {v:g} ms", (v, p),
                    textcoords="offset points", xytext=(6, -10))
    ax.axvline(1000, color="tab:red", linestyle="--", linewidth=1)
    ax.text(1000, 0.52, " tolerance 1 s", color="tab:red")
    ax.set_xscale("log")
    ax.set_xlim(1, 2000)
    ax.set_ylim(0.45, 1.03)
    ax.set_xlabel("close after the 300 s idle timeout, ms late (log)")
    ax.set_ylabel("fraction of idle connections closed")
    ax.set_title(f"Idle-close lateness, {int(n):,} idle of 1,000,000 connections\n{run}")
    return fig


def color_of(server):
    if server.startswith("wheel-jobs"):
        return "tab:blue"
    return "tab:red" if server.startswith("redis") else "tab:gray"


@chart("jobs-vs-beanstalkd.svg")
def jobs_compare(bench, run):
    """Puts per second and delivery lateness, wheel-jobs against beanstalkd and Redis."""
    rows = read_jsonl(bench / run / "compare.jsonl")
    puts = {}
    for r in rows:
        if r.get("metric") == "puts_per_s":
            puts.setdefault(r["server"], []).append(r["value"])
    if not puts:
        raise SystemExit(f"{run}/compare.jsonl: no puts_per_s")
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.6), gridspec_kw={"width_ratios": [3, 2]})
    names = list(puts)
    vals = [statistics.median(puts[s]) for s in names]
    colors = [color_of(s) for s in names]
    a.barh(names, vals, color=colors)
    a.set_xscale("log")
    a.invert_yaxis()
    a.set_xlabel("acknowledged puts per second (log)")
    for y, v in enumerate(vals):
        a.text(v, y, f" {v:,.0f}", va="center", fontsize=8)
    a.set_title("Throughput")
    lat = {}
    for r in rows:
        m = re.fullmatch(r"lateness_(p50|p99|max)_ms", r.get("metric", ""))
        if m:
            lat.setdefault(r["server"], {})[m.group(1)] = r["value"]
    servers = list(lat)
    width = 0.8 / max(len(servers), 1)
    for i, s in enumerate(servers):
        xs = [k + i * width for k in range(3)]
        b.bar(xs, [lat[s].get(q, 0) for q in ("p50", "p99", "max")], width, label=s,
              color=color_of(s))
    b.set_xticks([k + width * (len(servers) - 1) / 2 for k in range(3)], ["p50", "p99", "max"])
    b.set_ylabel("delivery lateness, ms")
    b.set_title("Lateness, 1,000,000 pending")
    b.legend(fontsize=7)
    fig.suptitle(f"wheel-jobs against beanstalkd and Redis\n{run}")
    return fig


@chart("jobs-vs-bullmq.svg")
def fleet_compare(bench, run):
    """wheel-jobs on Redis against BullMQ and the plain ZADD + Lua pattern."""
    peers = (("bullmq", "BullMQ"), ("plain", "plain ZADD + Lua"), ("wheel-jobs", "wheel-jobs"))
    data = {}
    for peer, _ in peers:
        files = sorted((bench / run).glob(f"{peer}-*.jsonl"))
        if not files:
            raise SystemExit(f"{run}: no {peer}-*.jsonl")
        for r in read_jsonl(files[0]):
            data.setdefault(peer, {}).setdefault(r["metric"], []).append(r["value"])
    med = {p: {k: statistics.median(v) for k, v in d.items() if all(
        isinstance(x, (int, float)) for x in v)} for p, d in data.items()}
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4))
    groups = (("added_per_s", "added"), ("delivered_per_s", "delivered"),
              ("e2e_delivered_per_s", "end to end"))
    width = 0.8 / len(peers)
    colors = {"bullmq": "tab:gray", "plain": "tab:olive", "wheel-jobs": "tab:blue"}
    for i, (peer, label) in enumerate(peers):
        xs = [k + i * width for k in range(len(groups))]
        a.bar(xs, [med[peer].get(m, 0) for m, _ in groups], width, label=label,
              color=colors[peer])
        b.bar([k + i * width for k in range(3)],
              [med[peer].get(f"e2e_lateness_{q}_ms", 0) for q in ("p50", "p99", "max")], width,
              label=label, color=colors[peer])
    a.set_xticks([k + width for k in range(len(groups))], [g for _, g in groups])
    a.set_ylabel("jobs per second")
    a.set_title("Throughput (10^5 jobs)")
    a.legend(fontsize=7)
    b.set_xticks([k + width for k in range(3)], ["p50", "p99", "max"])
    b.set_ylabel("delivery lateness, ms")
    b.set_title("Lateness, end to end")
    b.legend(fontsize=7)
    fig.suptitle(f"wheel-jobs on Redis against BullMQ and plain Redis\n{run}")
    return fig


def main(argv):
    root = pathlib.Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", type=pathlib.Path, default=root / "docs" / "bench")
    ap.add_argument("--out", type=pathlib.Path, default=root / "docs" / "img")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    style()
    runs = {"timer-lateness-cdf.svg": "timer", "idle-close-million.svg": "idle",
            "jobs-vs-beanstalkd.svg": "jobs", "jobs-vs-bullmq.svg": "fleet"}
    for name, draw in CHARTS.items():
        save(draw(args.bench, RUNS[runs[name]]), args.out / name)
        print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
