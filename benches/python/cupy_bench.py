#!/usr/bin/env python3
"""CuPy allocation loops through rmm's pool against CuPy's own pools.

    python benches/python/cupy_bench.py --impl-name rmm-rs
    python benches/python/cupy_bench.py --modes rmm_pool --impl-name rmm-26.10

Modes (the allocator is swapped with cupy.cuda.set_allocator between timed runs, in one process):
  rmm_pool         rmm.mr.PoolMemoryResource(CudaMemoryResource(), initial_pool_size=
                   --initial-pool-size) set current, cupy.cuda.set_allocator(rmm_cupy_allocator);
                   rows labelled by --impl-name.
  rmm_stack        the same pool under a TrackingResourceAdaptor under a
                   StatisticsResourceAdaptor (Dask-CUDA's stack) set current; rows labelled
                   "<impl-name>-stats-tracking".
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


def install(mode, args, cupy):
    """The allocator of ``mode`` (creating its pool); returns the rows' impl label, the allocator
    to pass to cupy.cuda.set_allocator, and the rmm resource to make current first (or None)."""
    if mode in ("rmm_pool", "rmm_stack"):
        import rmm
        from rmm.allocators.cupy import rmm_cupy_allocator

        pool = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(),
                                         initial_pool_size=args.initial_pool_size)
        if mode == "rmm_pool":
            return bc.impl_name(args), rmm_cupy_allocator, pool
        tracking = rmm.mr.TrackingResourceAdaptor(pool, capture_stacks=False)
        stack = rmm.mr.StatisticsResourceAdaptor(tracking)
        return f"{bc.impl_name(args)}-stats-tracking", rmm_cupy_allocator, stack
    pool = cupy.cuda.MemoryPool() if mode == "cupy_pool" else cupy.cuda.MemoryAsyncPool()
    return BASELINE[mode], pool.malloc, None


def use(cupy, allocator, resource):
    """Makes ``allocator`` CuPy's, and ``resource`` (when one) the current rmm resource."""
    if resource is not None:
        import rmm

        rmm.mr.set_current_device_resource(resource)
    cupy.cuda.set_allocator(allocator)


def main():
    p = bc.parser(__doc__.split("\n")[0])
    p.add_argument("--modes", default=",".join(MODES), help="comma separated (default: all)")
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
    status, installed = 0, {}
    for mode in modes:
        try:
            impl, allocator, resource = install(mode, args, cupy)
            installed[impl] = (allocator, resource)
        except Exception as e:
            bc.fail(BASELINE.get(mode) or bc.impl_name(args), "cupy_empty", f"mode={mode}", e)
            status = 1
    if not installed:
        return status
    workloads = (("cupy_empty", cupy.empty), ("cupy_alloc", lambda n: cupy.cuda.alloc(8 * n)))
    budget = args.budget / max(len(workloads) * len(sizes), 1)
    sync = cupy.cuda.get_current_stream().synchronize
    for workload, make in workloads:
        for n in sizes:
            def body(k, n=n, make=make):
                for _ in range(k):
                    make(n)

            cases = {impl: (lambda a=allocator, r=resource: use(cupy, a, r), body)
                     for impl, (allocator, resource) in installed.items()}
            try:
                results = bc.interleaved_loops_us(cases, budget, args.runs, sync)
                for impl, result in results.items():
                    bc.emit_loop(impl, workload, f"bytes={8 * n}", result)
            except Exception as e:
                for impl in installed:
                    bc.fail(impl, workload, f"bytes={8 * n}", e)
                status = 1
    cupy.cuda.set_allocator(None)
    return status


if __name__ == "__main__":
    sys.exit(main())
