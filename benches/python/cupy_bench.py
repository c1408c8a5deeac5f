#!/usr/bin/env python3
"""CuPy allocation loops through rmm's pool against CuPy's own pools.

    python benches/python/cupy_bench.py --impl-name rmm-rs
    python benches/python/cupy_bench.py --modes rmm_pool,rmm_stack --impl-name rmm-26.10

Modes (the allocator and the current device resource are swapped between timed runs, in one
process):
  rmm_pool         rmm.mr.PoolMemoryResource(CudaMemoryResource(), initial_pool_size=
                   --initial-pool-size) set current, cupy.cuda.set_allocator(rmm_cupy_allocator);
                   rows labelled by --impl-name.
  rmm_stack        Dask-CUDA's usual stack over that same pool: StatisticsResourceAdaptor over
                   TrackingResourceAdaptor over the pool, set current, rmm_cupy_allocator; only
                   the cupy_alloc workload, whose rows it writes as ``cupy_alloc_stack`` (labelled
                   by --impl-name), so that one run gives the stack's cost over the bare pool.
  cupy_pool        cupy.cuda.MemoryPool().malloc; rows labelled "cupy-MemoryPool".
  cupy_async_pool  cupy.cuda.MemoryAsyncPool().malloc (cudaMallocAsync); rows labelled
                   "cupy-MemoryAsyncPool".
Workloads, for each n in --sizes: ``cupy_empty``, ``cupy.empty(n)`` (float64) created and dropped
in a loop; ``cupy_alloc``, ``cupy.cuda.alloc(8 * n)`` (the current allocator's MemoryPointer alone,
without CuPy's array) created and dropped. The modes of one case are timed in turns (each of
--runs rounds times every mode once, for the same iteration count), so that a shared machine's
drifting speed slows all alike: microseconds per iteration, median (and fastest, slowest) of the
rounds.
"""

import sys

import bench_common as bc

MODES = ("rmm_pool", "rmm_stack", "cupy_pool", "cupy_async_pool")
BASELINE = {"cupy_pool": "cupy-MemoryPool", "cupy_async_pool": "cupy-MemoryAsyncPool"}
# Modes that run only some workloads, and the workload name their rows carry.
ONLY = {"rmm_stack": {"cupy_alloc": "cupy_alloc_stack"}}


def install(mode, args, cupy, shared):
    """Makes ``mode``'s allocator (the rmm modes share one pool, kept in ``shared``); returns the
    rows' impl label and a function that makes it current (the allocator, and for the rmm modes
    the current device resource)."""
    if mode in ("rmm_pool", "rmm_stack"):
        import rmm
        from rmm.allocators.cupy import rmm_cupy_allocator

        if "pool" not in shared:
            shared["pool"] = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(),
                                                       initial_pool_size=args.initial_pool_size)
        mr = shared["pool"]
        if mode == "rmm_stack":
            mr = rmm.mr.StatisticsResourceAdaptor(rmm.mr.TrackingResourceAdaptor(mr))
        shared[mode] = mr

        def select(mr=mr):
            rmm.mr.set_current_device_resource(mr)
            cupy.cuda.set_allocator(rmm_cupy_allocator)

        return bc.impl_name(args), select
    pool = cupy.cuda.MemoryPool() if mode == "cupy_pool" else cupy.cuda.MemoryAsyncPool()
    shared[mode] = pool
    return BASELINE[mode], lambda: cupy.cuda.set_allocator(pool.malloc)


def main():
    p = bc.parser(__doc__.split("\n")[0])
    p.add_argument("--modes", default=",".join(MODES), help="comma separated (default: all three)")
    p.add_argument("--sizes", default="128,16384,1048576,33554432",
                   help="element counts of cupy.empty(n), float64 (default 1 KiB to 256 MiB)")
    p.add_argument("--initial-pool-size", default="1GiB", help="rmm_pool's initial_pool_size")
    p.set_defaults(runs=21)
    args = p.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    sizes = [int(s) for s in args.sizes.split(",") if s]
    bad = [m for m in modes if m not in MODES]
    if bad:
        sys.exit(f"unknown modes {bad} (known: {', '.join(MODES)})")
    bc.header(args)
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        for m in modes:
            bc.fail(BASELINE.get(m) or bc.impl_name(args), "cupy_empty", f"mode={m}", e)
        return 1
    status, installed, keep = 0, {}, {}
    for mode in modes:
        try:
            installed[mode] = install(mode, args, cupy, keep)
        except Exception as e:
            bc.fail(BASELINE.get(mode) or bc.impl_name(args), "cupy_empty", f"mode={mode}", e)
            status = 1
    if not installed:
        return status
    workloads = (("cupy_empty", cupy.empty), ("cupy_alloc", lambda n: cupy.cuda.alloc(8 * n)))
    budget = args.budget / max(len(workloads) * len(sizes), 1)
    sync = cupy.cuda.get_current_stream().synchronize
    for workload, make in workloads:
        # The modes of this workload, each with the (impl, workload) its rows carry.
        labels = {mode: (impl, ONLY[mode][workload] if mode in ONLY else workload)
                  for mode, (impl, _) in installed.items() if mode not in ONLY or workload in ONLY[mode]}
        for n in sizes:
            def body(k, n=n, make=make):
                for _ in range(k):
                    make(n)

            cases = {mode: (installed[mode][1], body) for mode in labels}
            try:
                results = bc.interleaved_loops_us(cases, budget, args.runs, sync)
                for mode, result in results.items():
                    bc.emit_loop(*labels[mode], f"bytes={8 * n}", result)
            except Exception as e:
                for impl, name in labels.values():
                    bc.fail(impl, name, f"bytes={8 * n}", e)
                status = 1
    cupy.cuda.set_allocator(None)
    return status


if __name__ == "__main__":
    sys.exit(main())
