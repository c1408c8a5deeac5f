"""The resources that take memory from the driver (these need a GPU), and their argument
checks that need none."""

import gc
import inspect

import pytest

import rmm.mr as mr
from rmm.mr.experimental import CudaAsyncManagedMemoryResource
from rmm.pylibrmm.stream import DEFAULT_STREAM


def test_cuda_async_signature():
    params = inspect.signature(mr.CudaAsyncMemoryResource).parameters
    assert {k: v.default for k, v in params.items()} == {
        "initial_pool_size": None,
        "release_threshold": None,
        "enable_ipc": False,
        "enable_fabric": False,
    }


class _PoolHandle:
    """What cuda-python's cudaMemPool_t offers: int() is the handle, getPtr() its storage."""

    def __init__(self, handle):
        self.handle = handle

    def __int__(self):
        return self.handle

    def getPtr(self):
        return id(self)


@pytest.mark.parametrize("bad", ["not a pool", 1.5, None, -1, True, object(), 0x1234])
def test_cuda_async_view_rejects_non_handles(bad):
    with pytest.raises(ValueError, match="cudaMemPool_t or CUmemoryPool"):
        mr.CudaAsyncViewMemoryResource(bad)


def _round_trip(resource, size=1 << 20):
    ptr = resource.allocate(size, DEFAULT_STREAM)
    assert ptr != 0
    resource.deallocate(ptr, size, DEFAULT_STREAM)


def test_cuda_async(gpu):
    pool = mr.CudaAsyncMemoryResource(initial_pool_size="2MiB", release_threshold=1 << 20)
    _round_trip(pool)
    assert pool._pool_handle() != 0
    _round_trip(mr.CudaAsyncMemoryResource())


def test_cuda_async_ipc_and_fabric_together_where_the_device_has_both(gpu):
    """As RMM: one pool exporting both ways where the device supports both, else RuntimeError."""
    try:
        both = mr.CudaAsyncMemoryResource(enable_ipc=True, enable_fabric=True)
    except RuntimeError as e:
        assert "not supported" in str(e)
        alone = []
        for kw in ({"enable_ipc": True}, {"enable_fabric": True}):
            try:
                mr.CudaAsyncMemoryResource(**kw)
                alone.append(True)
            except RuntimeError:
                alone.append(False)
        assert not all(alone), "each alone works, so both together must"
    else:
        _round_trip(both)


def test_cuda_async_view_of_an_owning_pool(gpu):
    owner = mr.CudaAsyncMemoryResource()
    view = mr.CudaAsyncViewMemoryResource(_PoolHandle(owner._pool_handle()))
    assert view.pool_handle() == owner._pool_handle()
    _round_trip(view)


def test_cuda_async_view_keeps_its_owner_alive(gpu):
    owner = mr.CudaAsyncMemoryResource()
    handle = owner._pool_handle()
    view = mr.CudaAsyncViewMemoryResource(_PoolHandle(handle))
    del owner
    gc.collect()
    # The pool is still there: the view holds the resource that owns it.
    assert view.pool_handle() == handle
    _round_trip(view)


def test_cuda_async_view_of_a_destroyed_pool_is_refused(gpu):
    owner = mr.CudaAsyncMemoryResource()
    handle = owner._pool_handle()
    del owner
    gc.collect()
    with pytest.raises(ValueError, match="not a live CUDA memory pool"):
        mr.CudaAsyncViewMemoryResource(_PoolHandle(handle))


def test_cuda_async_view_of_a_runtime_pool(gpu):
    """RMM's own test of the view: a pool made with the runtime API by cuda-python."""
    runtime = pytest.importorskip("cuda.bindings.runtime")
    import rmm._cuda.gpu

    props = runtime.cudaMemPoolProps()
    props.allocType = runtime.cudaMemAllocationType.cudaMemAllocationTypePinned
    props.location.id = rmm._cuda.gpu.getDevice()
    props.location.type = runtime.cudaMemLocationType.cudaMemLocationTypeDevice
    err, pool = runtime.cudaMemPoolCreate(props)
    assert err == runtime.cudaError_t.cudaSuccess
    view = mr.CudaAsyncViewMemoryResource(pool)
    assert view.pool_handle() == int(pool)
    _round_trip(view)
    del view
    (err,) = runtime.cudaMemPoolDestroy(pool)
    assert err == runtime.cudaError_t.cudaSuccess


@pytest.mark.parametrize("cls", [mr.CudaMemoryResource, mr.ManagedMemoryResource, mr.PinnedHostMemoryResource])
def test_simple_resources(gpu, cls):
    _round_trip(cls())


def test_system_and_sam_headroom(gpu):
    try:
        system = mr.SystemMemoryResource()
    except RuntimeError:
        pytest.skip("this device cannot access system memory (no HMM/ATS)")
    _round_trip(system)
    _round_trip(mr.SamHeadroomMemoryResource(headroom=1 << 20))


def test_async_managed(gpu):
    try:
        managed = CudaAsyncManagedMemoryResource()
    except RuntimeError:
        pytest.skip("no managed memory pools on this device/driver")
    assert managed.pool_handle() != 0
    _round_trip(managed)


def test_prefetch_over_managed(gpu):
    pre = mr.PrefetchResourceAdaptor(mr.ManagedMemoryResource())
    _round_trip(pre)


def test_pool_arena_over_cuda(gpu):
    cuda = mr.CudaMemoryResource()
    _round_trip(mr.ArenaMemoryResource(cuda, arena_size="8MiB"))
    _round_trip(mr.FixedSizeMemoryResource(cuda), 1000)
    _round_trip(mr.BinningMemoryResource(cuda, 12, 20), 3000)


def test_current_device_resource_object_identity(gpu):
    original = mr.get_current_device_resource()
    try:
        lim = mr.LimitingResourceAdaptor(original, 1 << 30)
        mr.set_current_device_resource(lim)
        assert mr.get_current_device_resource() is lim
    finally:
        mr.set_current_device_resource(original)
