#!/usr/bin/env python3
"""Puts alloc_bench results side by side (standard library only).

    python3 benches/combine.py rmm-rs.csv rmm-26.10.csv raw.csv --csv side_by_side.csv

Each input is alloc_bench's output: '#' comment lines and CSV rows
``impl,resource,workload,param,value,unit`` where value is a number or skipped/timeout/error
(then unit says why). Prints one table, a row per (resource, workload, param), with the columns
rmm-rs, rmm-26.10, ratio (rmm-rs / rmm-26.10: below 1 is better for every unit used here: times, and
for the log replays (workload "replay", from replay.cu) bytes) and raw (the CUDA / Thrust baselines,
impl "raw"); writes the same as CSV. Replay rows name their quantity in the unit column (ns_per_op,
peak_upstream_bytes, ...), so a replay row is keyed by its unit as well. A threads run cut off at
its time limit (value timeout, unit "... >=X ns/op") shows as ">X", and its ratio as a bound
("<r": at most r, when RMM's run was cut off; ">r": at least r, when ours was; "~r": both were,
the ratio of their rates so far).
"""

import argparse
import csv
import math
import re
import sys

OURS, THEIRS, RAW = "rmm-rs", "rmm-26.10", "raw"
IMPLS = (OURS, THEIRS, RAW)
RESOURCE_ORDER = ["pool", "arena", "fixed_size", "binning", "stats_tracking_pool", "cuda_async", "cuda", "cudaMallocAsync", "cudaMalloc", "thrust_default", "preallocated"]
WORKLOAD_ORDER = ["random_allocations", "fixed_trace", "threads", "multi_stream", "thrust_sort", "thrust_pipeline",
                  "replay"]
# Replay quantities that compare the implementations (ops and peak_live_bytes come from the log and
# must be equal on both sides: a ratio other than 1 means the two readers disagree).
REPLAY_COMPARED = ("ns_per_op", "cold_ns_per_op", "peak_upstream_bytes", "fragmentation")
HEADER = ["resource", "workload", "param", "unit", OURS, THEIRS, "ratio", RAW]
LOWER_BOUND = re.compile(r">=\s*([0-9.eE+-]+)\s*(\S+)")


class Bound(float):
    """A lower bound of a value: a run cut off at its time limit."""


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
    cells, units, params_seen, keys_seen, notes = {}, {}, {}, {}, []
    for r in rows:
        # A replay row's unit names its quantity; elsewhere the unit of a non-number is a reason.
        metric = r["unit"] if r["workload"] == "replay" else ""
        key = (r["resource"], r["workload"], r["param"], metric)
        params_seen.setdefault((r["workload"], r["param"]), len(params_seen))
        keys_seen.setdefault(key, len(keys_seen))
        impl = r["impl"] if r["impl"] in IMPLS else RAW
        v = number(r["value"])
        bound = LOWER_BOUND.search(r["unit"]) if r["value"] == "timeout" else None
        if v is not None:
            cells.setdefault(key, {})[impl] = v
            units[key] = r["unit"]
        elif bound and number(bound.group(1)) is not None:
            cells.setdefault(key, {})[impl] = Bound(number(bound.group(1)))
            units.setdefault(key, bound.group(2))
            notes.append(f"{impl} {r['resource']} {r['workload']} {r['param']}: timeout ({r['unit']})")
        else:
            cells.setdefault(key, {})[impl] = r["value"]
            notes.append(f"{impl} {r['resource']} {r['workload']} {r['param']}: {r['value']} ({r['unit']})")
    keys = sorted(cells, key=lambda k: (rank(RESOURCE_ORDER, k[0]), k[0], rank(WORKLOAD_ORDER, k[1]), k[1],
                                        params_seen[(k[1], k[2])], keys_seen[k]))
    table = []
    for key in keys:
        c = cells[key]
        ours, theirs = c.get(OURS), c.get(THEIRS)
        both = isinstance(ours, float) and isinstance(theirs, float) and theirs > 0
        ratio = ours / theirs if both else None
        direction = ("~" if isinstance(ours, Bound) and isinstance(theirs, Bound) else
                     "<" if isinstance(theirs, Bound) else ">" if isinstance(ours, Bound) else "")
        show = lambda x: (">" if isinstance(x, Bound) else "") + fmt(x) if isinstance(x, float) else (x or "")
        table.append({
            "resource": key[0], "workload": key[1], "param": key[2], "unit": units.get(key, ""),
            OURS: show(ours), THEIRS: show(theirs), "ratio": f"{direction}{ratio:.2f}" if ratio is not None else "",
            RAW: show(c.get(RAW)), "_ratio": ratio, "_metric": key[3],
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
        if r["_metric"] and r["_metric"] not in REPLAY_COMPARED:
            continue
        workload = f'{r["workload"]} {r["_metric"]}' if r["_metric"] else r["workload"]
        if r["_ratio"] is not None and r["_ratio"] > 0:
            by.setdefault((r["resource"], workload), []).append(r["_ratio"])
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
    print("ratio = rmm-rs / rmm-26.10 (lower is better for rmm-rs; every unit is a time or, for replay, bytes).")
    gm = geomeans(table)
    if gm:
        print("geometric mean of the ratios (workloads with several rows):")
        for (res, wl), (g, n) in sorted(gm.items(), key=lambda kv: (rank(RESOURCE_ORDER, kv[0][0]),
                                                                   rank(WORKLOAD_ORDER, kv[0][1].split()[0]), kv[0][1])):
            print(f"  {res:<11} {wl:<30} {g:6.2f}  ({n} rows)")
    if notes:
        print("notes:")
        for n in notes:
            print("  " + n)

    if a.csv:
        print(f"(written: {a.csv})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
