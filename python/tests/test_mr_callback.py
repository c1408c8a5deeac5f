"""CallbackMemoryResource: Python functions serve the requests."""

import pytest

import rmm
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


def test_misaligned_address_raises_runtime_error_and_is_handed_back(host_mr):
    base = host_mr.allocate(1024)
    freed = []
    cb = mr.CallbackMemoryResource(lambda n, s: base + 8, lambda p, n, s: freed.append((p, n)))
    with pytest.raises(RuntimeError, match=f"returned {base + 8:#x} for 100 bytes.*not aligned to 256 bytes"):
        cb.allocate(100)
    # Nothing is handed out: the address goes back to the deallocate callback, as it came.
    assert freed == [(base + 8, 100)]
    stats = mr.StatisticsResourceAdaptor(cb)
    with pytest.raises(RuntimeError, match="not aligned to 256 bytes"):
        stats.allocate(100)
    with pytest.raises(RuntimeError, match="not aligned to 256 bytes"):
        rmm.DeviceBuffer(size=100, mr=cb)
    assert stats.allocation_counts.current_bytes == 0 and stats.allocation_counts.current_count == 0
    assert freed == [(base + 8, 100)] * 3

    def refuse_free(ptr, nbytes, stream):
        raise ValueError("bad free")

    # A deallocate callback that raises on the way back is named in the same error.
    cb = mr.CallbackMemoryResource(lambda n, s: base + 8, refuse_free)
    with pytest.raises(RuntimeError, match="not aligned.*handing it back to deallocate_func failed.*bad free"):
        cb.allocate(100)
    host_mr.deallocate(base, 1024)


@pytest.mark.parametrize("answer", [1.5, "x", None, -1, 1 << 70])
def test_non_int_or_out_of_range_address_raises_runtime_error(answer):
    freed = []
    cb = mr.CallbackMemoryResource(lambda n, s: answer, lambda p, n, s: freed.append(p))
    not_an_address = r"^bad upstream: allocate_func returned .* for 100 bytes, which is not an address"
    with pytest.raises(RuntimeError, match=not_an_address):
        cb.allocate(100)
    assert freed == []  # no address to hand back


def test_null_address_raises_memory_error(host_mr):
    freed = []
    cb = mr.CallbackMemoryResource(lambda n, s: 0, lambda p, n, s: freed.append(p))
    with pytest.raises(MemoryError, match="returned null"):
        cb.allocate(100)
    with pytest.raises(MemoryError):
        rmm.DeviceBuffer(size=100, mr=cb)
    assert freed == []  # null is no memory: nothing to hand back
    # A zero-byte request may be answered with anything, null included (as in RMM).
    assert cb.allocate(0) == 0
