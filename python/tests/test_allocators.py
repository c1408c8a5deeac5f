"""rmm.allocators: the hooks' buffers, the PyTorch C hooks, and CuPy, Numba and PyTorch
allocating through RMM.

Numba and PyTorch must be set up before their first CUDA allocation, so they run in a fresh
interpreter each (a subprocess that prints its results as JSON).
"""

import ctypes
import gc
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rmm
import rmm._cuda.gpu
import rmm._native as native
import rmm.pylibrmm.memory_resource as mr_module
from rmm.pylibrmm.memory_resource import (
    CudaMemoryResource,
    PoolMemoryResource,
    StatisticsResourceAdaptor,
    TrackingResourceAdaptor,
)
from rmm.pylibrmm.stream import DEFAULT_STREAM
from rmm._native import _device_buffer_mr as _buffer_mr, _device_buffer_stream as _buffer_stream

HERE = os.path.dirname(os.path.abspath(__file__))


def has(module):
    return importlib.util.find_spec(module) is not None


def run_script(code, env=None, timeout=300):
    """Runs `code` in a fresh interpreter; returns the JSON object its last line prints."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=HERE,  # not python/, whose rmm/ (without _native) would shadow the installed one
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- The hooks' buffer: a DeviceBuffer, served by a pool while the GIL is held ----------------


def test_pool_buffer_block_is_reused(host_mr):
    """What the CuPy and Numba hooks hand out: a bare pool serves a freed block of the stream
    again (the path that keeps the GIL) and the memory is usable."""
    pool = PoolMemoryResource(host_mr, initial_pool_size="1MiB", maximum_pool_size="2MiB")
    a = rmm.DeviceBuffer(size=1000, mr=pool)
    first = a.ptr
    buf = (ctypes.c_ubyte * 64).from_address(a.ptr)
    buf[:] = bytes(range(64))
    assert bytes(buf) == bytes(range(64))
    del a, buf
    b = rmm.DeviceBuffer(size=1000, mr=pool)
    assert b.ptr == first and _buffer_stream(b) is DEFAULT_STREAM and _buffer_mr(b) is pool
    assert pool.pool_size() == 1 << 20


def test_pool_buffer_failure_is_memory_error(host_mr):
    pool = PoolMemoryResource(host_mr, initial_pool_size="1MiB", maximum_pool_size="2MiB")
    stats = StatisticsResourceAdaptor(pool)
    keep = rmm.DeviceBuffer(size=1 << 20, mr=pool)
    with pytest.raises(MemoryError):
        rmm.DeviceBuffer(size=4 << 20, mr=pool)
    first = keep.ptr
    del keep
    # The freed block is back in the pool and is handed out again.
    again = rmm.DeviceBuffer(size=1 << 20, mr=stats)
    assert again.ptr == first and pool.pool_size() == 1 << 20
    del again
    assert stats.allocation_counts.current_count == 0
    assert rmm.DeviceBuffer(size=0, mr=pool).ptr == 0


def test_statistics_and_tracking_over_a_pool_count_hook_buffers_exactly(host_mr):
    """Dask-CUDA's stack (statistics over tracking over a pool) under the hooks' pattern: many
    buffers made and dropped, each freed block handed out again while the GIL is held (both
    adaptors forward the pool's non-waiting calls), and every counter exact throughout."""
    pool = PoolMemoryResource(host_mr, initial_pool_size="1MiB", maximum_pool_size="2MiB")
    tracking = TrackingResourceAdaptor(pool, capture_stacks=False)
    stats = StatisticsResourceAdaptor(tracking)
    sizes = [1000, 4096, 256, 70000, 1000, 12345]
    live, total = [], 0
    for round_ in range(50):
        for n in sizes:
            live.append(rmm.DeviceBuffer(size=n, mr=stats))
            total += n
        if round_ % 2:
            live = live[-len(sizes) :]
        counts = stats.allocation_counts
        held = sum(b.size for b in live)
        assert (counts.current_bytes, counts.current_count) == (held, len(live))
        assert (counts.total_bytes, counts.total_count) == (total, (round_ + 1) * len(sizes))
        assert tracking.get_allocated_bytes() == held
    # The resource's own calls take the same path.
    ptr = stats.allocate(1000)
    stats.deallocate(ptr, 1000)
    again = stats.allocate(1000)
    assert again == ptr and tracking.get_allocated_bytes() == sum(b.size for b in live) + 1000
    stats.deallocate(again, 1000)
    del live
    gc.collect()
    counts = stats.allocation_counts
    assert (counts.current_bytes, counts.current_count) == (0, 0)
    assert tracking.get_allocated_bytes() == 0


def has_gpu():
    try:
        return native.available_device_memory()[0] > 0
    except Exception:
        return False


# --- The PyTorch C hooks, called directly (no PyTorch needed) ---------------------------------


@pytest.fixture
def hooks():
    lib = ctypes.CDLL(native.__file__)
    alloc = lib.rmm_rs_torch_allocate_or_null  # the exported hook throws instead (C++)
    alloc.restype = ctypes.c_void_p
    alloc.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    free = lib.rmm_rs_torch_deallocate
    free.restype = None
    free.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    return alloc, free


def test_torch_hook_fails_with_null(hooks):
    alloc, free = hooks
    assert alloc(256, -1, None) is None  # no such device (or no driver): NULL, no crash
    free(None, 256, -1, None)


@pytest.fixture
def device_stats(gpu):
    """The current device's resource becomes a statistics adaptor over a pool (restored after)."""
    before = mr_module.get_current_device_resource()
    pool = PoolMemoryResource(CudaMemoryResource(), initial_pool_size="64MiB")
    stats = StatisticsResourceAdaptor(pool)
    mr_module.set_current_device_resource(stats)
    yield stats
    mr_module.set_current_device_resource(before)


def test_torch_hook_uses_the_device_resource(hooks, device_stats):
    alloc, free = hooks
    device = rmm._cuda.gpu.getDevice()
    ptr = alloc(4096, device, None)
    assert ptr
    assert device_stats.allocation_counts.current_bytes == 4096
    free(ptr, 4096, device, None)
    assert device_stats.allocation_counts.current_bytes == 0
    # A new current resource is seen by the next call.
    other = StatisticsResourceAdaptor(device_stats)
    mr_module.set_current_device_resource(other)
    ptr = alloc(512, device, None)
    assert ptr and other.allocation_counts.current_bytes == 512
    free(ptr, 512, device, None)
    assert other.allocation_counts.current_count == 0


def test_torch_hook_frees_to_the_resource_that_allocated(hooks, device_stats):
    """Changing the current resource while PyTorch holds memory: the free still goes to the
    resource that handed the memory out (RMM's hook frees to the new one, which cannot)."""
    alloc, free = hooks
    device = rmm._cuda.gpu.getDevice()
    ptr = alloc(4096, device, None)
    assert ptr and device_stats.allocation_counts.current_bytes == 4096
    other = StatisticsResourceAdaptor(PoolMemoryResource(CudaMemoryResource(), initial_pool_size="8MiB"))
    mr_module.set_current_device_resource(other)
    free(ptr, 4096, device, None)
    assert device_stats.allocation_counts.current_bytes == 0
    assert device_stats.allocation_counts.current_count == 0
    assert other.allocation_counts.current_count == 0
    # The old resource is no longer current, only kept by its allocations: once they are freed,
    # new allocations come from the current one.
    ptr = alloc(512, device, None)
    assert ptr and other.allocation_counts.current_bytes == 512
    free(ptr, 512, device, None)
    assert other.allocation_counts.current_bytes == 0
    free(ptr, 512, device, None)  # a second free of the same pointer is ignored
    assert other.allocation_counts.current_count == 0


# --- CuPy --------------------------------------------------------------------------------------


@pytest.mark.skipif(has("cupy"), reason="CuPy is installed")
def test_cupy_allocator_without_cupy():
    from rmm.allocators.cupy import rmm_cupy_allocator

    with pytest.raises(ModuleNotFoundError, match="cupy"):
        rmm_cupy_allocator(16)


def test_cupy_allocator(device_stats):
    cupy = pytest.importorskip("cupy")
    from rmm.allocators.cupy import rmm_cupy_allocator

    cupy.cuda.set_allocator(rmm_cupy_allocator)
    try:
        host = np.arange(100_000, dtype=np.float64)
        a = cupy.asarray(host)
        b = cupy.sqrt(a) * 2 + a
        np.testing.assert_allclose(cupy.asnumpy(b), np.sqrt(host) * 2 + host)
        counts = device_stats.allocation_counts
        assert counts.total_count >= 2 and counts.total_bytes >= 2 * host.nbytes
        assert counts.current_bytes >= 2 * host.nbytes
        mem = a.data.mem
        assert isinstance(mem, cupy.cuda.memory.UnownedMemory)
        assert mem.device_id == cupy.cuda.Device().id
        with cupy.cuda.Stream(non_blocking=True) as s:
            c = cupy.ones(1000)
            owner = c.data.mem._owner
            assert _buffer_stream(owner).__cuda_stream__()[1] == s.ptr  # on CuPy's current stream
            total = float(c.sum())
        # The buffer keeps CuPy's stream alive, so the memory is freed on a live stream even
        # when the program drops the stream first.
        held = sys.getrefcount(s)
        del owner, c
        assert sys.getrefcount(s) == held - 1
        del s
        assert total == 1000.0
        del a, b, mem
        gc.collect()
        cupy.cuda.Device().synchronize()
        assert device_stats.allocation_counts.current_bytes == 0
    finally:
        cupy.cuda.set_allocator(None)


def test_cupy_allocator_memory_is_owned_by_a_device_buffer(gpu):
    """As with RMM's allocator, ``memptr.mem._owner`` is an ``rmm.DeviceBuffer``, for empty
    requests too."""
    cupy = pytest.importorskip("cupy")
    from rmm.allocators.cupy import rmm_cupy_allocator

    m = rmm_cupy_allocator(42)
    assert m.mem.size == 42 and m.mem.ptr != 0
    assert isinstance(m.mem._owner, rmm.DeviceBuffer) and m.mem._owner.size == 42
    assert m.mem._owner.ptr == m.ptr and _buffer_mr(m.mem._owner) is mr_module.get_current_device_resource()
    m = rmm_cupy_allocator(0)
    assert m.mem.size == 0 and m.mem.ptr == 0
    assert isinstance(m.mem._owner, rmm.DeviceBuffer)
    assert m.mem.device_id == cupy.cuda.Device().id
    cupy.cuda.set_allocator(rmm_cupy_allocator)
    try:
        a = cupy.arange(10)
        assert isinstance(a.data.mem._owner, rmm.DeviceBuffer)
        assert _buffer_stream(a.data.mem._owner) is DEFAULT_STREAM
    finally:
        cupy.cuda.set_allocator(None)


def test_cupy_allocator_through_statistics_and_tracking_counts_exactly(gpu):
    """Dask-CUDA's stack as the current resource (statistics over tracking over a pool): CuPy
    arrays made and dropped in a loop reuse their blocks (both adaptors forward the pool's
    non-waiting calls) and every counter is exact after each step."""
    cupy = pytest.importorskip("cupy")
    from rmm.allocators.cupy import rmm_cupy_allocator

    before = mr_module.get_current_device_resource()
    pool = PoolMemoryResource(CudaMemoryResource(), initial_pool_size="64MiB")
    tracking = TrackingResourceAdaptor(pool, capture_stacks=False)
    stats = StatisticsResourceAdaptor(tracking)
    mr_module.set_current_device_resource(stats)
    cupy.cuda.set_allocator(rmm_cupy_allocator)
    try:
        keep = cupy.arange(1000, dtype=cupy.float64)
        first = None
        for i in range(200):
            a = cupy.ones(4096 + (i % 3) * 256, dtype=cupy.float32)
            if i == 0:
                first = a.data.ptr
            held = keep.data.mem.size + a.data.mem.size
            counts = stats.allocation_counts
            assert (counts.current_bytes, counts.current_count) == (held, 2)
            assert counts.total_count == i + 2
            assert tracking.get_allocated_bytes() == held
            del a
        assert first is not None
        again = cupy.ones(4096, dtype=cupy.float32)
        assert again.data.ptr == first, "the freed block of the stream came back"
        del again, keep
        gc.collect()
        cupy.cuda.Device().synchronize()
        counts = stats.allocation_counts
        assert (counts.current_bytes, counts.current_count) == (0, 0)
        assert tracking.get_allocated_bytes() == 0
    finally:
        cupy.cuda.set_allocator(None)
        mr_module.set_current_device_resource(before)


def test_cupy_allocator_reuses_pool_blocks_on_each_stream(gpu):
    """A bare pool (whose free blocks of a stream come back without releasing the GIL): arrays
    created and dropped in a loop reuse one block, each array's memory is on CuPy's current
    stream, and results are right."""
    cupy = pytest.importorskip("cupy")
    from rmm.allocators.cupy import rmm_cupy_allocator

    before = mr_module.get_current_device_resource()
    pool = PoolMemoryResource(CudaMemoryResource(), initial_pool_size="16MiB")
    mr_module.set_current_device_resource(pool)
    cupy.cuda.set_allocator(rmm_cupy_allocator)
    try:
        ptrs = set()
        for i in range(2000):
            a = cupy.full(1000, i, dtype=cupy.int64)
            ptrs.add(a.data.ptr)
            assert int(a.sum()) == 1000 * i
            del a
        assert len(ptrs) <= 2, f"{len(ptrs)} blocks for one array size"
        print("CuPy's current stream read through:", native._cupy_current_stream_source())
        assert native._cupy_current_stream_source() in ("exported C function", "Python call")
        streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(2)]
        for s in streams:
            with s:
                c = cupy.arange(4096, dtype=cupy.float32)
                owner_stream = _buffer_stream(c.data.mem._owner).__cuda_stream__()[1]
                assert owner_stream == s.ptr == cupy.cuda.get_current_stream().ptr
                assert float(c.sum()) == float(4095 * 4096 // 2)
                del c
            s.synchronize()
        assert pool.pool_size() == 16 << 20
    finally:
        cupy.cuda.set_allocator(None)
        cupy.cuda.Device().synchronize()
        mr_module.set_current_device_resource(before)


# --- Numba -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def numba_compiles(gpu):
    """numba-cuda can compile and run a kernel here with its own memory manager; the Numba tests
    skip, with numba-cuda's error, where it cannot (for instance a NumPy it does not support)."""
    pytest.importorskip("numba.cuda")
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent("""
            import numpy as np
            from numba import cuda
            @cuda.jit
            def one(out):
                out[0] = 1
            d = cuda.device_array(1, dtype=np.int32)
            one[1, 1](d)
            assert d.copy_to_host()[0] == 1
        """)],
        cwd=HERE, capture_output=True, text=True, timeout=300,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        pytest.skip(f"numba-cuda cannot compile a kernel on this machine without RMM: {last}")


def test_numba_device_arrays_come_from_rmm(gpu):
    """Device arrays (no kernel: that needs numba-cuda's compiler) through RMMNumbaManager, their
    memory held by ``rmm.DeviceBuffer`` objects."""
    pytest.importorskip("numba.cuda")
    result = run_script(
        """
        import json
        import numpy as np
        from numba import cuda
        import rmm.pylibrmm.memory_resource as mr
        from rmm.allocators.numba import RMMNumbaManager

        stats = mr.StatisticsResourceAdaptor(
            mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=64 << 20))
        mr.set_current_device_resource(stats)
        x = np.arange(100_000, dtype=np.float64)
        d = cuda.to_device(x)
        e = cuda.device_array_like(x)
        e.copy_to_device(d)
        back = e.copy_to_host()
        live = stats.allocation_counts.current_bytes
        manager = cuda.current_context().memory_manager
        owners = sorted({type(v).__name__ for v in manager.allocations.values()})
        manager = type(manager).__name__
        del d, e
        import gc; gc.collect()
        cuda.synchronize()
        print(json.dumps({"ok": bool(np.array_equal(back, x)), "live": live, "nbytes": x.nbytes,
                          "after": stats.allocation_counts.current_bytes, "manager": manager,
                          "owners": owners}))
        """,
        env={"NUMBA_CUDA_MEMORY_MANAGER": "rmm.allocators.numba"},
    )
    assert result["ok"] and result["manager"] == "RMMNumbaManager", result
    assert result["owners"] == ["DeviceBuffer"], result  # what holds the memory, as in RMM
    assert result["live"] >= 2 * result["nbytes"]
    assert result["after"] == 0


def test_numba_memory_manager_from_the_environment(numba_compiles):
    result = run_script(
        """
        import json
        import numpy as np
        from numba import cuda
        import rmm.pylibrmm.memory_resource as mr
        from rmm.allocators.numba import RMMNumbaManager, _numba_memory_manager

        stats = mr.StatisticsResourceAdaptor(
            mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=64 << 20))
        mr.set_current_device_resource(stats)

        @cuda.jit
        def axpy(a, x, y, out):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = a * x[i] + y[i]

        n = 10_000
        x = np.arange(n, dtype=np.float32)
        y = np.ones(n, dtype=np.float32)
        dx, dy = cuda.to_device(x), cuda.to_device(y)
        dout = cuda.device_array_like(x)
        axpy[(n + 255) // 256, 256](np.float32(3), dx, dy, dout)
        out = dout.copy_to_host()
        manager = cuda.current_context().memory_manager
        counts = stats.allocation_counts
        print(json.dumps({
            "ok": bool(np.array_equal(out, 3 * x + y)),
            "manager": type(manager).__name__,
            "is_rmm": isinstance(manager, RMMNumbaManager) and _numba_memory_manager is RMMNumbaManager,
            "interface_version": manager.interface_version,
            "live": counts.current_bytes,
            "count": counts.total_count,
            "nbytes": x.nbytes,
        }))
        """,
        env={"NUMBA_CUDA_MEMORY_MANAGER": "rmm.allocators.numba"},
    )
    assert result["ok"], result
    assert result["is_rmm"] and result["manager"] == "RMMNumbaManager"
    assert result["interface_version"] == 1
    assert result["count"] >= 3 and result["live"] >= 3 * result["nbytes"]


def test_numba_manager_memory_info_is_not_implemented(gpu):
    pytest.importorskip("numba.cuda")
    result = run_script(
        """
        import json
        from numba import cuda
        from rmm.allocators.numba import RMMNumbaManager
        cuda.set_memory_manager(RMMNumbaManager)
        try:
            cuda.current_context().get_memory_info()
            raised = False
        except NotImplementedError:
            raised = True
        print(json.dumps({"raised": raised}))
        """
    )
    assert result["raised"]


# --- PyTorch -----------------------------------------------------------------------------------


@pytest.mark.skipif(has("torch"), reason="PyTorch is installed")
def test_torch_allocator_is_none_without_torch():
    from rmm.allocators.torch import rmm_torch_allocator

    assert rmm_torch_allocator is None


TRAIN = """
import json, os, sys
import torch
use_rmm = sys.argv[1] == "rmm"
if use_rmm:
    import rmm.pylibrmm.memory_resource as mr
    from rmm.allocators.torch import rmm_torch_allocator
    stats = mr.StatisticsResourceAdaptor(
        mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=256 << 20))
    mr.set_current_device_resource(stats)
    torch.cuda.memory.change_current_allocator(rmm_torch_allocator)

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
torch.backends.cudnn.benchmark = False
torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"
x = torch.randn(512, 32, device=dev)
w_true = torch.randn(32, 1, device=dev)
y = torch.sin(x @ w_true) + 0.1 * torch.randn(512, 1, device=dev)
model = torch.nn.Sequential(
    torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
    torch.nn.Linear(64, 1)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
losses = []
for step in range(300):
    idx = torch.randint(0, 512, (64,), device=dev)
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x[idx]), y[idx])
    loss.backward()
    opt.step()
    losses.append(loss.item())
out = {"losses": losses}
if use_rmm:
    out["rmm_allocations"] = stats.allocation_counts.total_count
print(json.dumps(out))
"""


def test_torch_training_matches_the_native_allocator(gpu):
    pytest.importorskip("torch")
    env = {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}
    ours = run_script(TRAIN.replace("sys.argv[1]", "'rmm'"), env=env)
    native_run = run_script(TRAIN.replace("sys.argv[1]", "'native'"), env=env)
    assert ours["rmm_allocations"] > 300  # every step allocated through RMM
    assert len(ours["losses"]) == 300
    np.testing.assert_allclose(ours["losses"], native_run["losses"], rtol=1e-5, atol=1e-7)
    assert ours["losses"][-1] < ours["losses"][0]


def test_torch_out_of_memory_is_torch_oom(gpu):
    pytest.importorskip("torch")
    result = run_script(
        """
        import json
        import torch
        import rmm.pylibrmm.memory_resource as mr
        from rmm.allocators.torch import rmm_torch_allocator

        pool = mr.PoolMemoryResource(
            mr.CudaMemoryResource(), initial_pool_size=32 << 20, maximum_pool_size=256 << 20)
        try:
            limited = mr.LimitingResourceAdaptor(pool, allocation_limit=128 << 20)
        except AttributeError:
            limited = pool  # the pool's maximum is the limit then
        mr.set_current_device_resource(limited)
        assert isinstance(rmm_torch_allocator, torch.cuda.memory.CUDAPluggableAllocator)
        torch.cuda.memory.change_current_allocator(rmm_torch_allocator)

        a = torch.ones(1 << 20, device="cuda")
        try:
            torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
            error = None
        except (torch.OutOfMemoryError, MemoryError, RuntimeError) as e:
            error = type(e).__name__
        b = torch.ones(1 << 20, device="cuda") + a
        print(json.dumps({"error": error, "sum": b.sum().item()}))
        """
    )
    # The hook throws std::bad_alloc on failure (PyTorch does not test its result for NULL);
    # PyTorch reports it as an exception and the process goes on allocating.
    print("PyTorch reported the failed allocation as", result["error"])
    assert result["error"] is not None, "PyTorch handed out a tensor for a failed allocation"
    assert result["sum"] == 2.0 * (1 << 20)
