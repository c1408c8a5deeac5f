"""Dask over every GPU of this machine, each worker on an RMM pool of ours.

Dask-CUDA's ``LocalCUDACluster`` starts one worker per GPU and, given ``rmm_pool_size``, calls
``rmm.reinitialize(pool_allocator=True, ...)`` on each (with our package installed as ``rmm``, that
is our ``PoolMemoryResource``), ``rmm_track_allocations`` adds a ``TrackingResourceAdaptor`` over it,
and ``rmm_allocator_external_lib_list=["cupy"]`` points CuPy at it.
The example then

1. builds a CuPy-backed Dask array and computes ``(x + x.T).sum(axis=0)``, a matrix product and a
   shuffle of its rows across the workers (``dask.array.shuffle``, which moves device buffers
   between workers), and checks all three against NumPy on the same data;
2. prints, from each worker (``client.run``), its resource stack, pool size, the bytes
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


def gpu_count() -> int:
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

    chain, mr, pool_size, counts = [], rmm.mr.get_current_device_resource(), None, None
    while True:
        chain.append(type(mr).__name__)
        if isinstance(mr, rmm.mr.PoolMemoryResource):
            pool_size = mr.pool_size()
        if isinstance(mr, rmm.mr.StatisticsResourceAdaptor) and counts is None:
            counts = mr.allocation_counts
        if not hasattr(mr, "upstream_mr"):
            break
        mr = mr.upstream_mr
    return {
        "rmm module": rmm.__file__,
        "stack": " -> ".join(chain),
        "pool_size": pool_size,
        "diagnostics": diagnostics.real_time(),
        "peak_bytes": counts.peak_bytes if counts else None,
        "current_bytes": counts.current_bytes if counts else None,
    }


def cluster_options(pool_size: str) -> dict:
    """LocalCUDACluster's options here: every GPU, each worker on an RMM pool of ``pool_size``."""
    return dict(
        rmm_pool_size=pool_size,
        rmm_track_allocations=True,  # so that distributed's diagnostics report bytes in use
        rmm_allocator_external_lib_list=["cupy"],
        dashboard_address=None,
    )


def host_block(seed: int, n: int, chunk: int, i: int, j: int):
    """Block (i, j) of the example's array, made on the host from (seed, i, j) alone, so that a
    worker and the client make the same numbers independently. Column 0 holds each row's number:
    a key that tells where a row went after the shuffle."""
    import numpy as np

    rows, cols = min(chunk, n - i * chunk), min(chunk, n - j * chunk)
    block = np.random.default_rng([seed, i, j]).standard_normal((rows, cols), dtype=np.float32)
    if j == 0:
        block[:, 0] = np.arange(i * chunk, i * chunk + rows)
    return block


def device_block(seed: int, n: int, chunk: int, block_info=None):
    """The worker's copy of a block, in device memory (from the worker's RMM pool, through CuPy)."""
    import cupy

    i, j = block_info[None]["chunk-location"]
    return cupy.asarray(host_block(seed, n, chunk, i, j))


def make_data(n: int, chunk: int, seed: int = 42):
    """An ``n`` x ``n`` float32 array: made on the workers as a CuPy-backed Dask array (persisted),
    and on the client as a NumPy array for the checks; and the shuffle's groups of rows (one
    output chunk each)."""
    import cupy
    import dask.array as da
    import numpy as np
    from distributed import wait

    blocks = -(-n // chunk)
    chunks = tuple(min(chunk, n - k * chunk) for k in range(blocks))
    x = da.map_blocks(device_block, seed, n, chunk, chunks=(chunks, chunks), dtype=np.float32,
                      meta=cupy.empty((0, 0), dtype=cupy.float32)).persist()
    host = np.block([[host_block(seed, n, chunk, i, j) for j in range(blocks)] for i in range(blocks)])
    wait(x)
    perm = np.random.default_rng(seed).permutation(n)
    groups = [perm[k : k + chunk].tolist() for k in range(0, n, chunk)]
    return host, x, groups


def compute(x, chunk: int, groups):
    """The computation, on the workers: ``(x + x.T).sum(axis=0)``, the product of the first
    ``chunk`` columns with themselves, and a shuffle of rows between chunks (each output chunk
    gathers rows that other workers hold, so CuPy buffers from our pools travel between workers).
    Returns the three results as CuPy arrays."""
    import dask

    return dask.compute((x + x.T).sum(axis=0), x[:, :chunk].T @ x[:, :chunk], x.shuffle(groups, axis=0))


def close(got, want, magnitude, what: str) -> None:
    """Asserts ``got`` is ``want`` up to 1e-4 of the terms' magnitudes (float32 rounding)."""
    import numpy as np

    off = np.abs(got - want) - 1e-4 * magnitude - 1e-3
    worst = np.unravel_index(off.argmax(), off.shape)
    assert (off <= 0).all(), f"{what}: {int((off > 0).sum())} elements off, worst at {worst}"


def check(results, host, chunk: int, groups) -> None:
    """Checks ``compute``'s results against NumPy on the same data."""
    import cupy
    import numpy as np

    sums, product, shuffled = results
    for r in results:
        assert isinstance(r, cupy.ndarray), type(r)
    # Float32 sums round differently in another order: each result may differ from NumPy's by a
    # small part of the sum of its terms' magnitudes (the row keys make some terms large).
    absolute = np.abs(host)
    close(cupy.asnumpy(sums), (host + host.T).sum(axis=0), (absolute + absolute.T).sum(axis=0), "(x + x.T).sum")
    a, abs_a = host[:, :chunk], absolute[:, :chunk]
    close(cupy.asnumpy(product), a.T @ a, abs_a.T @ abs_a, "x[:, :chunk].T @ x[:, :chunk]")
    got = cupy.asnumpy(shuffled)
    keys = got[:, 0].astype(np.int64)
    np.testing.assert_array_equal(got[np.argsort(keys)], host)  # every row moved intact
    offset = 0
    for group in groups:  # each group's rows end up together, in one output chunk
        assert sorted(keys[offset : offset + len(group)]) == sorted(group)
        offset += len(group)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool-size", default="2GiB", help="each worker's initial RMM pool size")
    parser.add_argument("--n", type=int, default=4096, help="the square array's side")
    parser.add_argument("--chunk", type=int, default=1024, help="the chunk side")
    args = parser.parse_args()

    try:
        import cupy  # noqa: F401
        import dask.array  # noqa: F401
        from dask_cuda import LocalCUDACluster
        from distributed import Client
    except ImportError as e:
        _skip(f"missing {e.name}")
    if gpu_count() == 0:
        _skip("no CUDA device")

    start = time.perf_counter()
    with LocalCUDACluster(**cluster_options(args.pool_size)) as cluster, Client(cluster) as client:
        n_workers = len(cluster.worker_spec)
        client.wait_for_workers(n_workers)
        client.run(add_statistics)
        print(f"{n_workers} workers, pool {args.pool_size} each")

        host, x, groups = make_data(args.n, args.chunk)
        check(compute(x, args.chunk, groups), host, args.chunk, groups)
        print("array computation and shuffle match NumPy")

        # Each worker's pool, as distributed and our statistics see it.
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
