"""The pool controls PyTorch and CuPy users reach for, as rmm-rs spells them (docs/python_controls.md
names the test of each row): giving wholly free memory back (``PoolMemoryResource.release()``,
``torch.cuda.empty_cache()`` over ``rmm_torch_allocator``), a limit (``LimitingResourceAdaptor``),
the bytes in use (``StatisticsResourceAdaptor``, ``rmm.allocators.torch.memory_allocated``) and the
bytes held (``pool_size()``, ``rmm.allocators.torch.memory_reserved``)."""

import pytest

import rmm.allocators.torch as rt
import rmm.mr
from rmm.pylibrmm.memory_resource import (
    LimitingResourceAdaptor,
    PoolMemoryResource,
    StatisticsResourceAdaptor,
)

from test_allocators import run_script

MIB = 1 << 20


@pytest.fixture
def device0_resource():
    """Restores device 0's resource after a test that sets it."""
    old = rmm.mr.get_per_device_resource(0)
    yield
    rmm.mr.set_per_device_resource(0, old)


def test_release_gives_back_wholly_free_chunks_and_keeps_live_ones(host_mr):
    pool = PoolMemoryResource(host_mr, initial_pool_size=MIB)
    a = pool.allocate(MIB)  # the initial chunk, whole
    b = pool.allocate(1000)  # a second chunk of 1 MiB
    assert pool.pool_size() == 2 * MIB
    pool.deallocate(a, MIB)
    assert pool.release() == MIB
    assert pool.pool_size() == MIB, "the chunk of the live block stays"
    assert pool.release() == 0
    # The pool keeps working, and gives everything back once all is free.
    c = pool.allocate(2 * MIB)
    pool.deallocate(c, 2 * MIB)
    pool.deallocate(b, 1000)
    assert pool.release() == 3 * MIB
    assert pool.pool_size() == 0
    pool.deallocate(pool.allocate(MIB), MIB)


def test_release_under_adaptors_and_the_torch_counters(host_mr, device0_resource):
    """free_all_blocks / empty_cache, used and held bytes, through a statistics adaptor."""
    pool = PoolMemoryResource(host_mr, initial_pool_size=MIB)
    stats = StatisticsResourceAdaptor(pool)
    rmm.mr.set_per_device_resource(0, stats)
    big = stats.allocate(4 * MIB)
    small = stats.allocate(1000)
    assert stats.allocation_counts.current_bytes == rt.memory_allocated(0) == 4 * MIB + 1000
    held = pool.pool_size()
    assert rt.memory_reserved(0) == held == 5 * MIB
    stats.deallocate(big, 4 * MIB)
    assert rt.memory_allocated(0) == 1000
    assert rt.memory_reserved(0) == held, "a free keeps the memory in the pool"
    assert pool.release() == 4 * MIB, "the big block's chunk; the small one's stays"
    assert rt.memory_reserved(0) == pool.pool_size() == held - 4 * MIB == MIB
    assert rt.memory_allocated(0) == 1000
    stats.deallocate(small, 1000)


def test_a_limit_refuses_what_would_pass_it(host_mr):
    """CuPy's MemoryPool.set_limit(size=...), PyTorch's set_per_process_memory_fraction."""
    pool = PoolMemoryResource(host_mr, initial_pool_size=0)
    limited = LimitingResourceAdaptor(pool, allocation_limit=8 * MIB)
    a = limited.allocate(6 * MIB)
    with pytest.raises(MemoryError, match="Exceeded memory limit"):
        limited.allocate(4 * MIB)
    assert limited.get_allocated_bytes() == 6 * MIB
    limited.deallocate(a, 6 * MIB)
    b = limited.allocate(8 * MIB)
    limited.deallocate(b, 8 * MIB)


def test_a_pool_maximum_refuses_growth_past_it(host_mr):
    """Held bytes capped (RMM's maximum_pool_size): the pool itself refuses to grow past it."""
    pool = PoolMemoryResource(host_mr, initial_pool_size=0, maximum_pool_size=8 * MIB)
    a = pool.allocate(6 * MIB)
    with pytest.raises(MemoryError):
        pool.allocate(4 * MIB)
    assert pool.pool_size() <= 8 * MIB
    pool.deallocate(a, 6 * MIB)


TORCH_EMPTY_CACHE = """
import json
import torch
import rmm.mr as mr
import rmm.allocators.torch as rt
from rmm.allocators.torch import rmm_torch_allocator

pool = mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=32 << 20)
stats = mr.StatisticsResourceAdaptor(pool)
mr.set_current_device_resource(stats)
torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
out = {}
kept = torch.ones(1 << 20, device="cuda")               # 4 MiB, in the initial chunk
big = torch.ones(16 << 20, device="cuda")               # 64 MiB, a chunk of its own
out["reserved_before"] = rt.memory_reserved()
del big
out["reserved_after_del"] = rt.memory_reserved()
torch.cuda.empty_cache()
out["reserved_after_empty_cache"] = rt.memory_reserved()
out["allocated"] = rt.memory_allocated()
out["kept_sum"] = (kept + 1).sum().item()               # the live tensor's chunk stayed
again = torch.ones(16 << 20, device="cuda")             # the pool grows again
out["again_sum"] = again.sum().item()
del again, kept
torch.cuda.empty_cache()
out["reserved_at_end"] = rt.memory_reserved()
# PyTorch's memory fraction calls no function of a pluggable allocator without one set: no limit.
torch.cuda.set_per_process_memory_fraction(0.001)
past = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
out["past_fraction"] = past.numel()
print(json.dumps(out))
"""


def test_torch_empty_cache_releases_the_pool_under_the_current_resource(gpu):
    pytest.importorskip("torch")
    out = run_script(TORCH_EMPTY_CACHE)
    print(out)
    assert out["reserved_before"] == 32 * MIB + 64 * MIB
    assert out["reserved_after_del"] == 96 * MIB, "a free keeps the memory in the pool"
    assert out["reserved_after_empty_cache"] == 32 * MIB, "the free 64 MiB chunk went back"
    assert out["allocated"] == 4 * MIB
    assert out["kept_sum"] == 2.0 * (1 << 20)
    assert out["again_sum"] == float(16 << 20)
    assert out["reserved_at_end"] == 0, "every chunk went back once all was free"
    assert out["past_fraction"] == 256 << 20


CUPY_RELEASE = """
import json
import cupy
import rmm.mr as mr
from rmm.allocators.cupy import rmm_cupy_allocator

pool = mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=0)
mr.set_current_device_resource(pool)
cupy.cuda.set_allocator(rmm_cupy_allocator)
a = cupy.ones(16 << 20, dtype=cupy.float32)              # 64 MiB
out = {"held": pool.pool_size()}
del a
out["held_after_del"] = pool.pool_size()
out["released"] = pool.release()                         # CuPy's free_all_blocks()
out["held_after_release"] = pool.pool_size()
b = cupy.arange(1 << 20, dtype=cupy.float32)
out["sum"] = float(b.sum())
print(json.dumps(out))
"""


def test_cupy_free_all_blocks_is_the_pools_release(gpu):
    pytest.importorskip("cupy")
    out = run_script(CUPY_RELEASE)
    assert out["held"] == out["held_after_del"] >= 64 * MIB
    assert out["released"] == out["held"]
    assert out["held_after_release"] == 0
    assert out["sum"] == float((1 << 20) * ((1 << 20) - 1) // 2)
