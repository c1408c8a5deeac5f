#!/usr/bin/env python3
"""The Python benchmarks side by side, with ratios, and a plot (standard library; matplotlib for
the plot if installed).

    python3 benches/python/table.py results.csv [more.csv ...] [--csv table.csv] [--plot table.png]

Input: the rows the scripts in benches/python/ print (``impl,workload,param,value,unit``; ``#``
lines and repeated headers are skipped). One table row per (workload, param, unit) with a column
per implementation: rmm-rs, rmm-26.10, then the baselines (torch-native, cupy-MemoryPool,
cupy-MemoryAsyncPool, ...), then ratio (rmm-rs / rmm-26.10) and vs base (rmm-rs / the first
baseline present in that row). Every unit here is better lower (times, bytes) except final_loss,
which must match across the columns. Cells that are not numbers (error) show as written.

After the table: the cost of Dask-CUDA's adaptor stack, per implementation and size, as
``cupy_alloc_stack`` (statistics over tracking over the pool) / ``cupy_alloc`` (the bare pool),
from rows of one run.
"""

import argparse
import csv
import sys

OURS, THEIRS = "rmm-rs", "rmm-26.10"
WORKLOADS = ["empty_loop", "train_step", "cupy_empty", "cupy_alloc", "cupy_alloc_stack", "device_buffer",
             "dask_example"]
UNITS = ["us_per_iter", "us_per_iter_min", "us_per_iter_max", "ms_per_step", "ms_per_step_p10",
         "ms_per_step_p90", "peak_reserved_bytes", "pool_size_end_bytes", "final_loss", "wall_s",
         "wall_s_min", "wall_s_max", "peak_bytes"]


def number(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def read(paths):
    """{(workload, param, unit): {impl: value}} and the implementations in order of appearance."""
    cells, impls = {}, []
    for path in paths:
        with open(path, newline="") as f:
            lines = [l for l in f.read().splitlines() if l.strip() and not l.startswith("#")]
        for r in csv.reader(lines):
            if len(r) != 5 or r[0] == "impl":
                continue
            impl, workload, param, value, unit = r
            if number(value) is None:  # an error row: its reason is in unit
                value, unit = f"{value}: {unit}", "us_per_iter" if workload != "train_step" else "ms_per_step"
            cells.setdefault((workload, param, unit), {})[impl] = value
            if impl not in impls:
                impls.append(impl)
    return cells, impls


def order(key):
    workload, param, unit = key
    w = WORKLOADS.index(workload) if workload in WORKLOADS else len(WORKLOADS)
    u = UNITS.index(unit) if unit in UNITS else len(UNITS)
    size = number(param.split("=", 1)[-1])
    return (w, workload, size if size is not None else 0, param, u, unit)


def ratio(a, b):
    a, b = number(a), number(b)
    return f"{a / b:.2f}" if a is not None and b else ""


def table(cells, impls, main_only):
    baselines = [i for i in impls if i not in (OURS, THEIRS)]
    cols = [OURS, THEIRS] + baselines
    head = ["workload", "param", "unit"] + cols + ["ratio", "vs base"]
    rows = []
    for key in sorted(cells, key=order):
        if main_only and key[2].endswith(("_min", "_max", "_p10", "_p90")):
            continue
        c = cells[key]
        base = next((c[b] for b in baselines if b in c), None)
        rows.append(list(key) + [c.get(i, "") for i in cols] + [ratio(c.get(OURS), c.get(THEIRS)),
                                                                 ratio(c.get(OURS), base)])
    return head, rows


def fmt(v):
    x = number(v)
    if x is None:  # an error: its start here, all of it in the CSV
        return v if len(v) <= 40 else v[:37] + "..."
    if abs(x) >= 1e6:
        return f"{x / 2**30:.3f} GiB" if x >= 2**26 else f"{x:.0f}"
    return f"{x:.4g}"


def show(head, rows):
    body = [head] + [r[:3] + [fmt(v) for v in r[3:]] for r in rows]
    widths = [max(len(str(r[i])) for r in body) for i in range(len(head))]
    for n, r in enumerate(body):
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def plot(cells, impls, path):
    """One panel per workload: the median of each implementation per param, log scale."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"note: matplotlib is not installed; no plot written to {path}", file=sys.stderr)
        return
    panels = [(w, u) for w, u in (("empty_loop", "us_per_iter"), ("train_step", "ms_per_step"),
                                  ("train_step", "peak_reserved_bytes"), ("cupy_empty", "us_per_iter"),
                                  ("cupy_alloc", "us_per_iter"), ("cupy_alloc_stack", "us_per_iter"),
                                  ("device_buffer", "us_per_iter"))
              if any(k[0] == w and k[2] == u and any(number(v) is not None for v in cells[k].values())
                     for k in cells)]
    if not panels:
        print("note: nothing to plot", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 4), squeeze=False)
    for ax, (w, u) in zip(axes[0], panels):
        keys = sorted((k for k in cells if k[0] == w and k[2] == u), key=order)
        present = [i for i in impls if any(number(cells[k].get(i)) is not None for k in keys)]
        width = 0.8 / max(len(present), 1)
        for j, impl in enumerate(present):
            xs = [n + j * width for n in range(len(keys))]
            ys = [number(cells[k].get(impl)) or 0 for k in keys]
            if u.endswith("bytes"):
                ys = [y / 2**30 for y in ys]
            ax.bar(xs, ys, width, label=impl, color=f"C{impls.index(impl) % 10}")  # one colour per impl
        ax.set_xticks([n + 0.4 - width / 2 for n in range(len(keys))])
        ax.set_xticklabels([k[1] for k in keys], rotation=30, ha="right", fontsize=8)
        ax.set_title(w)
        ax.set_ylabel("GiB" if u.endswith("bytes") else u.replace("_", " "))
        if u == "us_per_iter":
            ax.set_yscale("log")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}", file=sys.stderr)


def stack_ratios(cells, impls):
    """Lines of cupy_alloc_stack / cupy_alloc (us_per_iter) per implementation and param."""
    lines = []
    for key in sorted((k for k in cells if k[0] == "cupy_alloc_stack" and k[2] == "us_per_iter"), key=order):
        bare = cells.get(("cupy_alloc", key[1], key[2]), {})
        for impl in impls:
            r = ratio(cells[key].get(impl), bare.get(impl))
            if r:
                lines.append(f"  {impl:<10} {key[1]:<16} {r}  ({fmt(cells[key][impl])} / {fmt(bare[impl])} us)")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("inputs", nargs="+")
    p.add_argument("--csv", help="write the full table (every unit) as CSV here")
    p.add_argument("--plot", help="write a PNG here (needs matplotlib)")
    p.add_argument("--all", action="store_true", help="print the min/max/p10/p90 rows too")
    args = p.parse_args()
    cells, impls = read(args.inputs)
    if not cells:
        sys.exit("no rows in " + ", ".join(args.inputs))
    show(*table(cells, impls, main_only=not args.all))
    stack = stack_ratios(cells, impls)
    if stack:
        print("\ncupy.cuda.alloc through statistics -> tracking -> pool, over the bare pool (one run):")
        print("\n".join(stack))
    if args.csv:
        head, rows = table(cells, impls, main_only=False)
        with open(args.csv, "w", newline="") as f:
            csv.writer(f).writerows([head] + rows)
    if args.plot:
        plot(cells, impls, args.plot)


if __name__ == "__main__":
    main()
