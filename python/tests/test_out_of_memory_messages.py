"""What the C++ oracle showed against RMM 26.10, seen from Python: out-of-memory messages of the
limiting adaptor and the pool in RMM's words, and the callback resource passing 0-byte requests
and null frees to its callbacks. Host memory: runs without a GPU."""

import pytest

from rmm import mr


def test_limiting_refuses_in_rmms_words(host_mr):
    lim = mr.LimitingResourceAdaptor(host_mr, 1 << 20)
    p = lim.allocate(1000)
    with pytest.raises(
        MemoryError,
        match=r"^std::bad_alloc: out_of_memory: Exceeded memory limit 1048576; Allocated bytes 1024; "
        r"Requested bytes 1048576$",
    ):
        lim.allocate(1 << 20)
    lim.deallocate(p, 1000)


def test_pool_refuses_in_rmms_words(host_mr):
    pool = mr.PoolMemoryResource(host_mr, 1 << 20, 2 << 20)
    with pytest.raises(
        MemoryError,
        match=r"^std::bad_alloc: out_of_memory: Maximum pool size exceeded \(failed to allocate 3\.000000 MiB\): "
        r"Not enough room to grow, current/max/try size = 1024\.000000 KiB, 2\.000000 MiB, 3\.000000 MiB$",
    ):
        pool.allocate(3 << 20)


def test_callbacks_receive_zero_bytes_and_null_frees(host_mr):
    allocs, frees = [], []

    def allocate(nbytes, stream):
        allocs.append(nbytes)
        return host_mr.allocate(nbytes, stream) if nbytes else 0

    def deallocate(ptr, nbytes, stream):
        frees.append(nbytes)
        if ptr:
            host_mr.deallocate(ptr, nbytes, stream)

    cb = mr.CallbackMemoryResource(allocate, deallocate)
    ptrs = [(cb.allocate(n), n) for n in (0, 1, 1000)]
    assert ptrs[0][0] == 0
    for p, n in ptrs:
        cb.deallocate(p, n)
    assert allocs == [0, 1, 1000]
    assert frees == [0, 1, 1000]
