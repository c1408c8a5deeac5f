"""The package used as a user would, for the type checkers: ``mypy --strict`` checks this file
against the installed wheel (its stubs and ``py.typed``) and must find nothing
(``make python-typecheck``). Each ``assert_type`` pins what a call returns; each
``# type: ignore[...]`` marks a call the stubs must reject (``--strict`` reports an ignore that is
not needed, so a stub that lets anything through fails the check).

On a machine with a GPU it also runs (``python smoke.py``; ``test_typing_smoke.py`` runs it under
pytest); without one, the type check is the whole test.
"""

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if sys.version_info >= (3, 11):
    from typing import assert_type
else:  # typing_extensions comes with mypy
    from typing_extensions import assert_type

import rmm
import rmm.statistics
from rmm.allocators.cupy import rmm_cupy_allocator
from rmm.pylibrmm.stream import DEFAULT_STREAM, CudaStreamFlags, Stream

if TYPE_CHECKING:  # importing it imports PyTorch, which a run of this script leaves alone
    from rmm.allocators.torch import rmm_torch_allocator
    # Names RMM's stubs declare for type checkers only (C-level functions, a Protocol): no
    # import finds them at run time, in RMM or here.
    from rmm.pylibrmm.device_buffer import SupportsCUDAArrayInterface
    from rmm.pylibrmm.helper import parse_bytes
    from rmm.pylibrmm.utils import as_stream

    assert_type(parse_bytes("1GiB"), int)
    assert_type(as_stream(DEFAULT_STREAM), Stream)
    interface: SupportsCUDAArrayInterface = rmm.DeviceBuffer(size=8)


def resources() -> rmm.mr.DeviceMemoryResource:
    """A stack of resources built by hand and made the current one."""
    cuda = rmm.mr.CudaMemoryResource()
    pool = rmm.mr.PoolMemoryResource(cuda, initial_pool_size="64MiB", maximum_pool_size=1 << 30)
    assert_type(pool.pool_size(), int)
    assert_type(pool.release(), int)
    assert_type(pool.get_upstream(), rmm.mr.DeviceMemoryResource)
    stats = rmm.mr.StatisticsResourceAdaptor(pool)
    tracking = rmm.mr.TrackingResourceAdaptor(stats, capture_stacks=False)
    limiting = rmm.mr.LimitingResourceAdaptor(tracking, allocation_limit=1 << 29)
    assert_type(limiting.get_allocation_limit(), int)
    binning = rmm.mr.BinningMemoryResource(limiting, min_size_exponent=10, max_size_exponent=20)
    binning.add_bin(1 << 22, rmm.mr.FixedSizeMemoryResource(pool, block_size=1 << 22, blocks_to_preallocate=4))
    assert_type(binning.bin_mrs, list[rmm.mr.DeviceMemoryResource])

    def on_failure(nbytes: int) -> bool:
        return False

    guarded = rmm.mr.FailureCallbackResourceAdaptor(binning, on_failure)
    rmm.mr.set_current_device_resource(guarded)
    assert_type(rmm.mr.get_current_device_resource(), rmm.mr.DeviceMemoryResource)
    free, total = rmm.mr.available_device_memory()
    assert_type(free + total, int)

    if TYPE_CHECKING:  # rejected by the stubs (and by the extension at run time)
        rmm.mr.PoolMemoryResource("not a resource")  # type: ignore[arg-type]
        rmm.mr.PoolMemoryResource(cuda, initial_pool_size=1.5)  # type: ignore[arg-type]
    return guarded


def buffers(mr: rmm.mr.DeviceMemoryResource) -> None:
    """DeviceBuffer: allocation, copies both ways, resize, streams."""
    stream = Stream(flags=CudaStreamFlags.NON_BLOCKING)
    buf = rmm.DeviceBuffer(size=1024, stream=stream, mr=mr)
    assert_type(buf.size, int)
    assert_type(buf.ptr, int)
    host = np.arange(1024, dtype=np.uint8)
    buf.copy_from_host(host, stream=stream)
    back = buf.copy_to_host()
    assert_type(back, NDArray[np.uint8])
    assert_type(buf.copy_to_host(bytearray(1024), stream), bytearray)
    buf.resize(2048, stream)
    assert_type(buf.capacity(), int)
    assert_type(buf.tobytes(), bytes)
    copy = rmm.DeviceBuffer.to_device(b"some bytes", stream=DEFAULT_STREAM)
    assert_type(copy.copy(), rmm.DeviceBuffer)
    assert_type(buf.__cuda_array_interface__["data"], tuple[int, bool])
    stream.synchronize()

    ptr = mr.allocate(256, stream)
    assert_type(ptr, int)
    mr.deallocate(ptr, 256, stream)
    if TYPE_CHECKING:
        rmm.DeviceBuffer(1024)  # type: ignore[call-arg]
        mr.allocate("256")  # type: ignore[arg-type]


def statistics() -> None:
    """Counts over the current resource, and the profiler."""
    with rmm.statistics.statistics():
        rmm.DeviceBuffer(size=1000)
        counts = rmm.statistics.get_statistics()
        assert counts is not None
        assert_type(counts.peak_bytes, int)

    @rmm.statistics.profiler(name="allocate")
    def allocate(n: int) -> rmm.DeviceBuffer:
        return rmm.DeviceBuffer(size=n)

    assert_type(allocate(10), rmm.DeviceBuffer)
    rmm.statistics.default_profiler_records.report()


def main() -> None:
    rmm.reinitialize(pool_allocator=True, initial_pool_size="256MiB", maximum_pool_size="1GiB")
    assert_type(rmm.is_initialized(), bool)
    rmm.reinitialize(managed_memory=True, devices=[0], logging=False)
    if TYPE_CHECKING:
        rmm.reinitialize(pool_size=1)  # type: ignore[call-arg]
    buffers(resources())
    statistics()
    virtual = rmm.mr.VirtualPoolMemoryResource(maximum_pool_size="1GiB")
    assert_type(virtual.release(), int)
    async_mr = rmm.mr.CudaAsyncMemoryResource(initial_pool_size="64MiB", release_threshold=1 << 28)
    arena = rmm.mr.ArenaMemoryResource(async_mr, arena_size=1 << 26)
    rmm.mr.set_per_device_resource(0, arena)
    assert_type(rmm.mr.get_per_device_resource(0), rmm.mr.DeviceMemoryResource)
    allocator: Callable[[int], object] = rmm_cupy_allocator  # cupy.cuda.set_allocator(...)
    del allocator
    if TYPE_CHECKING and rmm_torch_allocator is not None:  # PyTorch sees a GPU
        torch_allocator: object = rmm_torch_allocator  # torch.cuda.memory.change_current_allocator
        del torch_allocator
    rmm.set_logging_level(rmm.level_enum.warn)
    assert_type(rmm.get_logging_level(), rmm.level_enum)
    rmm.reinitialize()


if __name__ == "__main__":
    main()
