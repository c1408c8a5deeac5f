"""rmm.pylibrmm.stream.Stream and CudaStreamPool."""

import gc
import weakref

import pytest

import rmm.pylibrmm
from rmm.pylibrmm.cuda_stream_pool import CudaStreamPool
from rmm.pylibrmm.device_buffer import DeviceBuffer
from rmm.pylibrmm.stream import (
    DEFAULT_STREAM,
    LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
    CudaStreamFlags,
    Stream,
)


class ProtocolStream:
    """A foreign stream object speaking the CUDA stream protocol."""

    def __init__(self, handle, version=0):
        self.handle, self.version = handle, version

    def __cuda_stream__(self):
        return (self.version, self.handle)


def test_default_stream_constants():
    assert DEFAULT_STREAM.__cuda_stream__() == (0, 0)
    assert LEGACY_DEFAULT_STREAM.__cuda_stream__() == (0, 1)
    assert PER_THREAD_DEFAULT_STREAM.__cuda_stream__() == (0, 2)
    assert DEFAULT_STREAM.is_default() and LEGACY_DEFAULT_STREAM.is_default()
    assert not PER_THREAD_DEFAULT_STREAM.is_default()
    assert DEFAULT_STREAM != LEGACY_DEFAULT_STREAM and DEFAULT_STREAM != 0
    assert Stream(DEFAULT_STREAM) == DEFAULT_STREAM
    assert hash(Stream(PER_THREAD_DEFAULT_STREAM)) == hash(PER_THREAD_DEFAULT_STREAM) == hash(2)
    assert Stream.__module__ == "rmm.pylibrmm.stream"


def test_flags_enum():
    assert CudaStreamFlags.SYNC_DEFAULT == 0 and CudaStreamFlags.NON_BLOCKING == 1
    assert rmm.pylibrmm.CudaStreamFlags is CudaStreamFlags


def test_stream_protocol_objects_are_wrapped_and_kept_alive():
    foreign = ProtocolStream(0x1234)
    alive = weakref.ref(foreign)
    s = Stream(foreign)
    assert s.__cuda_stream__() == (0, 0x1234) and not s.is_default()
    assert Stream(s) == s
    del foreign
    gc.collect()
    assert alive() is not None  # the Stream owns it
    del s
    gc.collect()
    assert alive() is None


def test_stream_construction_errors():
    with pytest.raises(NotImplementedError):
        Stream(ProtocolStream(5, version=1))
    with pytest.raises(ValueError):
        Stream(ProtocolStream(5), flags=CudaStreamFlags.NON_BLOCKING)
    with pytest.raises(TypeError, match="Cannot create stream from <class 'int'>"):
        Stream(42)


def test_stream_pool_size_zero_is_runtime_error():
    with pytest.raises(RuntimeError):
        CudaStreamPool(0)
    assert CudaStreamPool.__module__ == "rmm.pylibrmm.cuda_stream_pool"
    assert rmm.pylibrmm.CudaStreamPool is CudaStreamPool


# ---- GPU only ----


@pytest.mark.parametrize("flags", [None, CudaStreamFlags.SYNC_DEFAULT, CudaStreamFlags.NON_BLOCKING])
def test_new_stream(gpu, flags):
    s = Stream() if flags is None else Stream(flags=flags)
    version, handle = s.__cuda_stream__()
    assert version == 0 and handle not in (0, 1, 2)
    assert not s.is_default() and s != DEFAULT_STREAM
    s.synchronize()
    buf = DeviceBuffer(size=100, stream=s)
    buf.copy_from_host(bytes(range(100)), stream=s)
    assert buf.tobytes(s) == bytes(range(100))


@pytest.mark.parametrize("flags", [CudaStreamFlags.SYNC_DEFAULT, CudaStreamFlags.NON_BLOCKING])
def test_stream_pool(gpu, flags):
    pool = CudaStreamPool(4, flags)
    assert pool.get_pool_size() == 4
    assert CudaStreamPool().get_pool_size() == 16
    by_id = [pool.get_stream(i) for i in range(4)]
    assert len({s.__cuda_stream__()[1] for s in by_id}) == 4
    assert pool.get_stream(5) == by_id[1]  # ids wrap around the pool size
    turns = {pool.get_stream().__cuda_stream__()[1] for _ in range(8)}
    assert turns == {s.__cuda_stream__()[1] for s in by_id}
    s = pool.get_stream(2)
    del pool, by_id
    gc.collect()
    s.synchronize()  # the stream keeps its pool alive
    with pytest.raises(OverflowError):
        CudaStreamPool(2).get_stream(-1)


def test_cupy_streams(gpu):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    cs = cupy.cuda.Stream(non_blocking=True)
    s = Stream(cs)
    assert s.__cuda_stream__()[1] == cs.ptr
    ext = cupy.cuda.ExternalStream(cs.ptr)
    assert Stream(ext) == s
    s.synchronize()


def test_numba_streams(gpu):
    numba_cuda = pytest.importorskip("numba.cuda", reason="numba-cuda is not installed")
    ns = numba_cuda.stream()
    s = Stream(ns)
    assert s.__cuda_stream__()[1] == int(ns)
    s.synchronize()


def test_torch_streams(gpu):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA device")
    ts = torch.cuda.Stream()
    s = Stream(ts)
    assert s.__cuda_stream__()[1] == ts.cuda_stream
    buf = DeviceBuffer(size=8, stream=s)
    buf.copy_from_host(b"torchbuf", stream=s)
    assert buf.tobytes(s) == b"torchbuf"
