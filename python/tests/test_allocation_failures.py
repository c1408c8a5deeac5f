"""An allocating CUDA call that fails with an error other than out of memory raises MemoryError,
as RMM's rmm::bad_alloc does through Cython, with the CUDA error's name in the message; adaptors
let it through and count nothing, a pool growing from its upstream refuses with its own
out-of-memory error quoting it (as RMM's pool does). Host tests use a resource whose allocations
fail so; the GPU test allocates from a view of a pool destroyed after the view was made."""

import gc

import pytest

import rmm
import rmm._native as native
from rmm import mr

NAME = "CUDA_ERROR_INVALID_VALUE"


def failing():
    return native._FailingAllocationResource(NAME, 1)


def test_the_failure_is_memory_error_with_rmms_wording_and_the_cuda_error_name():
    with pytest.raises(MemoryError) as e:
        failing().allocate(256)
    assert str(e.value) == (
        "std::bad_alloc: CUDA error (failed to allocate 256 bytes) in cuMemAlloc: "
        "CUDA_ERROR_INVALID_VALUE (1)"
    )
    assert failing().allocate(0) == 0


def test_a_device_buffer_over_it_is_memory_error():
    with pytest.raises(MemoryError, match=NAME):
        rmm.DeviceBuffer(size=1000, mr=failing())


@pytest.mark.parametrize(
    "make",
    [
        lambda up: mr.StatisticsResourceAdaptor(up),
        lambda up: mr.TrackingResourceAdaptor(up),
        lambda up: mr.LimitingResourceAdaptor(up, 1 << 20),
        lambda up: mr.BinningMemoryResource(up),
    ],
    ids=["statistics", "tracking", "limiting", "binning"],
)
def test_adaptors_let_it_through_and_count_nothing(make):
    ad = make(failing())
    with pytest.raises(MemoryError, match=NAME):
        ad.allocate(1000)
    if isinstance(ad, mr.StatisticsResourceAdaptor):
        assert ad.allocation_counts.total_count == 0
    if isinstance(ad, (mr.TrackingResourceAdaptor, mr.LimitingResourceAdaptor)):
        assert ad.get_allocated_bytes() == 0


def test_the_failure_callback_is_not_called():
    calls = []

    def cb(nbytes):
        calls.append(nbytes)
        return True

    ad = mr.FailureCallbackResourceAdaptor(failing(), cb)
    with pytest.raises(MemoryError, match=NAME):
        ad.allocate(1000)
    assert calls == []


def test_a_growing_pool_refuses_in_rmms_words_quoting_it():
    pool = mr.PoolMemoryResource(failing(), initial_pool_size=0, maximum_pool_size=1 << 22)
    with pytest.raises(MemoryError) as e:
        pool.allocate(1 << 20)
    text = str(e.value)
    assert text.startswith("std::bad_alloc: out_of_memory: Maximum pool size exceeded"), text
    assert NAME in text
    assert pool.pool_size() == 0


def test_a_pool_or_fixed_size_resource_whose_first_chunk_fails_is_memory_error():
    with pytest.raises(MemoryError, match=NAME):
        mr.PoolMemoryResource(failing(), initial_pool_size=1 << 20)
    with pytest.raises(MemoryError, match=NAME):
        mr.FixedSizeMemoryResource(failing())


def test_a_view_of_a_pool_destroyed_afterwards_raises_memory_error(gpu):
    runtime = pytest.importorskip("cuda.bindings.runtime")
    import rmm._cuda.gpu

    props = runtime.cudaMemPoolProps()
    props.allocType = runtime.cudaMemAllocationType.cudaMemAllocationTypePinned
    props.location.id = rmm._cuda.gpu.getDevice()
    props.location.type = runtime.cudaMemLocationType.cudaMemLocationTypeDevice
    err, pool = runtime.cudaMemPoolCreate(props)
    assert err == runtime.cudaError_t.cudaSuccess
    view = mr.CudaAsyncViewMemoryResource(pool)
    view.deallocate(view.allocate(256), 256)
    runtime.cudaDeviceSynchronize()
    (err,) = runtime.cudaMemPoolDestroy(pool)
    assert err == runtime.cudaError_t.cudaSuccess
    with pytest.raises(MemoryError, match=NAME):
        view.allocate(256)
    with pytest.raises(MemoryError, match=NAME):
        rmm.DeviceBuffer(size=256, mr=view)
    stats = mr.StatisticsResourceAdaptor(view)
    with pytest.raises(MemoryError, match=NAME):
        stats.allocate(256)
    assert stats.allocation_counts.total_count == 0
    del stats, view
    gc.collect()
