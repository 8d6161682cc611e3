#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tables from TimerBench / wheel-bench JSON lines (medians over rounds).

usage: bench_table.py compare NETTY_ROUND.jsonl... -- OURS_ROUND.jsonl...
       bench_table.py scaling SCALING.jsonl... [--dat FILE]
compare: one row per (metric, tick_ms, n): Netty median, then the hashed wheel ("wheel") and the
hierarchical layout ("hier") with their ratios to Netty, the goals and whether they are met, and
the heap / libuv medians of the same runs.
scaling: ns per operation and the worker's CPU per tick at each pending count for every impl;
--dat also writes a gnuplot table.
"""
import json
import statistics
import sys

# (metric, tick_ms or None for any) -> (goal text, check(ours, netty, tick_ms) -> bool)
GOALS = {
    ("schedule_ops_per_s", None): (">= 3x Netty", lambda o, n, t: o >= 3 * n),
    ("cancel_ops_per_s", None): (">= 2x Netty", lambda o, n, t: o >= 2 * n),
    ("bytes_per_pending_timeout_incl_ref_array", None):
        ("wheel incl. handle <= Netty excl. refs", None),  # checked against the other row
    ("lateness_p99_us", 1): ("<= 0.6x Netty", lambda o, n, t: o <= 0.6 * n),
    ("lateness_max_us", None): ("<= Netty", lambda o, n, t: o <= n),
    ("idle_worker_cpu_ms_per_s", None): ("<= 0.1x Netty", lambda o, n, t: o <= 0.1 * n),
    ("cancel_drain_ms", None): ("<= 1 tick", lambda o, n, t: o <= t),
    ("long_delay_worker_cpu_ms_per_s", None): ("<= 0.5x Netty", lambda o, n, t: o <= 0.5 * n),
}

# The hierarchical layout's own goals: (metric, tick) -> (text, check(hier, netty, wheel, tick)),
# the check skipped when a value it needs is missing.
HIER_GOALS = {
    ("long_delay_worker_cpu_ms_per_s", None):
        ("<= 0.05x Netty", lambda h, n, w, t: h <= 0.05 * n),
    ("schedule_ops_per_s", None): (">= 0.8x wheel", lambda h, n, w, t: h >= 0.8 * w),
    ("cancel_ops_per_s", None): (">= 0.8x wheel", lambda h, n, w, t: h >= 0.8 * w),
    ("upper_lateness_p99_us", 1): ("<= 1 tick + 1 ms wake-up",
                                   lambda h, n, w, t: h <= t * 1000 + 1000),
}


def load(paths):
    groups, order = {}, []
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                rec = json.loads(line)
                key = (rec["impl"], rec["metric"], rec.get("tick_ms"), rec.get("n"))
                if key not in groups:
                    groups[key] = []
                    order.append(key)
                if rec["value"] is not None:
                    groups[key].append(rec)
    return groups, order


def median(groups, key):
    vals = [r["value"] for r in groups.get(key, [])]
    return statistics.median(vals) if vals else None


def fmt(v):
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def goal_of(table, metric, tick):
    return table.get((metric, tick)) or table.get((metric, None))


def wheel_goal(metric, tick, n, wv, nv, netty):
    g = goal_of(GOALS, metric, tick)
    if not g or wv is None or nv is None:
        return "", ""
    if g[1] is not None:
        return g[0], "yes" if g[1](wv, nv, tick) else "NO"
    excl = median(netty, ("netty", "bytes_per_pending_timeout", tick, n))
    return f"{g[0]} ({fmt(excl)})", "yes" if excl is not None and wv <= excl else "NO"


def hier_goal(metric, tick, hv, nv, wv):
    g = goal_of(HIER_GOALS, metric, tick)
    if not g or hv is None:
        return "", ""
    try:
        return g[0], "yes" if g[1](hv, nv, wv, tick) else "NO"
    except TypeError:  # a value the check needs (Netty's or the wheel's) is missing
        return g[0], ""


def compare(netty_paths, our_paths):
    netty, netty_order = load(netty_paths)
    ours, our_order = load(our_paths)
    # Rows: every Netty metric, then ours that Netty's harness did not produce.
    keys = [k[1:] for k in netty_order]
    for k in our_order:
        if k[1:] not in keys:
            keys.append(k[1:])
    print("| metric | tick_ms | n | Netty | wheel | wheel / Netty | wheel goal | met | "
          "hier | hier / Netty | hier goal | met | heap | libuv |")
    print("|---|---:|---:|---:|---:|---:|---|---|---:|---:|---|---|---:|---:|")
    for (metric, tick, n) in keys:
        nv = median(netty, ("netty", metric, tick, n))
        wv, hv, pv, lv = (median(ours, (i, metric, tick, n))
                          for i in ("wheel", "hier", "heap", "libuv"))
        wr = wv / nv if (wv is not None and nv) else None
        hr = hv / nv if (hv is not None and nv) else None
        wg, wm = wheel_goal(metric, tick, n, wv, nv, netty)
        hg, hm = hier_goal(metric, tick, hv, nv, wv)
        print(f"| {metric} | {tick} | {fmt(n)} | {fmt(nv)} | {fmt(wv)} | "
              f"{'-' if wr is None else f'{wr:.2f}'} | {wg} | {wm} | {fmt(hv)} | "
              f"{'-' if hr is None else f'{hr:.2f}'} | {hg} | {hm} | {fmt(pv)} | {fmt(lv)} |")
    print(f"\nNetty rounds: {len(netty_paths)}, wheel-bench rounds: {len(our_paths)}; "
          "medians per (metric, tick_ms, n).")


def scaling(paths, dat):
    groups, order = load(paths)
    impls = [i for i in ("netty", "wheel", "hier", "heap", "libuv")
             if any(k[0] == i for k in order)]
    counts = sorted({k[3] for k in order if k[1].startswith("scaling_")})
    cols = [(m, i) for m in ("schedule", "cancel") for i in impls]
    cost_impls = [i for i in impls if any(k[0] == i and k[1] == "scaling_worker_us_per_tick"
                                          for k in order)]
    cols += [("worker_us_per_tick", i) for i in cost_impls]

    def metric_of(m):
        return "scaling_worker_us_per_tick" if m == "worker_us_per_tick" else f"scaling_{m}_ns_per_op"

    def label(m, i):
        return f"worker us/tick {i}" if m == "worker_us_per_tick" else f"{m} ns/op {i}"

    print("| pending N | " + " | ".join(label(m, i) for m, i in cols) + " |")
    print("|---:|" + "---:|" * len(cols))
    rows = []
    for n in counts:
        vals = []
        for m, i in cols:
            key = next((k for k in order if k[0] == i and k[1] == metric_of(m) and k[3] == n), None)
            vals.append(median(groups, key) if key else None)
        rows.append((n, vals))
        print(f"| {n:,} | " + " | ".join(fmt(v) for v in vals) + " |")
    tick = next((k[2] for k in order if k[1] == "scaling_worker_us_per_tick"), None)
    if tick is not None:
        print(f"\nworker us/tick: worker CPU per tick at tick {tick} ms with N timeouts of "
              "1 min .. 24 h pending (none expiring).")
    if dat:
        with open(dat, "w") as f:
            f.write("N " + " ".join(f"{m}_{i}" for m, i in cols) + "\n")
            for n, vals in rows:
                f.write(f"{n} " + " ".join("NaN" if v is None else f"{v:.3f}" for v in vals) + "\n")


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    if argv[0] == "compare" and "--" in argv:
        cut = argv.index("--")
        compare(argv[1:cut], argv[cut + 1:])
    elif argv[0] == "scaling":
        dat = None
        if "--dat" in argv:
            i = argv.index("--dat")
            dat = argv[i + 1]
            argv = argv[:i] + argv[i + 2:]
        scaling(argv[1:], dat)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
