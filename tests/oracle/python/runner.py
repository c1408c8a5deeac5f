"""Run the oracle's Python scenarios against one implementation and write one JSON line each.

    PYTHONPATH=<site folder of one implementation> \\
        python3 tests/oracle/python/runner.py --impl {rmm,ours} --out FILE.jsonl \\
        [--gpus N] [--min-gpus N] [--only PATTERN] [--timeout S]

Each line: {"scenario": "<module>/<name>", "status": "ok"|"skipped", "reason": str,
"trace": [[label, value], ...]}. "detail" (not compared) carries the message of an exception that
escaped the scenario.

Scenarios run in worker processes, one per scenario module (one per scenario for those registered
with ``isolate=True``); between scenarios a worker puts back the current resource of every device,
the logging levels, the reinitialize hooks and the profiler records. A worker that dies (a crash,
a timeout) loses nothing already recorded: its scenario's trace ends with ["crash", ...] or
["timeout", ...] and the next worker goes on with the rest.

``--gpus`` (default 1) is how many GPUs scenarios may use; a scenario needing more is skipped, as
is every scenario needing a GPU where none is found (the environment variable ORACLE_GPUS, when
set, replaces the count found). ``--min-gpus N`` keeps only scenarios needing at least N GPUs.
"""

import argparse
import ctypes
import fnmatch
import importlib
import json
import os
import pkgutil
import selectors
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import oracle_lib  # noqa: E402


def load_scenarios(package=None):
    """Import every module of the scenario package (a folder; default: scenarios/ beside this
    file); returns the registry."""
    package = os.path.abspath(package or os.path.join(HERE, "scenarios"))
    parent, name = os.path.split(package)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    pkg = importlib.import_module(name)
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        importlib.import_module(f"{name}.{info.name}")
    return oracle_lib.REGISTRY


def detect_gpus():
    """(count, reason): the CUDA devices the driver lists, and why there are none where so."""
    forced = os.environ.get("ORACLE_GPUS")
    if forced is not None:
        n = int(forced)
        return n, (None if n > 0 else "no GPU (ORACLE_GPUS=0)")
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return 0, f"no CUDA driver (libcuda.so.1: {e})"
    rc = lib.cuInit(0)
    if rc != 0:
        return 0, f"no usable CUDA device (cuInit returned {rc})"
    n = ctypes.c_int(0)
    rc = lib.cuDeviceGetCount(ctypes.byref(n))
    if rc != 0 or n.value == 0:
        return 0, f"no CUDA device (cuDeviceGetCount returned {rc}, count {n.value})"
    return n.value, None


def check_import(impl):
    """None where ``rmm`` imports and is the implementation asked for, else the reason."""
    probe = (
        "import importlib.util, rmm\n"
        "print(rmm.__file__)\n"
        "print(getattr(rmm, '__version__', '?'))\n"
        "print(importlib.util.find_spec('rmm._native') is not None)\n"
    )
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["?"])[-1]
        return f"cannot import rmm ({impl}): {last}"
    lines = p.stdout.split("\n")
    where, version, is_ours = lines[0], lines[1], lines[2] == "True"
    if impl == "rmm" and is_ours:
        return f"--impl rmm but the rmm on the path is rmm-rs ({where})"
    if impl == "ours" and not is_ours:
        return f"--impl ours but the rmm on the path is not rmm-rs ({where}, {version})"
    print(f"runner: {impl}: rmm {version} from {where}", file=sys.stderr)
    return None


# ---------------------------------------------------------------------------------------------
# The worker: runs the scenarios named on its stdin, writes protocol lines to its stdout.


class _Baseline:
    """What a worker puts back between scenarios."""

    def __init__(self, gpus):
        import rmm

        self.gpus = gpus
        self.log_level = rmm.get_logging_level()
        self.flush_level = rmm.get_flush_level()

    def restore(self):
        import gc

        import rmm
        import rmm.statistics

        gc.collect()
        if self.gpus > 0:
            import rmm._cuda.gpu as gpu

            for dev in range(self.gpus):
                gpu.setDevice(dev)
                rmm.mr.set_per_device_resource(dev, rmm.mr.CudaMemoryResource())
            gpu.setDevice(0)
        rmm.set_logging_level(self.log_level)
        rmm.set_flush_level(self.flush_level)
        hooks = getattr(rmm.rmm, "_reinitialize_hooks", None)
        if isinstance(hooks, list):
            hooks.clear()
        records = getattr(rmm.statistics.default_profiler_records, "_records", None)
        if records is not None:
            records.clear()
        gc.collect()


def worker_main(impl, gpus, package):
    # Protocol lines go to a private copy of stdout; anything a scenario or the library prints
    # (stdout included, from C too) goes to stderr.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    names = json.load(sys.stdin)
    registry = load_scenarios(package)

    def send(obj):
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    # A worker running one scenario (an isolated one) touches nothing before it; otherwise the
    # state to put back is read before the first scenario.
    baseline = None
    if len(names) > 1:
        try:
            baseline = _Baseline(gpus)
        except Exception as e:  # noqa: BLE001
            print(f"runner: worker cannot read its baseline: {e!r}", file=sys.stderr)
    for i, name in enumerate(names):
        sc = registry[name]
        if i > 0 and baseline is not None:
            try:
                baseline.restore()
            except Exception as e:  # noqa: BLE001
                send({"start": name})
                send({"rec": ["reset-failed", oracle_lib.raised(e)]})
                send({"end": name, "status": "ok", "reason": "", "detail": str(e)})
                continue
        send({"start": name})
        t = oracle_lib.Recorder(lambda entry: send({"rec": entry}), gpus)
        status, reason, detail = "ok", "", ""
        try:
            sc.fn(t)
        except oracle_lib.Skip as e:
            status, reason = "skipped", str(e)
        except BaseException as e:  # noqa: BLE001 - an escaping exception is a fact too
            send({"rec": ["escaped", oracle_lib.raised(e)]})
            detail = f"{type(e).__name__}: {e}"
        send({"end": name, "status": status, "reason": reason, "detail": detail})
    proto.close()


# ---------------------------------------------------------------------------------------------
# The parent: groups scenarios, starts workers, assembles the JSON lines.


def run_group(impl, gpus, names, timeout, stderr_file, package):
    """Run ``names`` in workers until each has a result; yields result dicts in order."""
    remaining = list(names)
    while remaining:
        p = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", "--impl", impl,
             "--gpus", str(gpus), "--scenarios", package],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr_file,
        )
        p.stdin.write(json.dumps(remaining).encode())
        p.stdin.close()
        sel = selectors.DefaultSelector()
        sel.register(p.stdout, selectors.EVENT_READ)
        current, trace, buf = None, [], b""
        deadline = time.monotonic() + timeout
        ended = None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                p.kill()
                ended = ["timeout", f"no result within {timeout} s"]
                break
            if not sel.select(timeout=min(left, 5)):
                continue
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                msg = json.loads(line)
                if "start" in msg:
                    current, trace = msg["start"], []
                    deadline = time.monotonic() + timeout
                elif "rec" in msg:
                    trace.append(msg["rec"])
                elif "end" in msg:
                    yield {"scenario": msg["end"], "status": msg["status"],
                           "reason": msg["reason"], "trace": trace, "detail": msg["detail"]}
                    remaining.remove(msg["end"])
                    current, trace = None, []
            if not remaining:
                break
        sel.close()
        p.stdout.close()
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        if not remaining:
            if rc != 0:
                print(f"runner {impl}: the worker exited with {rc} after its last scenario "
                      f"({names[-1]})", flush=True)
            return
        if current is None:
            # Died between scenarios (or before the first): the next one takes the blame.
            current, trace = remaining[0], []
        if ended is None:
            ended = ["crash", f"worker exited with {rc}"]
        trace.append(ended)
        yield {"scenario": current, "status": "ok", "reason": "", "trace": trace,
               "detail": ended[1]}
        remaining.remove(current)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--impl", choices=["rmm", "ours"], required=True)
    ap.add_argument("--out")
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--min-gpus", type=int, default=0)
    ap.add_argument("--only", action="append", default=[],
                    help="keep scenarios whose name matches this glob or contains it (repeatable)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per scenario")
    ap.add_argument("--list", action="store_true", help="print the scenario names and stop")
    ap.add_argument("--scenarios", default=os.path.join(HERE, "scenarios"),
                    help="the scenario package's folder (default: scenarios/ beside this file)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        worker_main(args.impl, args.gpus, args.scenarios)
        return 0

    registry = load_scenarios(args.scenarios)
    chosen = [
        sc for sc in registry.values()
        if sc.needs_gpus >= args.min_gpus
        and (not args.only or any(fnmatch.fnmatch(sc.name, p) or p in sc.name for p in args.only))
    ]
    if args.list:
        for sc in chosen:
            print(f"{sc.name} (needs {sc.needs_gpus} GPU{'s' if sc.needs_gpus != 1 else ''})")
        return 0
    if not args.out:
        ap.error("--out is required")

    found, gpu_reason = detect_gpus()
    gpus = min(args.gpus, found)
    import_reason = check_import(args.impl)

    def skip_reason(sc):
        if import_reason:
            return import_reason
        if sc.needs_gpus > 0 and gpus == 0:
            return gpu_reason or "no GPU"
        if sc.needs_gpus > gpus:
            return f"needs {sc.needs_gpus} GPUs; this run has {gpus} (found {found})"
        return None

    groups, order = {}, []
    results = {}
    for sc in chosen:
        why = skip_reason(sc)
        if why:
            results[sc.name] = {"scenario": sc.name, "status": "skipped", "reason": why,
                                "trace": []}
            continue
        key = sc.name if sc.isolate else sc.module
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(sc.name)

    stderr_path = (args.out[:-6] if args.out.endswith(".jsonl") else args.out) + ".stderr.log"
    started = time.monotonic()
    with open(stderr_path, "wb") as err:
        for key in order:
            for res in run_group(args.impl, gpus, groups[key], args.timeout, err,
                                 os.path.abspath(args.scenarios)):
                results[res["scenario"]] = res
    with open(args.out, "w") as out:
        for sc in chosen:
            out.write(json.dumps(results[sc.name]) + "\n")
    counts = {}
    for r in results.values():
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    crashed = sum(1 for r in results.values() if r["trace"] and r["trace"][-1][0] in
                  ("crash", "timeout"))
    print(f"runner {args.impl}: {len(chosen)} scenarios, {counts.get('ok', 0)} ran, "
          f"{counts.get('skipped', 0)} skipped, {crashed} crashed or timed out, "
          f"{time.monotonic() - started:.0f} s -> {args.out}")
    if import_reason or (gpus == 0 and any(sc.needs_gpus > 0 for sc in chosen)):
        print(f"runner {args.impl}: skipped: {import_reason or gpu_reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
