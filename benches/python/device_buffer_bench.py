#!/usr/bin/env python3
"""rmm.DeviceBuffer created and freed over a pool.

    python benches/python/device_buffer_bench.py --impl-name rmm-rs

The pool, rmm.mr.PoolMemoryResource(CudaMemoryResource(), initial_pool_size=--initial-pool-size),
is set as the current device resource; workload ``device_buffer``: ``rmm.DeviceBuffer(size=n)``
created and dropped in a loop on the default stream, for each n in --sizes: microseconds per
iteration, median (and fastest, slowest) of --runs timed runs, ending with a synchronize.
``--host`` (our package only) puts the pool over a host-memory resource: checks the script
without a GPU; its rows are labelled with "+host" and compare with nothing.
"""

import sys

import bench_common as bc


def main():
    p = bc.parser(__doc__.split("\n")[0])
    p.add_argument("--sizes", default="8,1024,1048576,67108864", help="bytes (default 8 B to 64 MiB)")
    p.add_argument("--initial-pool-size", default="1GiB", help="the pool's initial_pool_size")
    p.add_argument("--host", action="store_true", help="the pool over host memory (our package only)")
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    impl = bc.impl_name(args) + ("+host" if args.host else "")
    bc.header(args)
    try:
        import rmm

        if args.host:
            import rmm._native as native

            upstream, sync = native._HostMemoryResource(), lambda: None
        else:
            from rmm.pylibrmm.stream import DEFAULT_STREAM

            upstream, sync = rmm.mr.CudaMemoryResource(), DEFAULT_STREAM.synchronize
        pool = rmm.mr.PoolMemoryResource(upstream, initial_pool_size=args.initial_pool_size)
        rmm.mr.set_current_device_resource(pool)
    except Exception as e:
        bc.fail(impl, "device_buffer", "setup", e)
        return 1
    budget = args.budget / max(len(sizes), 1)
    status = 0
    for n in sizes:
        def body(k, n=n):
            for _ in range(k):
                rmm.DeviceBuffer(size=n)

        try:
            bc.emit_loop(impl, "device_buffer", f"bytes={n}", bc.loop_us(body, budget, args.runs, sync))
        except Exception as e:
            bc.fail(impl, "device_buffer", f"bytes={n}", e)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
