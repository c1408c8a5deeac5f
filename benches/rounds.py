#!/usr/bin/env python3
"""Summarises alternating rounds: `run_side_by_side.sh run`'s rounds.csv or `threads`'
threads_rounds.csv.

Each round ran RMM 26.10 and rmm-rs one after the other in fresh processes (and the driver's own
call, impl "raw", beside the resources built on it). A shared machine drifts between processes,
so each row's ratio is the median of the per-round ratios rather than the ratio of medians; the
range of the per-round ratios shows how much a single pass can mislead.

A run cut off at its time limit ("timeout", unit "... >=X ns/op") counts as the lower bound X and
shows as ">X". A round whose RMM value is a lower bound gives an upper bound of the ratio ("<r"),
one whose rmm-rs value is a lower bound a lower bound (">r"); a median over bounds of one direction
is a bound of that direction. A round where both sides were cut off gives the ratio of their rates
over the operations each did, an estimate, not a bound; a median over such rounds, or over bounds
of both directions, is shown as "~r".

    python3 benches/rounds.py rounds.csv
    python3 benches/rounds.py threads_rounds.csv --csv threads_table.csv --markdown threads_table.md
"""

import argparse
import csv
import math
import re
import statistics
import sys

OURS, THEIRS, RAW = "rmm-rs", "rmm-26.10", "raw"
# The raw baseline that each resource wraps.
RAW_OF = {"cudaMallocAsync": "cuda_async", "cudaMalloc": "cuda"}
LOWER_BOUND = re.compile(r">=\s*([0-9.eE+-]+)\s*(\S+)")
HEADER = ("resource", "workload", "param", "unit", "rounds", OURS, THEIRS, RAW, "ratio", "range")


class Value:
    """A measurement, or a lower bound of one (a cut-off run)."""

    def __init__(self, x, bound=False):
        self.x, self.bound = x, bound


def parse_value(value, unit):
    """(Value, unit), or None for a row without a number (skipped, error)."""
    try:
        return Value(float(value)), unit
    except ValueError:
        pass
    if value == "timeout":
        m = LOWER_BOUND.search(unit)
        if m:
            try:
                return Value(float(m.group(1)), bound=True), m.group(2)
            except ValueError:
                return None
    return None


def load(path):
    """{(resource, workload, param, unit): {round: {impl: Value}}} in file order."""
    rows = {}
    with open(path, newline="") as f:
        for rec in csv.DictReader(f):
            parsed = parse_value(rec["value"], rec["unit"])
            if parsed is None:
                continue
            value, unit = parsed
            resource = RAW_OF.get(rec["resource"], rec["resource"]) if rec["impl"] == RAW else rec["resource"]
            key = (resource, rec["workload"], rec["param"], unit)
            rows.setdefault(key, {}).setdefault(rec["round"], {})[rec["impl"]] = value
    return rows


def fmt(v):
    if v is None:
        return "-"
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def median_value(values):
    """The median as text: ">X" when any value is a lower bound (the median is then one too)."""
    if not values:
        return "-", None
    m = statistics.median(v.x for v in values)
    return (">" if any(v.bound for v in values) else "") + fmt(m), m


def ratio_of(ours, theirs):
    """(ratio, direction): direction "" exact, "<" upper bound, ">" lower bound, "~" both sides cut
    off (the ratio of their rates so far); None when RMM's value is not positive."""
    if theirs.x <= 0:
        return None
    if ours.bound and theirs.bound:
        return ours.x / theirs.x, "~"
    return ours.x / theirs.x, ("<" if theirs.bound else ">" if ours.bound else "")


def summarise(rows):
    """The table: one dict per row (HEADER's keys as text; _ratio, _dir and _pattern for the
    markdown) and the per-resource ratios for the geometric means."""
    table, by_resource = [], {}
    for (resource, workload, param, unit), rounds in rows.items():
        paired = [v for v in rounds.values() if OURS in v and THEIRS in v]
        if not paired:
            continue
        ratios = [r for r in (ratio_of(v[OURS], v[THEIRS]) for v in paired) if r is not None]
        raw = [v[RAW] for v in rounds.values() if RAW in v]
        ours_text, ours_median = median_value([v[OURS] for v in paired])
        theirs_text, theirs_median = median_value([v[THEIRS] for v in paired])
        if ratios:
            ratio = statistics.median(x for x, _ in ratios)
            dirs = {d for _, d in ratios} - {""}
            direction = "" if not dirs else (dirs.pop() if len(dirs) == 1 else "~")  # "~" wins over a mix
            ratio_text = f"{direction}{ratio:.3f}"
            span = f"{min(x for x, _ in ratios):.3g}-{max(x for x, _ in ratios):.3g}"
            by_resource.setdefault(resource, []).append(ratio)
        else:
            ratio, direction, ratio_text, span = None, None, "-", "-"
        table.append({"resource": resource, "workload": workload, "param": param, "unit": unit,
                      "rounds": str(len(paired)), OURS: ours_text, THEIRS: theirs_text,
                      RAW: median_value(raw)[0] if raw else "-", "ratio": ratio_text, "range": span,
                      "_ours": ours_median, "_theirs": theirs_median, "_ratio": ratio, "_dir": direction})
    return table, by_resource


def render(table, by_resource, out):
    widths = [max(len(h), *(len(r[h]) for r in table)) for h in HEADER]
    right = {4, 5, 6, 7, 8, 9}

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    print("alternating rounds: median per row; ratio = median of the per-round rmm-rs / rmm-26.10", file=out)
    print("(>X: a lower bound, some rounds were cut off; <r, >r: the ratio is at most, at least r;", file=out)
    print(" ~r: both sides cut off in some rounds, the ratio of their rates so far)", file=out)
    print(line(HEADER), file=out)
    print(line(["-" * w for w in widths]), file=out)
    for r in table:
        print(line([r[h] for h in HEADER]), file=out)
    print("geometric mean of the row ratios (bounds counted as values):", file=out)
    for resource, ratios in by_resource.items():
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        at_most_one = sum(1 for x in ratios if x <= 1.0)
        print(f"  {resource:<20} {gm:.3f}  ({len(ratios)} rows, {at_most_one} at most 1.0)", file=out)


def threads_param(param):
    """(threads, pattern) of a threads row's param ("threads=8;streams=shared"; without streams=:
    the stream-per-thread pattern of older runs), or None."""
    fields = dict(f.split("=", 1) for f in param.split(";") if "=" in f)
    try:
        return int(fields["threads"]), fields.get("streams", "own")
    except (KeyError, ValueError):
        return None


def markdown(table, out):
    """The threads rows as one markdown table per pattern: a row per resource, a column per thread
    count, each cell "rmm-rs / RMM (ratio)" in ns per operation."""
    cells, patterns, counts, resources = {}, [], [], []
    for r in table:
        tp = threads_param(r["param"]) if r["workload"] == "threads" else None
        if tp is None:
            continue
        threads, pattern = tp
        for seen, x in ((patterns, pattern), (counts, threads), (resources, r["resource"])):
            if x not in seen:
                seen.append(x)
        cells[(pattern, r["resource"], threads)] = f'{r[OURS]} / {r[THEIRS]} ({r["ratio"]})'
    counts.sort()
    for pattern in patterns:
        print(f"\n**streams={pattern}**: ns per operation (aggregate), rmm-rs / RMM 26.10 (ratio)\n", file=out)
        print("| resource | " + " | ".join(f"{n} thread{'s' if n > 1 else ''}" for n in counts) + " |", file=out)
        print("|---|" + "---|" * len(counts), file=out)
        for resource in resources:
            if any((pattern, resource, n) in cells for n in counts):
                row = [cells.get((pattern, resource, n), "-") for n in counts]
                print(f"| {resource} | " + " | ".join(row) + " |", file=out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", help="rounds.csv or threads_rounds.csv from run_side_by_side.sh")
    parser.add_argument("--csv", dest="csv_out", help="write the table here as CSV")
    parser.add_argument("--markdown", help="write the threads rows here as markdown tables, one per pattern")
    args = parser.parse_args()
    table, by_resource = summarise(load(args.csv))
    if not table:
        sys.exit("rounds.py: no row has both sides")
    render(table, by_resource, sys.stdout)
    if args.csv_out:
        with open(args.csv_out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(HEADER)
            for r in table:
                w.writerow([r[h] for h in HEADER])
        print(f"(written: {args.csv_out})")
    if args.markdown:
        with open(args.markdown, "w") as f:
            markdown(table, f)
        print(f"(written: {args.markdown})")


if __name__ == "__main__":
    main()
