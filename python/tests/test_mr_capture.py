"""Allocation during CUDA graph capture through rmm.mr.PoolMemoryResource and
rmm.mr.VirtualPoolMemoryResource (an addition of rmm-rs): the errors on any machine; on a GPU, a
graph captured with CuPy while allocating through the pool, replayed with eager allocations on
other streams in between; and torch.cuda.graph over rmm_torch_allocator."""

import numpy as np
import pytest

import rmm
import rmm.mr as mr
from rmm.pylibrmm.stream import DEFAULT_STREAM, Stream
from conftest import GPU_SKIP_REASON
from test_allocators import has, run_script

MiB = 1 << 20
REPLAYS = 100


@pytest.fixture
def host_pool(host_mr):
    return mr.PoolMemoryResource(host_mr, initial_pool_size=0)


# --- Any machine: answers and errors -----------------------------------------------------------


def test_a_pool_without_captures_answers(host_pool):
    assert host_pool.captures() == []
    assert host_pool.capture_pool_size(7) == 0
    host_pool.end_capture(DEFAULT_STREAM)  # a stream never marked is left alone


def test_releasing_an_unknown_capture_is_a_value_error(host_pool):
    with pytest.raises(ValueError, match="capture 7"):
        host_pool.release_capture(7)
    assert host_pool.captures() == []


def test_the_stream_argument_is_checked_as_other_rmm_mr_methods(host_pool):
    with pytest.raises(TypeError, match="stream"):
        host_pool.begin_capture(None)
    with pytest.raises(TypeError, match="stream"):
        host_pool.end_capture(5)


def test_begin_capture_on_a_stream_not_capturing_is_refused(host_pool):
    # ValueError where a driver can tell (the stream is not capturing); without a driver the
    # question cannot be asked: a RuntimeError.
    expected = ValueError if GPU_SKIP_REASON is None else (ValueError, RuntimeError)
    with pytest.raises(expected):
        host_pool.begin_capture(DEFAULT_STREAM)
    assert host_pool.captures() == []


def test_capture_allocations_needs_a_pool(host_mr):
    with pytest.raises(TypeError, match="PoolMemoryResource"):
        mr.capture_allocations(host_mr, DEFAULT_STREAM)


def test_capture_allocations_released_before_entering_is_a_value_error(host_pool):
    capture = mr.capture_allocations(host_pool, DEFAULT_STREAM)
    assert capture.pool_size == 0
    with pytest.raises(ValueError, match="never begun"):
        capture.release()


def test_the_methods_are_on_both_pool_classes():
    for cls in (mr.PoolMemoryResource, mr.VirtualPoolMemoryResource):
        for name in ("begin_capture", "end_capture", "release_capture", "captures", "capture_pool_size"):
            assert callable(getattr(cls, name)), f"{cls.__name__}.{name}"


# --- GPU: a CuPy graph ---------------------------------------------------------------------------


def _read(ptr, n):
    import cupy

    host = np.empty(n, dtype=np.uint8)
    cupy.cuda.runtime.memcpy(host.ctypes.data, ptr, n, cupy.cuda.runtime.memcpyDeviceToHost)
    return host


POOLS = {
    "pool": lambda: mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=16 * MiB),
    "virtual_pool": lambda: mr.VirtualPoolMemoryResource(4 << 30),
}


@pytest.mark.parametrize("kind", ["pool", "virtual_pool"])
def test_a_cupy_graph_allocating_through_the_pool_replays(gpu, kind):
    cupy = pytest.importorskip("cupy")
    if not hasattr(cupy.cuda.Stream, "begin_capture"):
        pytest.skip("this CuPy cannot capture graphs")
    rt = cupy.cuda.runtime
    pool = POOLS[kind]()
    n = 3 * MiB + 4096
    cs = cupy.cuda.Stream(non_blocking=True)
    launch = cupy.cuda.Stream(non_blocking=True)
    eager = [cupy.cuda.Stream(non_blocking=True) for _ in range(2)]
    out = rmm.DeviceBuffer(size=n, mr=pool, stream=Stream(launch))
    launch.synchronize()

    cs.begin_capture()
    with mr.capture_allocations(pool, cs) as capture:
        a = rmm.DeviceBuffer(size=n, mr=pool, stream=capture.stream)
        rt.memsetAsync(a.ptr, 0x5A, n, cs.ptr)
        b = rmm.DeviceBuffer(size=n, mr=pool, stream=capture.stream)
        rt.memcpyAsync(b.ptr, a.ptr, n, rt.memcpyDeviceToDevice, cs.ptr)
        rt.memcpyAsync(out.ptr, b.ptr, n, rt.memcpyDeviceToDevice, cs.ptr)
        captured = [(a.ptr, n), (b.ptr, n)]
        del a, b
        graph = cs.end_capture()
    assert capture.id in pool.captures()
    assert capture.pool_size >= 2 * n

    def overlaps(p, size):
        return any(p < q + m and q < p + size for q, m in captured)

    for i in range(REPLAYS):
        rt.memsetAsync(out.ptr, 0, n, launch.ptr)
        graph.launch(stream=launch)
        for k, s in enumerate(eager):
            size = (1 + (i * 7 + k * 3) % 5) * MiB
            buf = rmm.DeviceBuffer(size=size, mr=pool, stream=Stream(s))
            assert not overlaps(buf.ptr, size), f"replay {i}: an eager block overlaps the capture's"
            rt.memsetAsync(buf.ptr, i % 251, size, s.ptr)
            del buf
        launch.synchronize()
        assert (_read(out.ptr, n) == 0x5A).all(), f"replay {i}"
    rt.deviceSynchronize()
    del graph
    capture.release()
    assert capture.id not in pool.captures()
    with pytest.raises(ValueError):
        capture.release()


def test_a_release_with_live_blocks_is_refused(gpu):
    cupy = pytest.importorskip("cupy")
    if not hasattr(cupy.cuda.Stream, "begin_capture"):
        pytest.skip("this CuPy cannot capture graphs")
    pool = mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=0)
    cs = cupy.cuda.Stream(non_blocking=True)
    cs.begin_capture()
    with mr.capture_allocations(pool, cs) as capture:
        with pytest.raises(ValueError, match="still marked"):
            capture.release()
        kept = rmm.DeviceBuffer(size=MiB, mr=pool, stream=capture.stream)
        graph = cs.end_capture()
    with pytest.raises(ValueError, match="live blocks"):
        capture.release()
    assert capture.pool_size >= MiB, "a refused release keeps the memory"
    del kept, graph
    capture.release()


# --- GPU: torch.cuda.graph over rmm_torch_allocator ----------------------------------------------

TORCH_GRAPH = """
import json, sys
import torch
import rmm.mr as mr
from rmm.allocators.torch import release_graph_memory, rmm_torch_allocator
from rmm._native import _torch_pending_graph_captures

kind = sys.argv[1]
if kind == "pool":
    pool = mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=64 << 20)
else:
    pool = mr.VirtualPoolMemoryResource(8 << 30)
mr.set_current_device_resource(mr.StatisticsResourceAdaptor(pool))
torch.cuda.memory.change_current_allocator(rmm_torch_allocator)

torch.manual_seed(0)
dev = "cuda"
model = torch.nn.Sequential(
    torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
    torch.nn.Linear(64, 1)).to(dev)
static_x = torch.randn(256, 32, device=dev)

def step(x):
    h = model(x)
    return torch.sin(h) * 2 + h.pow(2).mean()

# Warm up on a side stream, as torch.cuda.graph's documentation asks.
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s), torch.no_grad():
    for _ in range(3):
        step(static_x)
torch.cuda.current_stream().wait_stream(s)

before = set(pool.captures())
g = torch.cuda.CUDAGraph()
with torch.no_grad(), torch.cuda.graph(g):
    static_y = step(static_x)
new = sorted(set(pool.captures()) - before)
private_bytes = sum(pool.capture_pool_size(c) for c in new)

worst = 0.0
others = [torch.cuda.Stream() for _ in range(2)]
for i in range(100):
    x = torch.randn(256, 32, device=dev)
    static_x.copy_(x)
    g.replay()
    # Eager allocations on other streams between replays.
    for k, o in enumerate(others):
        with torch.cuda.stream(o):
            junk = torch.full(((1 + (i + k) % 5) << 18,), float(i), device=dev)
            junk.add_(1)
    torch.cuda.synchronize()
    with torch.no_grad():
        eager = step(x)
    worst = max(worst, (static_y - eager).abs().max().item())

del g
pending_after_del = list(_torch_pending_graph_captures())
del static_y
# cuBLAS keeps a workspace per stream, allocated on the capturing stream during the capture: the
# capture's memory is in use until PyTorch drops it (as with PyTorch's own graph pools).
torch._C._cuda_clearCublasWorkspaces()
released = release_graph_memory()
left = sorted(set(pool.captures()) - before)
why = []
for c in left:
    try:
        pool.release_capture(c)
    except ValueError as e:
        why.append(str(e))
print(json.dumps({
    "captures": len(new), "private_bytes": private_bytes, "worst": worst,
    "pending_after_del": pending_after_del, "released": released, "left": left, "why": why,
}))
"""


@pytest.mark.parametrize("kind", ["pool", "virtual_pool"])
def test_torch_cuda_graph_replays_over_our_pools(gpu, kind):
    pytest.importorskip("torch")
    result = run_script(TORCH_GRAPH.replace("sys.argv[1]", repr(kind)))
    print(f"{kind}: {result}")
    assert result["captures"] >= 1, "the capture's tensors did not come from private memory"
    assert result["private_bytes"] > 0
    assert result["worst"] < 1e-4, "replays differ from the eager run"
    # The graph's output was alive when the graph went: its capture waited, then was given back.
    assert len(result["pending_after_del"]) >= 1
    assert result["released"] >= 1
    assert result["left"] == []


@pytest.mark.skipif(not has("torch"), reason="PyTorch is not installed")
def test_release_graph_memory_without_graphs_releases_nothing():
    from rmm.allocators.torch import release_graph_memory

    assert release_graph_memory() == 0
