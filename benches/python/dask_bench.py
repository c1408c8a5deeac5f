#!/usr/bin/env python3
"""The Dask example's computation on every GPU of this machine, each worker on rmm's pool.

    PYTHONPATH=<site of an rmm> python benches/python/dask_bench.py --impl-name rmm-rs

A ``LocalCUDACluster`` (one worker per GPU, ``rmm_pool_size=--pool-size``, tracking on, CuPy on
RMM: ``cluster_options`` of examples/python/dask_two_gpus.py) runs that example's ``compute`` on a
persisted --n x --n float32 array once to warm up, then --repeats timed times; the results of
the first and the last run are checked against NumPy, outside the timing. The pools start at
--pool-size and grow as the computation needs: a pool never shrinks, so its size at the end is
its peak. Rows
(``impl,dask_example,param,value,unit``): wall_s (median of the timed runs; wall_s_min,
wall_s_max), then per worker and for all workers together ``pool_size_end_bytes`` and
``peak_bytes`` (the most bytes allocated at once, from a StatisticsResourceAdaptor).

With --virtual-pool each worker's pool is replaced, before the first run, by a
``VirtualPoolMemoryResource`` (``rmm.reinitialize(virtual_pool_allocator=True)`` on the worker's
device, mapping --pool-size at once, under the tracking adaptor Dask-CUDA puts there): the rows
then also give, per worker and for all workers, ``mapped_end_bytes`` (physical memory mapped at the
end: its peak, as nothing is released during the runs), ``reserved_bytes`` (addresses reserved)
and ``mapped_over_peak_live`` (mapped at the end over the most bytes allocated at once).

With --log DIR each worker also writes every allocation and free, on top of its stack, to
DIR/worker-<i>.csv (RMM's log format), which ``rmm_replay`` replays against any pool on the host.
"""

import pathlib
import statistics
import sys
import time

import bench_common as bc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"))


def main():
    p = bc.parser(__doc__.split("\n")[0])
    p.add_argument("--pool-size", default="256MiB", help="each worker's initial pool size (default 256MiB)")
    p.add_argument("--n", type=int, default=16384, help="the square array's side (default 16384)")
    p.add_argument("--chunk", type=int, default=2048, help="the chunk side (default 2048)")
    p.add_argument("--repeats", type=int, default=3, help="timed computations (default 3)")
    p.add_argument(
        "--profile",
        action="store_true",
        help="also print where the timed runs spent their time: the workers' task stream summed by "
        "kind (compute, transfer) and task name, as comment lines",
    )
    p.add_argument("--log", metavar="DIR", help="write each worker's allocation log to DIR/worker-<i>.csv")
    p.add_argument(
        "--virtual-pool",
        action="store_true",
        help="run the workers over rmm.mr.VirtualPoolMemoryResource (rmm-rs) instead of the pool, and "
        "report the memory it mapped against the peak of live bytes",
    )
    p.add_argument(
        "--alloc-time",
        action="store_true",
        help="time every allocation and free of CuPy's allocator on the workers and report their sums",
    )
    args = p.parse_args()
    bc.header(args)
    impl = bc.impl_name(args)
    param = f"n={args.n} chunk={args.chunk} pool={args.pool_size}"
    try:
        import cloudpickle
        import alloc_timer
        import dask_two_gpus as example
        from dask_cuda import LocalCUDACluster
        from distributed import Client
    except ImportError as e:
        bc.row(impl, "dask_example", param, "skipped", f"missing {e.name}")
        return 0
    # The workers cannot import the example (it is not on their path): its functions travel whole.
    cloudpickle.register_pickle_by_value(example)
    cloudpickle.register_pickle_by_value(alloc_timer)
    if example.gpu_count() == 0:
        bc.row(impl, "dask_example", param, "skipped", "no CUDA device")
        return 0
    with LocalCUDACluster(**example.cluster_options(args.pool_size)) as cluster, Client(cluster) as client:
        workers = len(cluster.worker_spec)
        client.wait_for_workers(workers)
        if args.virtual_pool:
            client.run(use_virtual_pool, args.pool_size)
            param = f"{param} virtual_pool"
        client.run(example.add_statistics)
        if args.log:
            add_logs(client, pathlib.Path(args.log).resolve())
        if args.alloc_time:
            client.run(alloc_timer.install)
        param = f"workers={workers} {param}"
        host, x, groups = example.make_data(args.n, args.chunk)
        times = []
        stream = None
        for run in range(args.repeats + 1):
            if run == 1 and args.profile:
                from distributed import get_task_stream

                stream = get_task_stream(client)
                stream.__enter__()
            t0 = time.perf_counter()
            results = example.compute(x, args.chunk, groups)
            if run > 0:  # run 0 warms up: imports, kernels, first growth of the pools
                times.append(time.perf_counter() - t0)
            if run == args.repeats and stream is not None:
                stream.__exit__(None, None, None)
            if run in (0, args.repeats):  # the checks take longer than the computation
                example.check(results, host, args.chunk, groups)
            del results
            if run == 0 and args.alloc_time:
                client.run(alloc_timer.reset)
        if stream is not None:
            print_task_stream(impl, stream.data, sum(times))
        bc.row(impl, "dask_example", param, statistics.median(times), "wall_s")
        bc.row(impl, "dask_example", param, min(times), "wall_s_min")
        bc.row(impl, "dask_example", param, max(times), "wall_s_max")
        if args.log:
            client.run(flush_log)
        reports = run_on_workers(client, example.worker_report)
        for i, report in enumerate(reports):
            bc.comment(f"worker {i}: {report['stack']}, rmm from {report['rmm module']}")
        for who, chosen in worker_groups(reports):
            for key, unit in (("pool_size", "pool_size_end_bytes"), ("peak_bytes", "peak_bytes")):
                bc.row(impl, "dask_example", f"{param} {who}", float(sum(r[key] or 0 for r in chosen)), unit)
        if args.virtual_pool:
            report_virtual_pools(client, impl, param, reports)
        if args.alloc_time:
            report_alloc_times(client, impl, param, sum(times))
    return 0


def run_on_workers(client, function):
    """``function`` run on every worker (``client.run``), its answers in worker address order."""
    return [answer for _, answer in sorted(client.run(function).items())]


def worker_groups(items):
    """(label, items) for each worker's item alone, then for all of them: the rows' groups."""
    return [(f"worker={i}", [item]) for i, item in enumerate(items)] + [("all workers", list(items))]


def report_alloc_times(client, impl, param, wall_s):
    """Rows of each worker's and all workers' time in CuPy's allocator over the timed runs."""
    import alloc_timer

    clocks = run_on_workers(client, alloc_timer.report)
    for who, chosen in worker_groups(clocks):
        alloc_s, free_s = sum(c["alloc_s"] for c in chosen), sum(c["free_s"] for c in chosen)
        bc.row(impl, "dask_example", f"{param} {who}", float(sum(c["calls"] for c in chosen)), "alloc_calls")
        bc.row(impl, "dask_example", f"{param} {who}", alloc_s, "alloc_s")
        bc.row(impl, "dask_example", f"{param} {who}", free_s, "free_s")
        bc.row(impl, "dask_example", f"{param} {who}", (alloc_s + free_s) / wall_s, "allocator_share")
    for i, c in enumerate(clocks):
        bc.comment(f"worker {i}: {c['calls']} allocations on {c['threads']} threads")


def use_virtual_pool(pool_size, dask_worker=None):
    """Replaces this worker's resource stack by a virtual pool on its device mapping ``pool_size``
    at once, under a TrackingResourceAdaptor as Dask-CUDA's ``rmm_track_allocations`` makes."""
    import rmm
    from dask.utils import parse_bytes

    device = rmm._cuda.gpu.getDevice()
    rmm.reinitialize(virtual_pool_allocator=True, initial_pool_size=parse_bytes(pool_size), devices=device)
    rmm.mr.set_current_device_resource(rmm.mr.TrackingResourceAdaptor(rmm.mr.get_current_device_resource()))


def virtual_pool_report(dask_worker=None):
    """Bytes mapped and reserved by this worker's virtual pool (None where there is none)."""
    import rmm

    mr = rmm.mr.get_current_device_resource()
    while not isinstance(mr, rmm.mr.VirtualPoolMemoryResource):
        if not hasattr(mr, "upstream_mr"):
            return {"mapped": None, "reserved": None}
        mr = mr.upstream_mr
    return {"mapped": mr.mapped_bytes(), "reserved": mr.reserved_bytes()}


def report_virtual_pools(client, impl, param, reports):
    """Rows of each worker's and all workers' mapped and reserved bytes, and mapped over peak."""
    pools = run_on_workers(client, virtual_pool_report)
    for who, chosen in worker_groups(list(zip(pools, reports))):
        mapped = float(sum(pool["mapped"] or 0 for pool, _ in chosen))
        peak = float(sum(report["peak_bytes"] or 0 for _, report in chosen))
        bc.row(impl, "dask_example", f"{param} {who}", mapped, "mapped_end_bytes")
        reserved = float(sum(pool["reserved"] or 0 for pool, _ in chosen))
        bc.row(impl, "dask_example", f"{param} {who}", reserved, "reserved_bytes")
        if peak > 0:
            bc.row(impl, "dask_example", f"{param} {who}", mapped / peak, "mapped_over_peak_live")


def add_logs(client, folder):
    """Puts a LoggingResourceAdaptor writing to ``folder/worker-<i>.csv`` on top of each worker's
    stack, workers numbered in address order."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, address in enumerate(sorted(client.scheduler_info()["workers"])):
        client.run(add_log, str(folder / f"worker-{i}.csv"), workers=[address])


def add_log(path, dask_worker=None):
    """This worker's current resource, wrapped in a LoggingResourceAdaptor writing to ``path``."""
    import rmm

    rmm.mr.set_current_device_resource(rmm.mr.LoggingResourceAdaptor(rmm.mr.get_current_device_resource(), path))


def flush_log(dask_worker=None):
    """Writes out what the worker's LoggingResourceAdaptor holds."""
    import rmm

    rmm.mr.get_current_device_resource().flush()


def print_task_stream(impl, tasks, wall_s):
    """Comment lines: seconds of the timed runs' tasks, summed by kind and task name, all workers'
    threads together, against the wall time."""
    from collections import defaultdict

    total = defaultdict(float)
    count = defaultdict(int)
    for task in tasks:
        name = task["key"][0] if isinstance(task["key"], tuple) else str(task["key"])
        name = name.split("-")[0]
        for part in task.get("startstops", ()):
            kind = part["action"]
            total[(kind, name)] += part["stop"] - part["start"]
            count[(kind, name)] += 1
    bc.comment(f"{impl} task stream over {wall_s:.2f} s of timed runs (s summed over all workers' threads):")
    for kind in sorted({k for k, _ in total}):
        bc.comment(f"  {kind}: {sum(v for (k, _), v in total.items() if k == kind):.3f} s")
    for (kind, name), v in sorted(total.items(), key=lambda kv: -kv[1])[:12]:
        bc.comment(f"    {kind:10s} {name:32s} {v:8.3f} s in {count[(kind, name)]} parts")


if __name__ == "__main__":
    sys.exit(main())
