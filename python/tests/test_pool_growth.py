"""A pool with a maximum size grows as RMM 26.10's does: by the larger of the request and half
the room left (rounded up to 256 bytes, its half not rounded again), and gives wholly free chunks
back before a request larger than the room left. The numbers are RMM's own, recorded on a GPU."""

import pytest

import rmm
from rmm import mr

MiB = 1 << 20


def test_half_the_room_is_not_rounded_down(host_mr):
    pool = mr.PoolMemoryResource(host_mr, initial_pool_size=256, maximum_pool_size=MiB)
    a = rmm.DeviceBuffer(size=1000, mr=pool)
    assert pool.pool_size() == 524416
    with pytest.raises(MemoryError):
        rmm.DeviceBuffer(size=2 * MiB, mr=pool)
    assert pool.pool_size() == 524416
    del a


def test_the_room_is_rounded_up_as_rmm_rounds_it(host_mr):
    pool = mr.PoolMemoryResource(host_mr, initial_pool_size=256, maximum_pool_size=4 * MiB)
    a = rmm.DeviceBuffer(size=1000, mr=pool)
    assert pool.pool_size() == 2097280
    b = rmm.DeviceBuffer(size=2 * MiB, mr=pool)
    assert pool.pool_size() == 4194432
    del a, b


def test_a_free_chunk_goes_back_before_a_request_above_the_room_left(host_mr):
    outer = mr.PoolMemoryResource(host_mr, initial_pool_size=4 * MiB)
    inner = mr.PoolMemoryResource(outer, initial_pool_size=MiB, maximum_pool_size=2 * MiB)
    a = rmm.DeviceBuffer(size=1500 * 1024, mr=inner)
    assert inner.pool_size() == 1536000
    with pytest.raises(MemoryError):
        rmm.DeviceBuffer(size=1500 * 1024, mr=inner)
    assert inner.pool_size() == 1536000
    del a
