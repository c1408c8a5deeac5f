#!/usr/bin/env python3
"""Summarises the alternating rounds of `run_side_by_side.sh run` (rounds.csv).

Each round ran RMM 26.10 and rmm-rs one after the other in fresh processes (and the driver's own
call, impl "raw", beside the resources built on it). A shared machine drifts between processes,
so each row's ratio is the median of the per-round ratios rather than the ratio of medians; the
range of the per-round ratios shows how much a single pass can mislead.

    python3 benches/rounds.py rounds.csv
"""

import argparse
import csv
import math
import statistics
import sys

OURS, THEIRS, RAW = "rmm-rs", "rmm-26.10", "raw"
# The raw baseline that each resource wraps.
RAW_OF = {"cudaMallocAsync": "cuda_async", "cudaMalloc": "cuda"}


def load(path):
    """{(resource, workload, param, unit): {round: {impl: value}}} in file order."""
    rows = {}
    with open(path, newline="") as f:
        for rec in csv.DictReader(f):
            try:
                value = float(rec["value"])
            except ValueError:
                continue
            resource = RAW_OF.get(rec["resource"], rec["resource"]) if rec["impl"] == RAW else rec["resource"]
            key = (resource, rec["workload"], rec["param"], rec["unit"])
            rows.setdefault(key, {}).setdefault(rec["round"], {})[rec["impl"]] = value
    return rows


def fmt(v):
    if v is None:
        return "-"
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def summarise(rows, out):
    header = ("resource", "workload", "param", "unit", "rounds", OURS, THEIRS, RAW, "ratio", "range")
    table = []
    by_resource = {}
    for (resource, workload, param, unit), rounds in rows.items():
        paired = [v for v in rounds.values() if OURS in v and THEIRS in v]
        if not paired:
            continue
        ratios = [v[OURS] / v[THEIRS] for v in paired if v[THEIRS] > 0]
        if not ratios:
            continue
        raw = [v[RAW] for v in rounds.values() if RAW in v]
        ratio = statistics.median(ratios)
        by_resource.setdefault(resource, []).append(ratio)
        table.append((resource, workload, param, unit, str(len(paired)),
                      fmt(statistics.median(v[OURS] for v in paired)),
                      fmt(statistics.median(v[THEIRS] for v in paired)),
                      fmt(statistics.median(raw)) if raw else "-",
                      f"{ratio:.3f}", f"{min(ratios):.2f}-{max(ratios):.2f}"))
    if not table:
        sys.exit("rounds.py: no row has both sides")
    widths = [max(len(h), *(len(r[i]) for r in table)) for i, h in enumerate(header)]
    right = {4, 5, 6, 7, 8, 9}

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    print("alternating rounds: median per row; ratio = median of the per-round rmm-rs / rmm-26.10", file=out)
    print(line(header), file=out)
    print(line(["-" * w for w in widths]), file=out)
    for r in table:
        print(line(r), file=out)
    print("geometric mean of the row ratios:", file=out)
    for resource, ratios in by_resource.items():
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        at_most_one = sum(1 for x in ratios if x <= 1.0)
        print(f"  {resource:<11} {gm:.3f}  ({len(ratios)} rows, {at_most_one} at most 1.0)", file=out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", help="rounds.csv from run_side_by_side.sh run")
    args = parser.parse_args()
    summarise(load(args.csv), sys.stdout)


if __name__ == "__main__":
    main()
