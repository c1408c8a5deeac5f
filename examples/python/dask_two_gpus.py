"""Dask over every GPU of this machine, each worker on an RMM pool of ours.

Dask-CUDA's ``LocalCUDACluster`` starts one worker per GPU and, given ``rmm_pool_size``, calls
``rmm.reinitialize(pool_allocator=True, ...)`` on each (with our package installed as ``rmm``, that
is our ``PoolMemoryResource``), ``rmm_track_allocations`` adds a ``TrackingResourceAdaptor`` over it,
and ``rmm_allocator_external_lib_list=["cupy"]`` points CuPy at it.
The example then

1. builds a CuPy-backed Dask array, computes ``(x + x.T).sum(axis=0)`` and a matrix product, and
   checks both against NumPy on the same data;
2. shuffles the rows of a CuPy-backed array across the workers (``dask.array.shuffle``), which moves
   device buffers between workers, and checks the permuted result;
3. prints, from each worker (``client.run``), its resource stack, pool size, the bytes
   ``distributed.diagnostics.rmm`` reports, and the peak counted by a ``StatisticsResourceAdaptor``.

Run: ``python examples/python/dask_two_gpus.py [--pool-size 4GiB] [--n 8192]``. It exits 0 with a
``SKIP`` line where there is no GPU or no ``dask_cuda``/``cupy``.
"""

from __future__ import annotations

import argparse
import sys
import time


def _skip(reason: str) -> None:
    print(f"SKIP dask_two_gpus: {reason}")
    sys.exit(0)


def _gpu_count() -> int:
    """CUDA devices visible to our ``rmm`` (0 without a driver)."""
    from rmm._cuda.gpu import getDeviceCount

    try:
        return getDeviceCount()
    except Exception:
        return 0


def add_statistics(dask_worker=None) -> None:
    """Puts a StatisticsResourceAdaptor over the worker's pool, to report its peak."""
    import rmm

    top = rmm.mr.get_current_device_resource()
    if not isinstance(top, rmm.mr.StatisticsResourceAdaptor):
        rmm.mr.set_current_device_resource(rmm.mr.StatisticsResourceAdaptor(top))


def worker_report(dask_worker=None) -> dict:
    """This worker's resource stack, pool size and diagnostics, read through our ``rmm``."""
    import rmm
    from distributed.diagnostics import rmm as diagnostics

    top = rmm.mr.get_current_device_resource()
    chain, mr, pool_size = [], top, None
    while True:
        chain.append(type(mr).__name__)
        if isinstance(mr, rmm.mr.PoolMemoryResource):
            pool_size = mr.pool_size()
        if not hasattr(mr, "upstream_mr"):
            break
        mr = mr.upstream_mr
    counts = top.allocation_counts if isinstance(top, rmm.mr.StatisticsResourceAdaptor) else None
    return {
        "rmm module": rmm.__file__,
        "stack": " -> ".join(chain),
        "pool_size": pool_size,
        "diagnostics": diagnostics.real_time(),
        "peak_bytes": counts.peak_bytes if counts else None,
        "current_bytes": counts.current_bytes if counts else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool-size", default="2GiB", help="each worker's initial RMM pool size")
    parser.add_argument("--n", type=int, default=4096, help="the square array's side")
    parser.add_argument("--chunk", type=int, default=1024, help="the chunk side")
    args = parser.parse_args()

    try:
        import cupy  # noqa: F401
        import dask.array as da
        import numpy as np
        from dask_cuda import LocalCUDACluster
        from distributed import Client, wait
    except ImportError as e:
        _skip(f"missing {e.name}")
    if _gpu_count() == 0:
        _skip("no CUDA device")

    import cupy

    start = time.perf_counter()
    with LocalCUDACluster(
        rmm_pool_size=args.pool_size,
        rmm_track_allocations=True,  # so that distributed's diagnostics report bytes in use
        rmm_allocator_external_lib_list=["cupy"],
        dashboard_address=None,
    ) as cluster, Client(cluster) as client:
        n_workers = len(cluster.worker_spec)
        client.wait_for_workers(n_workers)
        client.run(add_statistics)
        print(f"{n_workers} workers, pool {args.pool_size} each")

        # 1. Elementwise, transpose, reduction and matmul on CuPy chunks, checked against NumPy.
        rng = np.random.default_rng(42)
        host = rng.standard_normal((args.n, args.n), dtype=np.float32)
        host[:, 0] = np.arange(args.n)  # a key: which row is where after the shuffle
        x = da.from_array(host, chunks=(args.chunk, args.chunk)).map_blocks(cupy.asarray)
        x = x.persist()
        wait(x)
        got = (x + x.T).sum(axis=0).compute()
        assert isinstance(got, cupy.ndarray), type(got)
        np.testing.assert_allclose(cupy.asnumpy(got), (host + host.T).sum(axis=0), rtol=1e-3, atol=1e-2)
        got = (x[:, : args.chunk].T @ x[:, : args.chunk]).compute()
        ref = host[:, : args.chunk].T @ host[:, : args.chunk]
        np.testing.assert_allclose(cupy.asnumpy(got), ref, rtol=1e-3, atol=1e-1)
        print("array computation matches NumPy")

        # 2. A shuffle of rows between chunks: each output chunk gathers rows held by other
        # workers, so CuPy buffers (allocated from our pools) travel between workers.
        perm = rng.permutation(args.n)
        groups = [perm[i : i + args.chunk].tolist() for i in range(0, args.n, args.chunk)]
        shuffled = x.shuffle(groups, axis=0)
        got = shuffled.compute()
        assert isinstance(got, cupy.ndarray), type(got)
        got = cupy.asnumpy(got)
        keys = got[:, 0].astype(np.int64)
        np.testing.assert_array_equal(got[np.argsort(keys)], host)  # every row moved intact
        offset = 0
        for group in groups:  # each group's rows end up together, in one output chunk
            assert sorted(keys[offset : offset + len(group)]) == sorted(group)
            offset += len(group)
        print("shuffle matches NumPy")

        # 3. Each worker's pool, as distributed and our statistics see it.
        for addr, report in sorted(client.run(worker_report).items()):
            print(f"worker {addr}:")
            for key, value in report.items():
                print(f"  {key}: {value}")
        metrics = {a: w.get("metrics", {}).get("rmm") for a, w in client.scheduler_info()["workers"].items()}
        print(f"scheduler's rmm metrics: {metrics}")
    print(f"wall time: {time.perf_counter() - start:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
