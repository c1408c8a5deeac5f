"""rmm.DeviceBuffer and the copy functions of rmm.pylibrmm.device_buffer.

Tests taking ``mr`` run twice: over a host resource (the CPU copies its memory, so they run
without a GPU) and over CudaMemoryResource (skipped without a GPU)."""

import copy
import gc
import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest

import rmm
import rmm._native as native
from rmm.pylibrmm import device_buffer as dbmod
from rmm.pylibrmm.device_buffer import (
    DeviceBuffer,
    copy_device_to_ptr,
    copy_host_to_ptr,
    copy_ptr_to_host,
    to_device,
)
from rmm.pylibrmm.memory_resource import (
    CudaMemoryResource,
    PoolMemoryResource,
    StatisticsResourceAdaptor,
)
from rmm.pylibrmm.stream import DEFAULT_STREAM, Stream
from rmm._native import _device_buffer_mr as _buffer_mr, _device_buffer_stream as _buffer_stream

SIZES = [0, 1, 7, 1000, 4097, 1 << 20]


@pytest.fixture(params=["host", pytest.param("cuda", marks=pytest.mark.needs_gpu)])
def mr(request):
    return native._HostMemoryResource() if request.param == "host" else CudaMemoryResource()


def payload(n, seed=0):
    return np.random.default_rng(seed + n).integers(0, 256, n, dtype=np.uint8)


def filled(n, mr, seed=0):
    data = payload(n, seed)
    buf = DeviceBuffer(size=n, mr=mr)
    buf.copy_from_host(data)
    return buf, data


class FakeCudaArray:
    """Any object with ``__cuda_array_interface__``."""

    def __init__(self, ptr, shape, typestr="|u1", strides=None):
        self.__cuda_array_interface__ = {
            "data": (ptr, False),
            "shape": shape,
            "strides": strides,
            "typestr": typestr,
            "version": 3,
        }


def test_public_names_and_module():
    assert rmm.DeviceBuffer is DeviceBuffer
    assert rmm.pylibrmm.DeviceBuffer is DeviceBuffer
    assert DeviceBuffer.__module__ == "rmm.pylibrmm.device_buffer"
    for name in ["to_device", "copy_ptr_to_host", "copy_host_to_ptr", "copy_device_to_ptr"]:
        assert callable(getattr(dbmod, name))


@pytest.mark.parametrize("n", SIZES)
def test_attributes(mr, n):
    buf = DeviceBuffer(size=n, mr=mr)
    assert buf.size == buf.nbytes == len(buf) == buf.__sizeof__() == buf.capacity() == n
    assert (buf.ptr != 0) == (n > 0)
    assert _buffer_mr(buf) is mr
    assert _buffer_stream(buf) is DEFAULT_STREAM
    assert buf.__cuda_array_interface__ == {
        "data": (buf.ptr, False),
        "shape": (n,),
        "strides": None,
        "typestr": "|u1",
        "version": 0,
    }


@pytest.mark.parametrize("n", SIZES)
def test_host_round_trips(mr, n):
    buf, data = filled(n, mr)
    out = buf.copy_to_host()
    assert isinstance(out, np.ndarray) and out.dtype == np.uint8 and out.shape == (n,)
    np.testing.assert_array_equal(out, data)
    assert buf.tobytes() == data.tobytes() == bytes(buf)
    into = bytearray(n + 3)
    assert buf.copy_to_host(into) is into
    assert bytes(into[:n]) == data.tobytes() and into[n:] == b"\0\0\0"
    view = memoryview(bytearray(n))
    buf.copy_to_host(view)
    assert view.tobytes() == data.tobytes()


def as_numpy(b):
    return np.frombuffer(b, np.uint8)


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview, as_numpy])
def test_copy_from_host_accepts_buffers(mr, kind):
    data = payload(33)
    buf = DeviceBuffer(size=40, mr=mr)
    buf.copy_from_host(bytes(40))
    buf.copy_from_host(kind(data.tobytes()))
    out = buf.copy_to_host()
    np.testing.assert_array_equal(out[:33], data)
    assert not out[33:].any()


@pytest.mark.parametrize("n", SIZES)
def test_construct_from_pointer(mr, n):
    data = payload(n)
    from_host = DeviceBuffer(ptr=data.ctypes.data if n else 0, size=n, mr=mr)
    assert from_host.tobytes() == data.tobytes()
    from_buffer = DeviceBuffer(ptr=from_host.ptr, size=n, mr=mr)
    assert from_buffer.tobytes() == data.tobytes()
    assert n == 0 or from_buffer.ptr != from_host.ptr


@pytest.mark.parametrize("n", SIZES)
def test_copy_keeps_content_and_resource(mr, n):
    buf, data = filled(n, mr)
    for dup in (buf.copy(), copy.copy(buf)):
        assert type(dup) is DeviceBuffer and _buffer_mr(dup) is mr and dup.size == n
        assert n == 0 or dup.ptr != buf.ptr
        assert dup.tobytes() == data.tobytes()
    buf.copy_from_host(bytes(n))
    assert dup.tobytes() == data.tobytes()  # a copy, not a view


def test_reduce_is_to_device_of_the_bytes(mr):
    buf, data = filled(100, mr)
    fn, args = buf.__reduce__()
    assert fn is to_device
    np.testing.assert_array_equal(args[0], data)


@pytest.mark.parametrize("n", [0, 1, 1000, 1 << 20])
def test_resize_and_reserve_keep_content(mr, n):
    buf, data = filled(n, mr)
    half = n // 2
    buf.resize(half)
    assert buf.size == half and buf.capacity() == n  # shrinking keeps the allocation
    assert buf.tobytes() == data[:half].tobytes()
    buf.resize(n)  # back within the capacity: no reallocation
    assert buf.size == n and buf.capacity() == n
    assert buf.tobytes()[:half] == data[:half].tobytes()
    buf.copy_from_host(data)
    buf.resize(2 * n + 1)
    assert buf.size == buf.capacity() == 2 * n + 1
    assert buf.tobytes()[:n] == data.tobytes()
    buf.reserve(4 * n + 10)
    assert buf.size == 2 * n + 1 and buf.capacity() == 4 * n + 10
    assert buf.tobytes()[:n] == data.tobytes()
    buf.reserve(1)  # never shrinks
    assert buf.capacity() == 4 * n + 10


def test_frees_on_collection_and_on_reallocation(host_mr):
    stats = StatisticsResourceAdaptor(host_mr)
    buf = DeviceBuffer(size=1000, mr=stats)
    assert stats.allocation_counts.current_bytes == 1000
    buf.resize(5000)
    assert stats.allocation_counts.current_bytes == 5000
    assert stats.allocation_counts.current_count == 1
    buf.reserve(9000)
    dup = buf.copy()
    assert stats.allocation_counts.current_bytes == 9000 + 5000
    del buf, dup
    gc.collect()
    assert stats.allocation_counts.current_bytes == 0
    assert stats.allocation_counts.current_count == 0


def test_buffer_keeps_its_resource_alive():
    stats = StatisticsResourceAdaptor(native._HostMemoryResource())
    buf = DeviceBuffer(size=64, mr=stats)
    del stats
    gc.collect()
    assert _buffer_mr(buf).allocation_counts.current_bytes == 64
    buf.copy_from_host(b"x" * 64)
    assert buf.tobytes() == b"x" * 64


def test_out_of_memory_is_memory_error(host_mr):
    pool = PoolMemoryResource(host_mr, initial_pool_size="64KiB", maximum_pool_size="64KiB")
    with pytest.raises(MemoryError):
        DeviceBuffer(size=1 << 20, mr=pool)
    buf = DeviceBuffer(size=1024, mr=pool)
    buf.copy_from_host(b"abc")
    with pytest.raises(MemoryError):
        buf.resize(1 << 20)
    assert buf.size == 1024 and buf.tobytes()[:3] == b"abc"  # unchanged by the failure


def test_argument_errors(host_mr):
    with pytest.raises(TypeError):
        DeviceBuffer(size=1, mr=host_mr, stream=None)
    with pytest.raises(TypeError):
        DeviceBuffer(size=1, mr=host_mr, stream=0)
    with pytest.raises(TypeError):
        DeviceBuffer(size=1, mr="not a resource")
    with pytest.raises(TypeError):
        DeviceBuffer(1)  # keyword-only
    with pytest.raises(OverflowError):
        DeviceBuffer(size=-1, mr=host_mr)
    buf = DeviceBuffer(size=8, mr=host_mr)
    with pytest.raises(TypeError):
        buf.resize(4, None)
    with pytest.raises(TypeError):
        buf.copy_to_host(stream=None)
    with pytest.raises(TypeError):
        buf.prefetch(stream=1)
    with pytest.raises(OverflowError):
        buf.reserve(-1)


def test_host_buffer_errors(host_mr):
    buf = DeviceBuffer(size=8, mr=host_mr)
    with pytest.raises(ValueError, match="too small"):
        buf.copy_to_host(bytearray(7))
    with pytest.raises(ValueError, match="too large"):
        buf.copy_from_host(b"123456789")
    with pytest.raises(BufferError):
        buf.copy_to_host(b"12345678")  # read-only
    with pytest.raises(TypeError):
        buf.copy_from_host(None)
    with pytest.raises(TypeError):
        buf.copy_from_host(12)
    with pytest.raises(ValueError):
        buf.copy_from_host(np.zeros((2, 2), dtype=np.uint8))
    with pytest.raises(ValueError):
        buf.copy_from_host(np.zeros(1, dtype=np.float64))
    with pytest.raises(ValueError):
        buf.copy_from_host(np.zeros(8, dtype=np.uint8)[::2])
    with pytest.raises(TypeError):
        to_device(None)
    with pytest.raises(TypeError):
        copy_ptr_to_host(buf.ptr, None)
    with pytest.raises(TypeError):
        copy_host_to_ptr(None, buf.ptr)


def test_copy_from_device_checks_the_interface(host_mr):
    src, data = filled(16, host_mr)
    buf = DeviceBuffer(size=16, mr=host_mr)
    with pytest.raises(ValueError, match="__cuda_array_interface__"):
        buf.copy_from_device(b"not a device array")
    with pytest.raises(ValueError, match="1-D"):
        buf.copy_from_device(FakeCudaArray(src.ptr, (4, 4)))
    with pytest.raises(ValueError, match="non-contiguous"):
        buf.copy_from_device(FakeCudaArray(src.ptr, (8,), strides=(2,)))
    with pytest.raises(ValueError, match="too large"):
        buf.copy_from_device(FakeCudaArray(src.ptr, (5,), typestr="<f4"))


def test_copy_from_device(mr):
    src, data = filled(16, mr)
    buf = DeviceBuffer(size=20, mr=mr)
    buf.copy_from_host(bytes(20))
    buf.copy_from_device(src)
    assert buf.tobytes() == data.tobytes() + bytes(4)
    buf.copy_from_device(FakeCudaArray(src.ptr, (2,), typestr="<u4", strides=(4,)))
    assert buf.tobytes()[:8] == data.tobytes()[:8]


def test_module_copy_functions(mr):
    src, data = filled(64, mr)
    dst = DeviceBuffer(size=64, mr=mr)
    copy_device_to_ptr(src.ptr, dst.ptr, 64)
    host = bytearray(64)
    copy_ptr_to_host(dst.ptr, host)
    assert bytes(host) == data.tobytes()
    copy_host_to_ptr(b"hello", dst.ptr)
    assert dst.tobytes()[:5] == b"hello" and dst.tobytes()[5:] == data.tobytes()[5:]
    copy_ptr_to_host(dst.ptr, bytearray(0))  # nothing to copy


def test_prefetch_is_a_no_op_on_non_managed_memory(mr):
    buf, data = filled(256, mr)
    buf.prefetch()
    buf.prefetch(stream=DEFAULT_STREAM)
    assert buf.tobytes() == data.tobytes()


def run_in_threads(work, n):
    """Runs ``work(seed)`` for seeds ``0..n``, each in a thread of its own, and waits for all."""
    threads = [threading.Thread(target=work, args=(s,)) for s in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_threads_share_a_resource(host_mr):
    stats = StatisticsResourceAdaptor(host_mr)
    errors = []

    def work(seed):
        try:
            for i in range(200):
                buf, data = filled(1 + (seed * 37 + i) % 500, stats, seed)
                buf.resize(buf.size + 100)
                assert buf.tobytes()[: data.size] == data.tobytes()
        except Exception as e:  # reported below
            errors.append(e)

    run_in_threads(work, 4)
    gc.collect()
    assert not errors
    assert stats.allocation_counts.current_bytes == 0


def test_threads_changing_one_buffer_lose_no_memory(host_mr):
    # Each resize or copy allocates without the buffer's lock, so another thread may change the
    # buffer in between: a block another thread's resize outgrew, or the copy of a buffer resized
    # meanwhile, is freed again, and the contents survive every move.
    stats = StatisticsResourceAdaptor(host_mr)
    data = payload(300)
    buf = DeviceBuffer(size=data.size, mr=stats)
    buf.copy_from_host(data)
    errors = []

    def work(seed):
        try:
            for i in range(300):
                n = data.size + 64 * ((seed * 131 + i * 17) % 200)
                if (seed + i) % 3 == 0:
                    buf.reserve(n)
                elif (seed + i) % 3 == 1:
                    buf.resize(n)
                else:
                    assert buf.copy().tobytes()[: data.size] == data.tobytes()
        except Exception as e:  # reported below
            errors.append(e)

    run_in_threads(work, 4)
    assert not errors
    gc.collect()
    assert buf.tobytes()[: data.size] == data.tobytes()
    assert stats.allocation_counts.current_bytes == buf.capacity()
    del buf
    gc.collect()
    assert stats.allocation_counts.current_bytes == 0


# A resource that runs Python takes the GIL inside the buffer's call. One thread calls `op` on a
# buffer and pauses inside the resource (`where`: the allocate or deallocate callback of a
# CallbackMemoryResource, or the failure callback of a FailureCallbackResourceAdaptor), sleeping
# without the GIL; meanwhile the main thread, holding the GIL, reads the buffer. Were the buffer's
# lock held across the resource call, the reader would wait for the lock while holding the GIL and
# the resource for the GIL while holding the lock: the interpreter would hang, so the scenario
# runs in a child process with a time limit. Host memory throughout: no GPU needed.
LOCK_SCENARIO = r"""
import sys, threading, time
import rmm._native as native
import rmm.mr as mr
from rmm.pylibrmm.device_buffer import DeviceBuffer

op, where = sys.argv[1], sys.argv[2]
host = native._HostMemoryResource()
pause, inside = threading.Event(), threading.Event()


def maybe_pause():
    if pause.is_set():
        pause.clear()
        inside.set()
        time.sleep(0.5)  # without the GIL, which the main thread takes to read the buffer


if where == "failure_callback":
    limited = mr.LimitingResourceAdaptor(host, 8192)
    hog = []

    def on_oom(nbytes):
        maybe_pause()
        if hog:
            limited.deallocate(hog.pop(), 8192 - 1024)
            return True
        return False

    resource = mr.FailureCallbackResourceAdaptor(limited, on_oom)
else:
    def allocate(nbytes, stream):
        if where == "allocate":
            maybe_pause()
        return host.allocate(nbytes, stream)

    def deallocate(ptr, nbytes, stream):
        if where == "deallocate":
            maybe_pause()
        host.deallocate(ptr, nbytes, stream)

    resource = mr.CallbackMemoryResource(allocate, deallocate)

data = bytes(range(256)) * 4
buf = DeviceBuffer(size=len(data), mr=resource)
buf.copy_from_host(data)
if where == "failure_callback":
    hog.append(limited.allocate(8192 - 1024))  # the next allocation runs out of room
out = {}


def work():
    try:
        out["result"] = getattr(buf, op)(*([4096] if op != "copy" else []))
    except BaseException as e:
        out["error"] = repr(e)


pause.set()
worker = threading.Thread(target=work)
worker.start()
assert inside.wait(10), "the resource never ran the pausing callback"
seen = (len(buf), buf.size, buf.capacity(), buf.ptr != 0)  # with the GIL held
worker.join(10)
assert not worker.is_alive(), "the worker did not finish"
assert "error" not in out, out["error"]
assert seen[0] in (1024, 4096), seen
if op == "copy":
    assert bytes(out["result"]) == data and bytes(buf) == data
else:
    assert buf.capacity() == 4096 and buf.tobytes()[:1024] == data
    assert buf.size == (4096 if op == "resize" else 1024)
print("ok", op, where, seen)
"""


@pytest.mark.parametrize(
    "op, where",
    [
        ("resize", "allocate"),
        ("resize", "deallocate"),
        ("reserve", "allocate"),
        ("copy", "allocate"),
        ("resize", "failure_callback"),
        ("copy", "failure_callback"),
    ],
)
def test_reading_a_buffer_while_its_resource_runs_python_does_not_deadlock(op, where):
    try:
        proc = subprocess.run(
            [sys.executable, "-c", LOCK_SCENARIO, op, where],
            cwd=os.path.dirname(__file__),  # not python/, whose rmm/ has no _native
            capture_output=True,
            text=True,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        proc = None
    if proc is None:
        pytest.fail(f"{op} with the resource paused in {where}: deadlocked (no end within 30 s)", pytrace=False)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert proc.stdout.startswith("ok "), proc.stdout


# ---- GPU only: the current device resource, streams, interop ----


@pytest.mark.parametrize("n", SIZES)
def test_to_device_and_pickle_on_the_current_resource(gpu, n):
    data = payload(n)
    ptr = data.ctypes.data if n else 0
    for buf in (to_device(data), DeviceBuffer.to_device(data.tobytes()), rmm.DeviceBuffer(ptr=ptr, size=n)):
        assert buf.tobytes() == data.tobytes()
    back = pickle.loads(pickle.dumps(buf))
    assert back.tobytes() == data.tobytes() and (n == 0 or back.ptr != buf.ptr)
    deep = copy.deepcopy(buf)
    assert deep.tobytes() == data.tobytes()


def test_default_resource_is_the_current_device_resource(gpu):
    from rmm.pylibrmm.memory_resource import get_current_device_resource

    buf = DeviceBuffer(size=10)
    assert _buffer_mr(buf) is get_current_device_resource()


def test_work_on_a_non_default_stream(gpu):
    stream = Stream()
    data = payload(1 << 20)
    buf = DeviceBuffer(size=data.size, stream=stream)
    assert _buffer_stream(buf) is stream
    buf.copy_from_host(data, stream=stream)
    stream.synchronize()
    out = np.empty_like(data)
    buf.copy_to_host(out, stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(out, data)
    other = Stream()
    buf.resize(2 * data.size, other)  # moves the buffer to `other`, ordered after `stream`
    assert _buffer_stream(buf) is other
    assert buf.tobytes(other)[: data.size] == data.tobytes()
    assert _buffer_stream(buf.copy()) is other


def test_managed_memory_prefetch(gpu):
    from rmm.pylibrmm import memory_resource as mrs

    if not hasattr(mrs, "ManagedMemoryResource"):
        pytest.skip("ManagedMemoryResource is not built yet")
    buf = DeviceBuffer(size=1 << 20, mr=mrs.ManagedMemoryResource())
    buf.copy_from_host(payload(1 << 20))
    buf.prefetch()
    buf.prefetch(device=-1)  # cudaCpuDeviceId: to the host
    _buffer_stream(buf).synchronize()
    assert buf.tobytes() == payload(1 << 20).tobytes()


def test_cupy_interop(gpu):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    data = payload(1000)
    buf = to_device(data)
    arr = cupy.asarray(buf)
    assert arr.dtype == cupy.uint8 and arr.shape == (1000,)
    np.testing.assert_array_equal(cupy.asnumpy(arr), data)
    src = cupy.arange(100, dtype=cupy.float32)
    dst = DeviceBuffer(size=400)
    dst.copy_from_device(src)
    DEFAULT_STREAM.synchronize()
    np.testing.assert_array_equal(np.frombuffer(dst.tobytes(), np.float32), np.arange(100, dtype=np.float32))
    with pytest.raises(ValueError):
        dst.copy_from_device(cupy.zeros((10, 10), dtype=cupy.uint8))
    with pytest.raises(ValueError):
        dst.copy_from_device(cupy.zeros(20, dtype=cupy.float32)[::2])
    s = cupy.cuda.Stream(non_blocking=True)
    buf2 = DeviceBuffer(size=16, stream=Stream(s))
    buf2.copy_from_host(b"0123456789abcdef", stream=_buffer_stream(buf2))
    s.synchronize()
    assert buf2.tobytes(_buffer_stream(buf2)) == b"0123456789abcdef"


def test_numba_interop(gpu):
    numba_cuda = pytest.importorskip("numba.cuda", reason="numba-cuda is not installed")
    data = payload(500)
    buf = to_device(data)
    arr = numba_cuda.as_cuda_array(buf)
    np.testing.assert_array_equal(arr.copy_to_host(), data)
    src = numba_cuda.to_device(np.arange(10, dtype=np.int64))
    dst = DeviceBuffer(size=80)
    dst.copy_from_device(src)
    DEFAULT_STREAM.synchronize()
    np.testing.assert_array_equal(np.frombuffer(dst.tobytes(), np.int64), np.arange(10))
