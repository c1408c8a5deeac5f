#!/usr/bin/env python3
"""The threads workload as one SVG per stream pattern: ns per operation (aggregate, log scale)
against the thread count, every resource in its own colour, rmm-rs solid and RMM 26.10 dashed.
Standard library only (the SVG is written by hand), so it runs wherever python3 does.

    python3 benches/plot_threads.py threads_table.csv -o docs/benchmarks/ [--prefix threads_]
    python3 benches/plot_threads.py side_by_side.csv -o plots/

Input: the table rounds.py writes with --csv, or the one combine.py writes (columns resource,
workload, param, rmm-rs, rmm-26.10, ...). Threads rows have param "threads=N;streams=PATTERN"
(without streams=: the stream-per-thread pattern, "own"). A value ">X" (a run cut off at its time
limit) is drawn at X as an open triangle pointing up: the true value is higher. Cells that are
not numbers (skipped, timeout without a bound, empty) are left out. Writes PREFIX<pattern>.svg.
"""

import argparse
import csv
import math
import os
import sys
from xml.sax.saxutils import escape

from plot import threads_param  # the param parser plot.py reads threads rows with

IMPLS = ("rmm-rs", "rmm-26.10")
# Matplotlib's tab10, in the order the resources appear.
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf"]
WIDTH, HEIGHT = 820, 500
LEFT, RIGHT, TOP, BOTTOM = 78, 220, 48, 58


def cell(text):
    """(value, is_lower_bound) of a table cell, or None."""
    text = (text or "").strip()
    bound = text.startswith(">")
    try:
        v = float(text.lstrip(">=").strip())
    except ValueError:
        return None
    return (v, bound) if v > 0 and math.isfinite(v) else None


def load(path):
    """{pattern: {(resource, impl): {threads: (value, bound)}}} and the resources in order."""
    series, resources = {}, []
    with open(path, newline="") as f:
        lines = [l for l in f.read().splitlines() if l and not l.startswith("#")]
    for r in csv.DictReader(lines):
        if r.get("workload") != "threads":
            continue
        tp = threads_param(r.get("param", ""))
        if tp is None:
            continue
        threads, pattern = tp
        if r["resource"] not in resources:
            resources.append(r["resource"])
        for impl in IMPLS:
            c = cell(r.get(impl))
            if c is not None:
                series.setdefault(pattern, {}).setdefault((r["resource"], impl), {})[threads] = c
    return series, resources


def svg(pattern, lines, resources, title):
    """One pattern's plot as SVG text."""
    values = [v for pts in lines.values() for v, _ in pts.values()]
    counts = sorted({n for pts in lines.values() for n in pts})
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(max(values)))
    if hi <= lo:
        hi = lo * 10
    x_lo, x_hi = math.log2(counts[0]), math.log2(counts[-1])
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(n):
        return LEFT + (pw / 2 if x_hi == x_lo else (math.log2(n) - x_lo) / (x_hi - x_lo) * pw)

    def y(v):
        return TOP + ph - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{LEFT + pw / 2}" y="24" text-anchor="middle" font-size="15">{escape(title)}</text>']
    # Grid: a line per decade, lighter ones at 2 and 5.
    decade = lo
    while decade <= hi * 1.0001:
        for k, light in ((1, False), (2, True), (5, True)):
            v = decade * k
            if v > hi * 1.0001:
                break
            out.append(f'<line x1="{LEFT}" x2="{LEFT + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                       f'stroke="{"#eeeeee" if light else "#cccccc"}"/>')
            if not light:
                out.append(f'<text x="{LEFT - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
        decade *= 10
    for n in counts:
        out.append(f'<line x1="{x(n):.1f}" x2="{x(n):.1f}" y1="{TOP}" y2="{TOP + ph}" stroke="#eeeeee"/>')
        out.append(f'<text x="{x(n):.1f}" y="{TOP + ph + 18}" text-anchor="middle">{n}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#333333"/>')
    out.append(f'<text x="{LEFT + pw / 2}" y="{HEIGHT - 16}" text-anchor="middle">threads '
               f'(streams={escape(pattern)}), one shared resource</text>')
    out.append(f'<text transform="translate(20,{TOP + ph / 2}) rotate(-90)" text-anchor="middle">'
               f'ns per operation (wall time / all operations), log scale</text>')
    legend_y = TOP + 6
    for i, resource in enumerate(resources):
        colour = COLOURS[i % len(COLOURS)]
        drawn = False
        for impl in IMPLS:
            pts = sorted(lines.get((resource, impl), {}).items())
            if not pts:
                continue
            drawn = True
            dash = '' if impl == IMPLS[0] else ' stroke-dasharray="6,4"'
            path = " ".join(f"{'M' if j == 0 else 'L'}{x(n):.1f},{y(v):.1f}" for j, (n, (v, _)) in enumerate(pts))
            out.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
            for n, (v, bound) in pts:
                cx, cy = x(n), y(v)
                label = f"{impl} {resource}, {n} threads: {'>' if bound else ''}{v:.4g} ns/op"
                if bound:
                    shape = (f'<path d="M{cx:.1f},{cy - 6:.1f} L{cx + 5:.1f},{cy + 4:.1f} L{cx - 5:.1f},{cy + 4:.1f} Z" '
                             f'fill="white" stroke="{colour}" stroke-width="1.5">')
                    out.append(shape + f'<title>{escape(label)}</title></path>')
                elif impl == IMPLS[0]:
                    out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3.5" fill="{colour}">'
                               f'<title>{escape(label)}</title></circle>')
                else:
                    out.append(f'<rect x="{cx - 3.5:.1f}" y="{cy - 3.5:.1f}" width="7" height="7" fill="white" '
                               f'stroke="{colour}" stroke-width="1.5"><title>{escape(label)}</title></rect>')
        if drawn:
            lx = LEFT + pw + 16
            out.append(f'<line x1="{lx}" x2="{lx + 26}" y1="{legend_y}" y2="{legend_y}" stroke="{colour}" stroke-width="3"/>')
            out.append(f'<text x="{lx + 34}" y="{legend_y + 4}">{escape(resource)}</text>')
            legend_y += 20
    lx = LEFT + pw + 16
    legend_y += 10
    out.append(f'<line x1="{lx}" x2="{lx + 26}" y1="{legend_y}" y2="{legend_y}" stroke="#333333" stroke-width="2"/>')
    out.append(f'<text x="{lx + 34}" y="{legend_y + 4}">rmm-rs</text>')
    legend_y += 20
    out.append(f'<line x1="{lx}" x2="{lx + 26}" y1="{legend_y}" y2="{legend_y}" stroke="#333333" stroke-width="2" '
               f'stroke-dasharray="6,4"/>')
    out.append(f'<text x="{lx + 34}" y="{legend_y + 4}">RMM 26.10</text>')
    legend_y += 20
    out.append(f'<path d="M{lx + 13},{legend_y - 6} L{lx + 18},{legend_y + 4} L{lx + 8},{legend_y + 4} Z" '
               f'fill="white" stroke="#333333" stroke-width="1.5"/>')
    out.append(f'<text x="{lx + 34}" y="{legend_y + 4}">cut off: at least this</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", help="threads_table.csv (rounds.py --csv) or side_by_side.csv (combine.py --csv)")
    ap.add_argument("-o", "--output-dir", default=".")
    ap.add_argument("--prefix", default="threads_", help="file names: PREFIX<pattern>.svg (default threads_)")
    ap.add_argument("--title", default="{pattern}: rmm-rs vs RMM 26.10, ns per operation (lower is better)")
    a = ap.parse_args()
    series, resources = load(a.table)
    if not series:
        print(f"plot_threads.py: no threads rows with numbers in {a.table}", file=sys.stderr)
        return 1
    os.makedirs(a.output_dir, exist_ok=True)
    for pattern, lines in series.items():
        path = os.path.join(a.output_dir, f"{a.prefix}{pattern}.svg")
        title = a.title.format(pattern=f"threads, streams={pattern}")
        with open(path, "w") as f:
            f.write(svg(pattern, lines, resources, title))
        print(f"(written: {path})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
