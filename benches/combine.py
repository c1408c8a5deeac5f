#!/usr/bin/env python3
"""Puts alloc_bench results side by side (standard library only).

    python3 benches/combine.py rmm-rs.csv rmm-26.10.csv raw.csv --csv side_by_side.csv

Each input is alloc_bench's output: '#' comment lines and CSV rows
``impl,resource,workload,param,value,unit`` where value is a number or skipped/timeout/error
(then unit says why). Prints one table, a row per (resource, workload, param), with the columns
rmm-rs, rmm-26.10, ratio (rmm-rs / rmm-26.10: below 1 is faster for every unit used here, all
being times) and raw (the CUDA / Thrust baselines, impl "raw"); writes the same as CSV.
"""

import argparse
import csv
import math
import sys

OURS, THEIRS, RAW = "rmm-rs", "rmm-26.10", "raw"
IMPLS = (OURS, THEIRS, RAW)
RESOURCE_ORDER = ["pool", "cuda_async", "cuda", "cudaMallocAsync", "cudaMalloc", "thrust_default", "preallocated"]
WORKLOAD_ORDER = ["random_allocations", "fixed_trace", "threads", "multi_stream", "thrust_sort", "thrust_pipeline"]
HEADER = ["resource", "workload", "param", "unit", OURS, THEIRS, "ratio", RAW]


def read(paths):
    """Returns (rows, comments): rows as dicts of the six columns, comments per file."""
    rows, comments = [], {}
    for path in paths:
        try:
            f = open(path, newline="")
        except OSError as e:
            print(f"warning: {e}", file=sys.stderr)
            continue
        with f:
            lines = f.read().splitlines()
        comments[path] = [l[1:].strip() if l.startswith("#") else l for l in lines
                          if l.startswith("#") or l.startswith("skipped:")]
        data = [l for l in lines if l and not l.startswith("#") and not l.startswith("skipped:")]
        for rec in csv.reader(data):
            if len(rec) != 6 or rec[0] == "impl":
                continue
            rows.append(dict(zip(["impl", "resource", "workload", "param", "value", "unit"], rec)))
    return rows, comments


def number(s):
    try:
        v = float(s)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def fmt(v):
    if v is None:
        return ""
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def rank(order, name):
    return order.index(name) if name in order else len(order)


def combine(rows):
    """Returns the table rows (dicts keyed by HEADER) and the notes for non-numeric cells."""
    cells, units, params_seen, notes = {}, {}, {}, []
    for r in rows:
        key = (r["resource"], r["workload"], r["param"])
        params_seen.setdefault((r["workload"], r["param"]), len(params_seen))
        impl = r["impl"] if r["impl"] in IMPLS else RAW
        v = number(r["value"])
        if v is not None:
            cells.setdefault(key, {})[impl] = v
            units[key] = r["unit"]
        else:
            cells.setdefault(key, {})[impl] = r["value"]
            notes.append(f"{impl} {r['resource']} {r['workload']} {r['param']}: {r['value']} ({r['unit']})")
    keys = sorted(cells, key=lambda k: (rank(RESOURCE_ORDER, k[0]), k[0], rank(WORKLOAD_ORDER, k[1]), k[1],
                                        params_seen[(k[1], k[2])]))
    table = []
    for key in keys:
        c = cells[key]
        ours, theirs = c.get(OURS), c.get(THEIRS)
        ratio = ours / theirs if isinstance(ours, float) and isinstance(theirs, float) and theirs > 0 else None
        show = lambda x: fmt(x) if isinstance(x, float) else (x or "")
        table.append({
            "resource": key[0], "workload": key[1], "param": key[2], "unit": units.get(key, ""),
            OURS: show(ours), THEIRS: show(theirs), "ratio": f"{ratio:.2f}" if ratio is not None else "",
            RAW: show(c.get(RAW)), "_ratio": ratio,
        })
    return table, notes


def render(table):
    widths = {h: max([len(h)] + [len(r[h]) for r in table]) for h in HEADER}
    right = {OURS, THEIRS, "ratio", RAW}
    line = lambda r: "  ".join(r[h].rjust(widths[h]) if h in right else r[h].ljust(widths[h]) for h in HEADER)
    out = [line({h: h for h in HEADER}), "  ".join("-" * widths[h] for h in HEADER)]
    previous = None
    for r in table:
        if previous is not None and r["resource"] != previous:
            out.append("")
        out.append(line(r))
        previous = r["resource"]
    return "\n".join(out)


def geomeans(table):
    by = {}
    for r in table:
        if r["_ratio"] is not None and r["_ratio"] > 0:
            by.setdefault((r["resource"], r["workload"]), []).append(r["_ratio"])
    return {k: (math.exp(sum(map(math.log, v)) / len(v)), len(v)) for k, v in by.items() if len(v) > 1}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+", help="alloc_bench outputs")
    ap.add_argument("--csv", help="write the table here as CSV")
    a = ap.parse_args()

    rows, comments = read(a.inputs)
    for path, lines in comments.items():
        for l in lines:
            if l.startswith(("impl:", "device:", "driver", "skipped:")):
                print(f"# {path.rsplit('/', 1)[-1]}: {l}")
    devices = {l for lines in comments.values() for l in lines if l.startswith("device:")}
    if len({d.split("(")[0] for d in devices}) > 1:
        print("# WARNING: the runs saw different devices")
    if not rows:
        no_device = comments and all(any(l.startswith("skipped:") for l in c) for c in comments.values())
        print("no results: " + ("no CUDA device" if no_device else "the runs failed"))
        return 0 if no_device else 1

    table, notes = combine(rows)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(HEADER)
            for r in table:
                w.writerow([r[h] for h in HEADER])
    print()
    print(render(table))
    print()
    print("ratio = rmm-rs / rmm-26.10 (lower is better for rmm-rs; every unit is a time).")
    gm = geomeans(table)
    if gm:
        print("geometric mean of the ratios (workloads with several rows):")
        for (res, wl), (g, n) in sorted(gm.items(), key=lambda kv: (rank(RESOURCE_ORDER, kv[0][0]), rank(WORKLOAD_ORDER, kv[0][1]))):
            print(f"  {res:<11} {wl:<19} {g:6.2f}  ({n} rows)")
    if notes:
        print("notes:")
        for n in notes:
            print("  " + n)

    if a.csv:
        print(f"(written: {a.csv})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
