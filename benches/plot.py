#!/usr/bin/env python3
"""ns/op by thread count, rmm-rs against RMM 26.10, from the alloc_bench results.

    python3 benches/plot.py side_by_side.csv -o threads_pool.png
    python3 benches/plot.py rmm-rs.csv rmm-26.10.csv --resources pool,cuda_async -o threads.png

Input: the table combine.py writes (columns resource,workload,param,unit,rmm-rs,rmm-26.10,...) or
alloc_bench's own output (impl,resource,workload,param,value,unit; '#' lines are skipped). One
panel per resource (default: pool), for one stream pattern (--pattern, default own: the threads
rows' param is "threads=N;streams=PATTERN", older rows without streams= are "own"); cells that
are not numbers (skipped, timeout) are left out. Needs matplotlib; plot_threads.py draws every
pattern as SVG without it.
"""

import argparse
import csv
import sys

IMPLS = ("rmm-rs", "rmm-26.10")
STYLE = {"rmm-rs": dict(color="tab:orange", marker="o"), "rmm-26.10": dict(color="tab:blue", marker="s")}
LABEL_OFFSET = {"rmm-rs": (0, -13), "rmm-26.10": (0, 6)}  # values below / above the points


def number(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def threads_param(param):
    """(threads, pattern) of a threads row's param, or None."""
    fields = dict(f.split("=", 1) for f in param.split(";") if "=" in f)
    try:
        return int(fields["threads"]), fields.get("streams", "own")
    except (KeyError, ValueError):
        return None


def load(paths, pattern="own"):
    """{(impl, resource): {threads: ns/op}} of one stream pattern, from either input format."""
    series = {}
    for path in paths:
        with open(path, newline="") as f:
            lines = [l for l in f.read().splitlines() if l and not l.startswith("#") and not l.startswith("skipped:")]
        rows = list(csv.DictReader(lines))
        for r in rows:
            tp = threads_param(r.get("param", "")) if r.get("workload") == "threads" else None
            if tp is None or tp[1] != pattern:
                continue
            t = tp[0]
            if "impl" in r:  # alloc_bench output
                cells = {r["impl"]: r.get("value")}
            else:  # combine.py table
                cells = {impl: r.get(impl) for impl in IMPLS}
            for impl, v in cells.items():
                v = number(v)
                if impl in IMPLS and v is not None:
                    series.setdefault((impl, r["resource"]), {})[t] = v
    return series


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("-o", "--output", default="threads_pool.png")
    ap.add_argument("--resources", default="pool", help="comma-separated, one panel each (default: pool)")
    ap.add_argument("--pattern", default="own", help="stream pattern: own, shared or ptds (default own)")
    ap.add_argument("--title", default=None)
    a = ap.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = load(a.inputs, a.pattern)
    resources = [r for r in a.resources.split(",") if r]
    fig, axes = plt.subplots(1, len(resources), figsize=(6 * len(resources), 4.2), squeeze=False)
    plotted = 0
    for ax, resource in zip(axes[0], resources):
        threads_seen = set()
        lines = 0
        for impl in IMPLS:
            points = sorted(series.get((impl, resource), {}).items())
            if not points:
                continue
            xs, ys = zip(*points)
            threads_seen.update(xs)
            ax.plot(xs, ys, label=impl, **STYLE[impl])
            for x, y in points:
                ax.annotate(f"{y:.0f}", (x, y), textcoords="offset points", xytext=LABEL_OFFSET[impl], ha="center", fontsize=7,
                            color=STYLE[impl]["color"])
            lines += 1
        ax.set_xscale("log", base=2)
        ticks = sorted(threads_seen) or [1, 2, 4, 8, 16]
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(t) for t in ticks])
        ax.set_ylim(bottom=0)
        ax.set_xlabel(f"threads (streams={a.pattern}, one shared resource)")
        ax.set_ylabel("ns per operation (wall time / all operations)")
        ax.set_title(f"{resource}: fixed trace per thread")
        ax.grid(True, alpha=0.3)
        if lines:
            ax.legend()
        else:
            ax.text(0.5, 0.5, "no results", transform=ax.transAxes, ha="center")
        plotted += lines
    fig.suptitle(a.title or "alloc_bench threads: rmm-rs vs RMM 26.10 (lower is better)")
    fig.tight_layout()
    if plotted == 0:
        print(f"plot.py: no threads results for {','.join(resources)} in {' '.join(a.inputs)}", file=sys.stderr)
        return 1
    fig.savefig(a.output, dpi=120)
    print(f"(written: {a.output})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
