"""What the Python benchmarks share: the command line, CSV rows and timing (standard library only).

Every script prints CSV rows ``impl,workload,param,value,unit`` (after ``#`` comment lines) and runs
the same under our package or RMM 26.10's: which ``rmm`` is imported is chosen by PYTHONPATH, and
``--impl-name`` labels the rows. Rows of a baseline that does not use RMM at all (PyTorch's caching
allocator, CuPy's pools) carry the baseline's own name as impl, so they are run once.
"""

import argparse
import statistics
import sys
import time

HEADER = "impl,workload,param,value,unit"


def parser(description):
    """The options every script takes; scripts add their own."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--impl-name", default=None,
                   help="label of the rows measured through rmm (default: rmm-rs for our package, "
                        "rmm-26.10 for RMM's, told apart by rmm._native)")
    p.add_argument("--budget", type=float, default=20.0,
                   help="seconds of timed loops in all, shared among the cases (default 20)")
    p.add_argument("--runs", type=int, default=7, help="timed runs per case; the median is reported")
    p.add_argument("--no-header", action="store_true", help="leave out the CSV header line")
    return p


def impl_name(args):
    """The label for rows measured through rmm: --impl-name, else which package was imported."""
    if args.impl_name:
        return args.impl_name
    import importlib.util

    if importlib.util.find_spec("rmm") is None:
        return "no-rmm"
    return "rmm-rs" if importlib.util.find_spec("rmm._native") else "rmm-26.10"


def comment(text):
    print(f"# {text}", flush=True)


def header(args):
    if not args.no_header:
        print(HEADER, flush=True)


def row(impl, workload, param, value, unit):
    """One CSV row; value is a number or a word (skipped, error) with the reason in unit."""
    if isinstance(value, float):
        value = f"{value:.6g}"
    unit = str(unit).replace(",", ";").replace("\n", " ")
    print(f"{impl},{workload},{param},{value},{unit}", flush=True)


def _calibrate(body, sync, target_s):
    """An iteration count of ``body`` that takes at least ``target_s``, and the time it took."""
    n, elapsed = 16, 0.0
    while elapsed < target_s and n < 1 << 26:
        n *= 4
        elapsed = _timed(body, n, sync)
    return n, elapsed


def _timed(body, n, sync):
    """Seconds ``body(n)`` takes, the device work it queued included."""
    t0 = time.perf_counter()
    body(n)
    sync()
    return time.perf_counter() - t0


def loop_us(body, budget_s, runs, sync=lambda: None):
    """Microseconds per call of ``body(n)`` (which makes n iterations): the iteration count is
    chosen so that ``runs`` runs fill ``budget_s``; returns (median, min, max) over the runs.

    ``sync`` waits for the device so that each run's time includes the work it queued."""
    body(10)  # warm: first allocations, imports, pool growth
    sync()
    n, elapsed = _calibrate(body, sync, 0.02)
    per_run = max(budget_s / max(runs, 1), 0.005)
    n = max(1, int(n * per_run / elapsed))
    times = [_timed(body, n, sync) / n * 1e6 for _ in range(runs)]
    return statistics.median(times), min(times), max(times)


def interleaved_loops_us(cases, budget_s, runs, sync=lambda: None):
    """``loop_us`` for several implementations of one loop, timed in turns: ``cases`` maps a label
    to ``(select, body)``, where ``select()`` makes that implementation current and ``body(n)``
    makes n iterations. Each of ``runs`` rounds times every case once (in a rotating order) for the
    same iteration count, so that a machine whose speed drifts (a shared host) slows all of them
    alike. Returns {label: (median, min, max)} in microseconds per iteration."""
    labels = list(cases)
    for label in labels:  # warm each: first allocations, pool growth
        select, body = cases[label]
        select()
        body(10)
        sync()
    select, body = cases[labels[0]]
    select()
    n, elapsed = _calibrate(body, sync, 0.005)
    per_run = max(budget_s / max(runs * len(labels), 1), 0.002)
    n = max(1, int(n * per_run / elapsed))
    times = {label: [] for label in labels}
    for r in range(runs):
        for i in range(len(labels)):
            label = labels[(r + i) % len(labels)]
            select, body = cases[label]
            select()
            sync()
            times[label].append(_timed(body, n, sync) / n * 1e6)
    return {label: (statistics.median(t), min(t), max(t)) for label, t in times.items()}


def emit_loop(impl, workload, param, result):
    """The three rows of a loop_us result: the median, then the fastest and slowest run."""
    med, lo, hi = result
    row(impl, workload, param, med, "us_per_iter")
    row(impl, workload, param, lo, "us_per_iter_min")
    row(impl, workload, param, hi, "us_per_iter_max")


def fail(impl, workload, param, err):
    """A case that could not run: an ``error`` row naming why, on stdout and stderr."""
    print(f"{workload} {param}: {type(err).__name__}: {err}", file=sys.stderr)
    row(impl, workload, param, "error", f"{type(err).__name__}: {err}")
