#!/usr/bin/env python3
"""CuPy allocation loops through rmm's pool against CuPy's own pools.

    python benches/python/cupy_bench.py --impl-name rmm-rs
    python benches/python/cupy_bench.py --modes rmm_pool --impl-name rmm-26.10

Modes (the allocator is swapped with cupy.cuda.set_allocator between them, in one process):
  rmm_pool         rmm.mr.PoolMemoryResource(CudaMemoryResource(), initial_pool_size=
                   --initial-pool-size) set current, cupy.cuda.set_allocator(rmm_cupy_allocator);
                   rows labelled by --impl-name.
  cupy_pool        cupy.cuda.MemoryPool().malloc; rows labelled "cupy-MemoryPool".
  cupy_async_pool  cupy.cuda.MemoryAsyncPool().malloc (cudaMallocAsync); rows labelled
                   "cupy-MemoryAsyncPool".
Workload ``cupy_empty``: ``cupy.empty(n)`` (float64) created and dropped in a loop, for each n in
--sizes: microseconds per iteration, median (and fastest, slowest) of --runs timed runs.
"""

import sys

import bench_common as bc

MODES = ("rmm_pool", "cupy_pool", "cupy_async_pool")
BASELINE = {"cupy_pool": "cupy-MemoryPool", "cupy_async_pool": "cupy-MemoryAsyncPool"}


def install(mode, args, cupy):
    """Sets CuPy's allocator for ``mode``; returns the rows' impl label and what keeps it alive."""
    if mode == "rmm_pool":
        import rmm
        from rmm.allocators.cupy import rmm_cupy_allocator

        pool = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(),
                                         initial_pool_size=args.initial_pool_size)
        rmm.mr.set_current_device_resource(pool)
        cupy.cuda.set_allocator(rmm_cupy_allocator)
        return bc.impl_name(args), pool
    pool = cupy.cuda.MemoryPool() if mode == "cupy_pool" else cupy.cuda.MemoryAsyncPool()
    cupy.cuda.set_allocator(pool.malloc)
    return BASELINE[mode], pool


def main():
    p = bc.parser(__doc__.split("\n")[0])
    p.add_argument("--modes", default=",".join(MODES), help="comma separated (default: all three)")
    p.add_argument("--sizes", default="128,16384,1048576,33554432",
                   help="element counts of cupy.empty(n), float64 (default 1 KiB to 256 MiB)")
    p.add_argument("--initial-pool-size", default="1GiB", help="rmm_pool's initial_pool_size")
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
    budget = args.budget / max(len(modes) * len(sizes), 1)
    status = 0
    for mode in modes:
        try:
            impl, keep = install(mode, args, cupy)
        except Exception as e:
            bc.fail(BASELINE.get(mode) or bc.impl_name(args), "cupy_empty", f"mode={mode}", e)
            status = 1
            continue
        sync = cupy.cuda.get_current_stream().synchronize
        for n in sizes:
            def body(k, n=n):
                for _ in range(k):
                    cupy.empty(n)

            try:
                bc.emit_loop(impl, "cupy_empty", f"bytes={8 * n}", bc.loop_us(body, budget, args.runs, sync))
            except Exception as e:
                bc.fail(impl, "cupy_empty", f"bytes={8 * n}", e)
                status = 1
        cupy.cuda.set_allocator(None)
        del keep
    return status


if __name__ == "__main__":
    sys.exit(main())
