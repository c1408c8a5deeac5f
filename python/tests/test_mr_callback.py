"""CallbackMemoryResource: Python functions serve the requests."""

import pytest

import rmm.mr as mr
from rmm.pylibrmm.stream import Stream


def test_callbacks_get_sizes_and_streams(host_mr):
    calls = []

    def allocate(size, stream):
        calls.append(("alloc", size, type(stream)))
        return host_mr.allocate(size, stream)

    def deallocate(ptr, size, stream):
        calls.append(("free", size, type(stream)))
        host_mr.deallocate(ptr, size, stream)

    cb = mr.CallbackMemoryResource(allocate, deallocate)
    assert isinstance(cb, mr.DeviceMemoryResource)
    p = cb.allocate(1000)
    cb.deallocate(p, 1000)
    assert calls == [("alloc", 1000, Stream), ("free", 1000, Stream)]
    # As in RMM, empty requests and null frees reach the callbacks too.
    assert cb.allocate(0) == 0
    cb.deallocate(0, 0)
    assert calls[2:] == [("alloc", 0, Stream), ("free", 0, Stream)]


def test_callback_keywords(host_mr):
    cb = mr.CallbackMemoryResource(
        allocate_func=lambda n, s: host_mr.allocate(n, s),
        deallocate_func=lambda p, n, s: host_mr.deallocate(p, n, s),
    )
    stats = mr.StatisticsResourceAdaptor(cb)
    p = stats.allocate(64)
    assert stats.allocation_counts.current_bytes == 64
    stats.deallocate(p, 64)


def test_exception_in_allocate_becomes_runtime_error(host_mr):
    def allocate(size, stream):
        raise KeyError("no such allocation")

    cb = mr.CallbackMemoryResource(allocate, lambda p, n, s: None)
    with pytest.raises(RuntimeError, match="no such allocation"):
        cb.allocate(16)


def test_memory_error_in_allocate_stays_memory_error(host_mr):
    def allocate(size, stream):
        raise MemoryError(f"cannot give {size}")

    cb = mr.CallbackMemoryResource(allocate, lambda p, n, s: None)
    with pytest.raises(MemoryError, match="cannot give 16"):
        cb.allocate(16)
    # Through an adaptor the error keeps its type and message.
    with pytest.raises(MemoryError, match="cannot give 32"):
        mr.StatisticsResourceAdaptor(cb).allocate(32)


def test_exception_in_deallocate(host_mr):
    def deallocate(ptr, size, stream):
        raise ValueError("bad free")

    cb = mr.CallbackMemoryResource(lambda n, s: host_mr.allocate(n, s), deallocate)
    p = cb.allocate(16)
    # As RMM's: the callback's exception is the cause of a SystemError, for a null free too (it
    # reaches the callback, as in RMM).
    for ptr, n in ((p, 16), (0, 100)):
        with pytest.raises(SystemError, match="returned a result with an exception set") as info:
            cb.deallocate(ptr, n)
        assert "bad free" in str(info.value.__cause__)
    host_mr.deallocate(p, 16)


def test_allocate_must_return_an_int(host_mr):
    cb = mr.CallbackMemoryResource(lambda n, s: "not a pointer", lambda p, n, s: None)
    with pytest.raises(RuntimeError):
        cb.allocate(16)
