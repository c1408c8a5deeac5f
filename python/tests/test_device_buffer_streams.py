"""DeviceBuffer keeps the stream it names and the object that keeps that stream alive together,
and copies from and to Python host objects are done with them when the call returns.

- ``reserve``/``resize`` to a new stream that fail (the allocation is refused) leave the buffer as
  it was: its stream object, the stream its memory is ordered and freed on, its size, capacity
  and contents. Two threads moving one buffer to different streams leave it on the stream whose
  object it holds.
- A copy from or to a Python host object on a non-default stream is waited for before the
  object's buffer is released, so a pinned buffer may be reused (or freed) at once (GPU tests).

The host tests run over a host resource under a logging adaptor, whose rows show the stream
each allocation and free was made on; streams there are ``Stream`` objects over made-up handles
(``__cuda_stream__``), which a host resource never hands to the driver.
"""

import csv
import ctypes
import gc
import threading
import weakref

import numpy as np
import pytest

import rmm._native as native
from rmm.pylibrmm.device_buffer import (
    DeviceBuffer,
    copy_device_to_ptr,
    copy_host_to_ptr,
    copy_ptr_to_host,
    to_device,
)
from rmm.pylibrmm.memory_resource import (
    CudaMemoryResource,
    LimitingResourceAdaptor,
    LoggingResourceAdaptor,
    PinnedHostMemoryResource,
)
from rmm.pylibrmm.stream import DEFAULT_STREAM, Stream
from rmm._native import _device_buffer_stream as _buffer_stream  # noqa: E402

LIMIT = 1 << 20


class StreamOwner:
    """What a library's stream object looks like to ``Stream(obj)``: it owns a handle."""

    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def handle_of(stream):
    return stream.__cuda_stream__()[1]


@pytest.fixture
def logged(tmp_path):
    """A host resource under a logging adaptor under a limit of LIMIT bytes, and a function
    returning the logged rows as (action, stream handle) pairs."""
    log = LoggingResourceAdaptor(native._HostMemoryResource(), log_file_name=str(tmp_path / "rows.csv"))
    mr = LimitingResourceAdaptor(log, allocation_limit=LIMIT)

    def rows():
        log.flush()
        with open(log.get_file_name()) as f:
            return [(r["Action"], int(r["Stream"], 16)) for r in csv.DictReader(f)]

    return mr, rows


def filled(mr, n, stream=DEFAULT_STREAM):
    data = np.arange(n, dtype=np.uint8)
    buf = DeviceBuffer(size=n, mr=mr, stream=stream)
    buf.copy_from_host(data)
    return buf, data


@pytest.mark.parametrize("method", ["reserve", "resize"])
def test_a_failed_move_to_a_new_stream_leaves_the_buffer_as_it_was(logged, method):
    mr, rows = logged
    old = Stream(StreamOwner(0x1000))
    buf, data = filled(mr, 64, old)
    owner = StreamOwner(0x2000)
    gone = weakref.ref(owner)
    with pytest.raises(MemoryError):
        getattr(buf, method)(LIMIT + 1, stream=Stream(owner))
    del owner
    gc.collect()
    assert gone() is None, "nothing keeps the new stream's owner: the buffer must not name it"
    assert _buffer_stream(buf) is old
    assert (buf.size, buf.capacity()) == (64, 64)
    assert np.array_equal(buf.copy_to_host(), data)
    # The memory is still ordered on the old stream: a copy is made there, the frees happen there.
    copy = buf.copy()
    assert _buffer_stream(copy) is old
    del buf, copy
    gc.collect()
    assert {h for _, h in rows()} == {0x1000}, rows()


@pytest.mark.parametrize("method", ["reserve", "resize"])
def test_a_move_that_succeeds_names_the_new_stream(logged, method):
    mr, rows = logged
    buf, data = filled(mr, 64, Stream(StreamOwner(0x1000)))
    new = Stream(StreamOwner(0x2000))
    getattr(buf, method)(128, stream=new)
    assert _buffer_stream(buf) is new and buf.capacity() == 128
    assert np.array_equal(buf.copy_to_host()[:64], data)
    del buf
    gc.collect()
    # Allocated on the old stream; the new block, and the old block's and its own frees, on the new.
    assert rows() == [("allocate", 0x1000), ("allocate", 0x2000), ("free", 0x2000), ("free", 0x2000)]


def test_threads_moving_one_buffer_leave_it_on_the_stream_it_names(logged):
    mr, rows = logged
    buf, _ = filled(mr, 8)
    streams = [Stream(StreamOwner(0x1000 * (i + 1))) for i in range(2)]
    for round in range(200):
        barrier = threading.Barrier(2)

        def move(i):
            barrier.wait()
            buf.resize(8 + (round % 64) + i, stream=streams[i])

        threads = [threading.Thread(target=move, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        named = handle_of(_buffer_stream(buf))
        del_count = len(rows())
        copy = buf.copy()  # allocated on the stream the memory is on
        action, used = rows()[del_count]
        assert (action, used) == ("allocate", named), f"round {round}: memory on {used:#x}, names {named:#x}"
        del copy


# --- GPU: copies from and to Python host objects are done with them on return ---------------

N = 64 << 20


@pytest.fixture
def busy_stream(gpu):
    """A new stream with several milliseconds of device-to-device copies queued, so that a copy
    enqueued behind them has not run when an asynchronous call returns."""
    stream = Stream()
    a, b = DeviceBuffer(size=1 << 30), DeviceBuffer(size=1 << 30)

    def make_busy():
        for _ in range(10):
            copy_device_to_ptr(a.ptr, b.ptr, 1 << 30, stream=stream)

    yield stream, make_busy
    stream.synchronize()
    del a, b


@pytest.fixture
def pinned(gpu):
    """A pinned host buffer of N bytes as a ctypes array (a Python object with the buffer
    protocol), and its address."""
    mr = PinnedHostMemoryResource()
    ptr = mr.allocate(N)
    yield (ctypes.c_ubyte * N).from_address(ptr), ptr
    mr.deallocate(ptr, N)


def test_copy_host_to_ptr_has_read_a_pinned_source_on_return(busy_stream, pinned):
    stream, make_busy = busy_stream
    src, ptr = pinned
    ctypes.memset(ptr, 0xAB, N)
    dst = DeviceBuffer(size=N, mr=CudaMemoryResource())
    make_busy()
    copy_host_to_ptr(src, dst.ptr, stream=stream)
    ctypes.memset(ptr, 0xCD, N)  # reused at once, as a released buffer may be
    stream.synchronize()
    assert (dst.copy_to_host() == 0xAB).all()


def test_copy_ptr_to_host_has_filled_a_pinned_destination_on_return(busy_stream, pinned):
    stream, make_busy = busy_stream
    dst, ptr = pinned
    ctypes.memset(ptr, 0, N)
    src = to_device(np.full(N, 0xAB, dtype=np.uint8))
    make_busy()
    copy_ptr_to_host(src.ptr, dst, stream=stream)
    assert bytes(dst[:16]) == b"\xab" * 16 and bytes(dst[N - 16 :]) == b"\xab" * 16


def test_device_buffer_host_copies_are_done_with_a_pinned_buffer_on_return(busy_stream, pinned):
    stream, make_busy = busy_stream
    host, ptr = pinned
    ctypes.memset(ptr, 0xAB, N)
    make_busy()
    buf = to_device(host, stream=stream)
    ctypes.memset(ptr, 0xCD, N)  # the source reused at once
    stream.synchronize()
    assert (buf.copy_to_host() == 0xAB).all()

    make_busy()
    buf.copy_from_host(host, stream=stream)
    ctypes.memset(ptr, 0, N)
    stream.synchronize()
    assert (buf.copy_to_host() == 0xCD).all()

    make_busy()
    buf.copy_to_host(host, stream=stream)  # read at once: filled when the call returns
    assert bytes(host[:16]) == b"\xcd" * 16 and bytes(host[N - 16 :]) == b"\xcd" * 16
