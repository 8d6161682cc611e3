#!/usr/bin/env python3
"""Tables from TimerBench / wheel-bench JSON lines (medians over rounds).

usage: bench_table.py compare NETTY_ROUND.jsonl... -- OURS_ROUND.jsonl...
       bench_table.py scaling SCALING.jsonl... [--dat FILE]
compare: one row per (metric, tick_ms): Netty median, wheel median, ratio wheel/Netty, the goal
of issue 5 and whether it is met, and the heap / libuv medians of the same runs.
scaling: ns per operation at each pending count for every impl; --dat also writes a gnuplot table.
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


def compare(netty_paths, our_paths):
    netty, netty_order = load(netty_paths)
    ours, _ = load(our_paths)
    print("| metric | tick_ms | Netty median | wheel median | wheel / Netty | goal | met | "
          "heap median | libuv median |")
    print("|---|---:|---:|---:|---:|---|---|---:|---:|")
    for (_, metric, tick, n) in netty_order:
        nv = median(netty, ("netty", metric, tick, n))
        wv = median(ours, ("wheel", metric, tick, n))
        hv = median(ours, ("heap", metric, tick, n))
        lv = median(ours, ("libuv", metric, tick, n))
        ratio = wv / nv if (wv is not None and nv) else None
        goal, met = "", ""
        g = GOALS.get((metric, tick)) or GOALS.get((metric, None))
        if g and wv is not None and nv is not None:
            goal = g[0]
            if g[1] is not None:
                met = "yes" if g[1](wv, nv, tick) else "NO"
            else:
                excl = median(netty, ("netty", "bytes_per_pending_timeout", tick, n))
                goal += f" ({fmt(excl)})"
                met = "yes" if excl is not None and wv <= excl else "NO"
        print(f"| {metric} | {tick} | {fmt(nv)} | {fmt(wv)} | "
              f"{'-' if ratio is None else f'{ratio:.2f}'} | {goal} | {met} | {fmt(hv)} | "
              f"{fmt(lv)} |")
    print(f"\nNetty rounds: {len(netty_paths)}, wheel-bench rounds: {len(our_paths)}; "
          "medians per (metric, tick_ms).")


def scaling(paths, dat):
    groups, order = load(paths)
    impls = [i for i in ("wheel", "heap", "libuv") if any(k[0] == i for k in order)]
    counts = sorted({k[3] for k in order if k[1].startswith("scaling_")})
    cols = [(m, i) for m in ("schedule", "cancel") for i in impls]
    print("| pending N | " + " | ".join(f"{m} ns/op {i}" for m, i in cols) + " |")
    print("|---:|" + "---:|" * len(cols))
    rows = []
    for n in counts:
        vals = []
        for m, i in cols:
            key = next((k for k in order if k[0] == i and k[1] == f"scaling_{m}_ns_per_op"
                        and k[3] == n), None)
            vals.append(median(groups, key) if key else None)
        rows.append((n, vals))
        print(f"| {n:,} | " + " | ".join(fmt(v) for v in vals) + " |")
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
