"""Our ``rmm`` under Dask: the worker plugin of examples/python/rmm_worker_plugin.py, Dask-CUDA's
``RMMSetup`` and the calls distributed makes (its RMM diagnostics, DeviceBuffer serialization and
sizeof). Without a GPU they run against a host resource set as device 0's resource; the current
device (which needs a driver) is then read as device 0 by patching ``rmm.mr``'s two current-device
functions. The whole module skips, with the reason, where ``distributed`` is not installed."""

import os
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

distributed = pytest.importorskip("distributed", reason="distributed is not installed")

import rmm  # noqa: E402
import rmm._native as native  # noqa: E402
from conftest import GPU_SKIP_REASON  # noqa: E402
from distributed.diagnostics import rmm as rmm_diagnostics  # noqa: E402
from rmm import mr  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python"))
from rmm_worker_plugin import RMMWorkerPlugin  # noqa: E402
from rmm._native import _device_buffer_mr as _buffer_mr  # noqa: E402

MiB = 1 << 20


@pytest.fixture
def device0(monkeypatch):
    """Device 0's resource, restored afterwards. Without a GPU the current device is device 0."""
    before = mr.get_per_device_resource(0)
    if GPU_SKIP_REASON is not None:
        monkeypatch.setattr(mr, "get_current_device_resource", lambda: mr.get_per_device_resource(0))
        monkeypatch.setattr(mr, "set_current_device_resource", lambda r: mr.set_per_device_resource(0, r))
    yield
    mr.set_per_device_resource(0, before)


def host_plugin(**kwargs):
    """The plugin on a host upstream, for device 0, leaving CuPy and PyTorch alone."""
    return RMMWorkerPlugin(upstream=native._HostMemoryResource, device=0, external_libs=(), **kwargs)


def stack(resource):
    """The resource and its upstreams, top first (the walk distributed and Dask-CUDA make)."""
    out = [resource]
    while hasattr(out[-1], "upstream_mr"):
        out.append(out[-1].upstream_mr)
    return out


def test_plugin_rejects_bad_arguments():
    with pytest.raises(ValueError, match="async"):
        RMMWorkerPlugin(managed_memory=True, async_alloc=True)
    with pytest.raises(ValueError, match="release_threshold"):
        RMMWorkerPlugin(initial_pool_size="1MiB", release_threshold="1MiB")
    with pytest.raises(ValueError, match="upstream"):
        RMMWorkerPlugin(async_alloc=True, upstream=native._HostMemoryResource)
    with pytest.raises(ValueError, match="initial_pool_size"):
        RMMWorkerPlugin(maximum_pool_size="1GiB")
    with pytest.raises(ValueError, match="numba"):
        RMMWorkerPlugin(external_libs=("numba",))
    with pytest.raises(ValueError, match="size"):
        RMMWorkerPlugin(initial_pool_size=-1)
    with pytest.raises(ValueError):
        RMMWorkerPlugin(initial_pool_size="lots")


def test_plugin_sizes_are_rounded_to_256():
    plugin = RMMWorkerPlugin(initial_pool_size=1000, maximum_pool_size="1MB", external_libs=())
    assert plugin.initial_pool_size == 1024
    assert plugin.maximum_pool_size == 1_000_192  # 10^6 rounded up to a multiple of 256
    assert RMMWorkerPlugin(initial_pool_size=0).initial_pool_size is None


def test_plugin_builds_the_stack(device0):
    plugin = host_plugin(
        initial_pool_size="1MiB", maximum_pool_size="4MiB", track_allocations=True, statistics=True
    )
    plugin.setup(worker=None)
    top = mr.get_per_device_resource(0)
    assert top is plugin.resource
    kinds = [type(r).__name__ for r in stack(top)]
    assert kinds == [
        "StatisticsResourceAdaptor",
        "TrackingResourceAdaptor",
        "PoolMemoryResource",
        "_HostMemoryResource",
    ]
    pool = stack(top)[2]
    assert pool.pool_size() == MiB
    buf = rmm.DeviceBuffer(size=3 * MiB, mr=top)
    assert top.allocation_counts.current_bytes == 3 * MiB
    assert stack(top)[1].get_allocated_bytes() == 3 * MiB
    assert MiB < pool.pool_size() <= 4 * MiB
    with pytest.raises(MemoryError):
        rmm.DeviceBuffer(size=2 * MiB, mr=top)  # past maximum_pool_size
    del buf
    assert top.allocation_counts.current_bytes == 0


def test_plugin_logs_to_a_file_per_worker(device0, tmp_path):
    plugin = host_plugin(log_directory=str(tmp_path))
    plugin.setup(worker=SimpleNamespace(name="tcp://127.0.0.1:1234/worker-7"))
    assert type(plugin.resource).__name__ == "LoggingResourceAdaptor"
    buf = rmm.DeviceBuffer(size=4096, mr=plugin.resource)
    del buf
    plugin.resource.flush()
    # Like RMM's LoggingResourceAdaptor, ours puts the device id before the extension.
    (path,) = tmp_path.glob("rmm_log_worker-7.dev*.txt")
    assert plugin.resource.get_file_name() == str(path)
    lines = path.read_text().splitlines()
    assert any("allocate" in line and "4096" in line for line in lines)
    assert any("free" in line and "4096" in line for line in lines)


def test_diagnostics_walk_our_resources(device0):
    """distributed.diagnostics.rmm.real_time: the pool's size under adaptors, and the first
    get_allocated_bytes found walking down (a limiting adaptor counts 256-byte-aligned sizes)."""
    host = native._HostMemoryResource()
    mr.set_current_device_resource(host)
    assert rmm_diagnostics.real_time() == {"rmm-used": 0, "rmm-total": 0}
    pool = mr.PoolMemoryResource(host, initial_pool_size=2 * MiB)
    tracking = mr.TrackingResourceAdaptor(pool)
    mr.set_current_device_resource(tracking)
    buf = rmm.DeviceBuffer(size=1000, mr=tracking)
    assert rmm_diagnostics.real_time() == {"rmm-used": 1000, "rmm-total": 2 * MiB}
    limiting = mr.LimitingResourceAdaptor(tracking, allocation_limit=8 * MiB)
    mr.set_current_device_resource(limiting)
    other = rmm.DeviceBuffer(size=1000, mr=limiting)
    assert rmm_diagnostics.real_time() == {"rmm-used": 1024, "rmm-total": 2 * MiB}
    assert tracking.get_allocated_bytes() == 2000
    big = rmm.DeviceBuffer(size=3 * MiB, mr=limiting)  # the pool grows past its initial size
    assert rmm_diagnostics.real_time() == {"rmm-used": 1024 + 3 * MiB, "rmm-total": pool.pool_size()}
    del buf, other, big


def test_dask_cuda_rmm_setup_wraps_in_tracking(device0):
    plugins = pytest.importorskip("dask_cuda.plugins", reason="dask_cuda is not importable")
    utils = pytest.importorskip("dask_cuda.utils")
    pool = mr.PoolMemoryResource(native._HostMemoryResource(), initial_pool_size=MiB)
    mr.set_current_device_resource(pool)
    # No pool, managed or async requested: only the tracking adaptor is added (no CUDA call).
    plugins.RMMSetup(None, None, False, False, None, None, True, None).setup(worker=None)
    top = mr.get_current_device_resource()
    assert isinstance(top, mr.TrackingResourceAdaptor) and top.upstream_mr is pool
    buf = rmm.DeviceBuffer(size=5000, mr=top)
    assert utils.get_rmm_device_memory_usage() == 5000
    assert rmm_diagnostics.real_time() == {"rmm-used": 5000, "rmm-total": MiB}
    del buf


def test_sizeof_device_buffer():
    from dask.sizeof import sizeof

    assert sizeof(rmm.DeviceBuffer(size=12345, mr=native._HostMemoryResource())) == 12345


def protocol_rmm():
    try:
        from distributed.protocol import rmm as proto
    except Exception as e:  # numba or its CUDA runtime missing
        pytest.skip(f"distributed.protocol.rmm is not importable: {e}")
    return proto


def test_cuda_serialization_header_and_round_trip():
    from distributed.protocol import deserialize, serialize

    protocol_rmm()
    data = np.arange(777, dtype=np.uint8)
    buf = rmm.DeviceBuffer(ptr=data.ctypes.data, size=data.nbytes, mr=native._HostMemoryResource())
    header, frames = serialize(buf, serializers=("cuda",))
    assert header["serializer"] == "cuda"
    sub = header["sub-header"]
    assert sub["shape"] == (777,) and sub["typestr"] == "|u1" and sub["strides"] == (1,)
    assert sub["data"][0] == buf.ptr and frames == [buf]
    assert deserialize(header, frames) is buf


def test_dask_deserialization_copies_the_bytes(monkeypatch):
    """distributed builds ``rmm.DeviceBuffer(ptr=<host bytes>, size=n)`` on the current device's
    resource; here that resource is a host one."""
    proto = protocol_rmm()
    host = native._HostMemoryResource()
    real = rmm.DeviceBuffer
    monkeypatch.setattr(rmm, "DeviceBuffer", lambda **kw: real(mr=host, **kw))
    payload = np.random.default_rng(0).integers(0, 256, 4099, dtype=np.uint8).tobytes()
    header = {"shape": (len(payload),), "typestr": "|u1", "strides": (1,)}
    out = proto.dask_deserialize_rmm_device_buffer(header, [payload])
    assert isinstance(out, real) and out.size == len(payload) and _buffer_mr(out) is host
    assert out.tobytes() == payload


@pytest.mark.needs_gpu
def test_dask_serialization_round_trip_on_the_gpu():
    from distributed.protocol import deserialize, serialize

    protocol_rmm()
    data = np.random.default_rng(1).integers(0, 256, 1 << 16, dtype=np.uint8)
    buf = rmm.DeviceBuffer.to_device(data.tobytes())
    header, frames = serialize(buf, serializers=("dask",))
    out = deserialize(header, frames)
    assert isinstance(out, rmm.DeviceBuffer) and out.ptr != buf.ptr
    assert out.tobytes() == data.tobytes()


@pytest.mark.needs_gpu
def test_dask_cuda_rmm_setup_pool_on_the_gpu(device0, tmp_path):
    plugins = pytest.importorskip("dask_cuda.plugins", reason="dask_cuda is not importable")
    plugins.RMMSetup("64MiB", "128MiB", False, False, None, str(tmp_path), True, None).setup(worker=None)
    top = mr.get_current_device_resource()
    assert isinstance(top, mr.TrackingResourceAdaptor)
    buf = rmm.DeviceBuffer(size=MiB)
    assert rmm_diagnostics.real_time() == {"rmm-used": MiB, "rmm-total": 64 * MiB}
    del buf
    assert len(list(tmp_path.glob("rmm_log_scheduler.dev*.txt"))) == 1
    plugins.RMMSetup(None, "128MiB", False, True, None, None, False, None).setup(worker=None)
    assert isinstance(mr.get_current_device_resource(), mr.LimitingResourceAdaptor)


def test_plugin_on_present_and_future_workers(device0):
    """Registered once, the plugin runs on the two workers there and on a third started later;
    the scheduler's copy of each worker's metrics holds real_time()'s numbers for our pool."""
    from distributed import Client, LocalCluster

    plugin = host_plugin(initial_pool_size="2MiB", track_allocations=True)
    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        dashboard_address=None,
        worker_dashboard_address=None,
    ) as cluster, Client(cluster) as client:
        client.register_plugin(plugin)

        def kinds(dask_worker):
            resource = dask_worker.plugins[RMMWorkerPlugin.name].resource
            return [type(r).__name__ for r in stack(resource)]

        expected = ["TrackingResourceAdaptor", "PoolMemoryResource", "_HostMemoryResource"]
        assert list(client.run(kinds).values()) == [expected] * 2
        cluster.scale(3)
        client.wait_for_workers(3, timeout=20)
        assert list(client.run(kinds).values()) == [expected] * 3

        # Every worker shares this process and so device 0: the last one set up owns it.
        def allocate(dask_worker):
            dask_worker.rmm_test_buffer = rmm.DeviceBuffer(size=3000, mr=mr.get_current_device_resource())
            return rmm_diagnostics.real_time()

        first = next(iter(client.scheduler_info()["workers"]))
        assert client.run(allocate, workers=[first])[first] == {"rmm-used": 3000, "rmm-total": 2 * MiB}
        scheduler = cluster.scheduler
        deadline = time.monotonic() + 10
        while scheduler.workers[first].metrics.get("rmm") != {"rmm-used": 3000, "rmm-total": 2 * MiB}:
            assert time.monotonic() < deadline, scheduler.workers[first].metrics.get("rmm")
            time.sleep(0.05)
        client.run(lambda dask_worker: delattr(dask_worker, "rmm_test_buffer"), workers=[first])


def test_example_computation_and_checks_on_the_host(monkeypatch):
    """examples/python/dask_two_gpus.py's data, computation and checks on an in-process cluster,
    with NumPy standing in for CuPy: the blocks the workers make match the client's copy, the
    checks pass on the results and catch a wrong one."""
    import dask_two_gpus as example

    shim = SimpleNamespace(asarray=np.asarray, asnumpy=np.asarray, empty=np.empty, ndarray=np.ndarray,
                           float32=np.float32)
    monkeypatch.setitem(sys.modules, "cupy", shim)
    with distributed.Client(processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None):
        host, x, groups = example.make_data(600, 256)  # a ragged last chunk
        assert x.chunks == ((256, 256, 88), (256, 256, 88))
        assert sorted(sum(groups, [])) == list(range(600))
        np.testing.assert_array_equal(x.compute(), host)
        results = example.compute(x, 256, groups)
        example.check(results, host, 256, groups)
        wrong = (results[0], results[1], results[2][::-1])
        with pytest.raises(AssertionError):
            example.check(wrong, host, 256, groups)
