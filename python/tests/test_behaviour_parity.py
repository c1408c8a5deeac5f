"""Python behaviours that differed from RMM 26.10 (each checked against RMM's sources or its
compiled library): device queries, exceptions and messages, the tracking report, the logging
level, the pool's size check, and `stream=None`."""

import importlib.util
import pickle
import warnings

import pytest

import rmm
import rmm._cuda.gpu as gpu
import rmm.statistics
from rmm import mr
from rmm.pylibrmm.logger import level_enum

HAVE_BINDINGS = importlib.util.find_spec("cuda") is not None and gpu.runtime is not None
needs_bindings = pytest.mark.skipif(not HAVE_BINDINGS, reason="cuda-bindings is not installed")


# --- rmm._cuda.gpu ---------------------------------------------------------------------------


def test_gpu_has_every_function_of_rmm():
    for name in ("getDeviceAttribute", "getDeviceProperties", "deviceGetName", "driverGetVersion",
                 "runtimeGetVersion", "getDevice", "setDevice", "getDeviceCount"):
        assert callable(getattr(gpu, name)), name


def test_errors_take_the_status_alone_and_pickle():
    err = gpu.CUDARuntimeError(100)
    assert err.status == 100
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is gpu.CUDARuntimeError and again.status == 100 and str(again) == str(err)
    assert gpu.CUDADriverError(1).status == 1


@pytest.mark.skipif(HAVE_BINDINGS, reason="checks the message without cuda-bindings")
def test_cuda_python_queries_name_the_package_they_need():
    for call in (lambda: gpu.getDeviceAttribute(16, 0), lambda: gpu.getDeviceProperties(0),
                 lambda: gpu.deviceGetName(0)):
        with pytest.raises(ImportError, match="cuda-bindings"):
            call()


@needs_bindings
def test_runtime_error_message_is_rmms():
    from cuda.bindings import runtime

    err = gpu.CUDARuntimeError(runtime.cudaError_t.cudaErrorNoDevice)
    assert str(err) == "cudaErrorNoDevice: no CUDA-capable device is detected"


@needs_bindings
def test_device_queries_as_cudf_style_setup_code_calls_them(gpu):  # noqa: F811 (the fixture)
    from cuda.bindings import runtime

    device = rmm._cuda.gpu.getDevice()
    count = rmm._cuda.gpu.getDeviceAttribute(runtime.cudaDeviceAttr.cudaDevAttrMultiProcessorCount, device)
    assert isinstance(count, int) and count > 0
    props = rmm._cuda.gpu.getDeviceProperties(device)
    assert isinstance(props, runtime.cudaDeviceProp) and props.multiProcessorCount == count
    name = rmm._cuda.gpu.deviceGetName(device)
    assert isinstance(name, str) and name
    with pytest.raises(rmm._cuda.gpu.CUDARuntimeError):
        rmm._cuda.gpu.getDeviceAttribute(runtime.cudaDeviceAttr.cudaDevAttrMultiProcessorCount, 10_000)


@needs_bindings
def test_async_view_over_a_pool_made_with_cuda_bindings(gpu):  # noqa: F811 (the fixture)
    from cuda.bindings import runtime

    device = rmm._cuda.gpu.getDevice()
    props = runtime.cudaMemPoolProps()
    props.allocType = runtime.cudaMemAllocationType.cudaMemAllocationTypePinned
    props.location.type = runtime.cudaMemLocationType.cudaMemLocationTypeDevice
    props.location.id = device
    status, pool = runtime.cudaMemPoolCreate(props)
    assert status == runtime.cudaError_t.cudaSuccess
    try:
        view = mr.CudaAsyncViewMemoryResource(pool)
        assert view.pool_handle() == int(pool)
        stream = rmm.pylibrmm.stream.Stream()
        for s in (rmm.pylibrmm.stream.DEFAULT_STREAM, stream):
            p = view.allocate(1 << 20, s)
            assert p != 0
            view.deallocate(p, 1 << 20, s)
        buf = rmm.DeviceBuffer(size=4096, mr=view)
        assert buf.size == 4096
        del buf
        stream.synchronize()
        (status,) = runtime.cudaDeviceSynchronize()
        assert status == runtime.cudaError_t.cudaSuccess
    finally:
        runtime.cudaMemPoolDestroy(pool)


# --- adaptors --------------------------------------------------------------------------------


def test_tracking_report_is_empty_when_nothing_is_outstanding(host_mr):
    tracking = mr.TrackingResourceAdaptor(host_mr)
    assert tracking.get_outstanding_allocations_str() == ""
    p = tracking.allocate(64)
    assert tracking.get_outstanding_allocations_str() == f"{p:#x}: 64 B\n"
    tracking.deallocate(p, 64)
    assert tracking.get_outstanding_allocations_str() == ""


def test_popping_the_last_counter_pair_is_rmms_index_error(host_mr):
    stats = mr.StatisticsResourceAdaptor(host_mr)
    with pytest.raises(IndexError) as info:
        stats.pop_counters()
    assert str(info.value) == "cannot pop the last counter pair"
    stats.push_counters()
    stats.pop_counters()
    with pytest.raises(IndexError, match="^cannot pop the last counter pair$"):
        stats.pop_counters()


def test_statistics_module_has_rmms_helpers():
    def f():
        pass

    text = rmm.statistics._get_descriptive_name_of_object(f)
    assert text.endswith("(test_statistics_module_has_rmms_helpers.<locals>.f)")
    assert __file__ in text
    assert rmm.statistics.rmm is rmm


def test_pool_larger_initial_than_maximum_is_rmms_runtime_error(host_mr):
    with pytest.raises(RuntimeError, match="Initial pool size exceeds the maximum pool size!"):
        mr.PoolMemoryResource(host_mr, initial_pool_size=2048, maximum_pool_size=1024)


def test_reinitialize_larger_initial_than_maximum(gpu):  # noqa: F811 (the fixture)
    try:
        with pytest.raises(RuntimeError, match="Initial pool size exceeds the maximum pool size!"):
            rmm.reinitialize(pool_allocator=True, initial_pool_size=2048, maximum_pool_size=1024)
        # As in RMM, the old resources were dropped first: the device gets a default one.
        assert type(mr.get_current_device_resource()) is mr.CudaMemoryResource
    finally:
        rmm.reinitialize()


# --- streams ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [None, 0, "stream"])
def test_allocate_and_deallocate_refuse_a_stream_that_is_not_a_stream(host_mr, bad):
    p = host_mr.allocate(64)
    with pytest.raises(TypeError):
        host_mr.allocate(64, stream=bad)
    with pytest.raises(TypeError):
        host_mr.allocate(64, bad)
    with pytest.raises(TypeError):
        host_mr.deallocate(p, 64, stream=bad)
    host_mr.deallocate(p, 64)


def test_stream_none_message_is_rmms(host_mr):
    with pytest.raises(TypeError, match="^stream argument cannot be None. Please provide a valid Stream instance.$"):
        host_mr.allocate(8, stream=None)


# --- logging ---------------------------------------------------------------------------------


@pytest.mark.parametrize("level", list(level_enum))
def test_logging_level_round_trips_every_level(level):
    before = rmm.get_logging_level()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # levels the logger drops warn, as in RMM
            rmm.set_logging_level(level)
        assert rmm.get_logging_level() == level
        assert rmm.get_logging_level().name == level.name
    finally:
        rmm.set_logging_level(before)


def test_upstream_resource_adaptor_cannot_be_made_directly(host_mr):
    # RMM makes an object with no resource (its allocate crashes): docs/differences.md.
    with pytest.raises(TypeError):
        mr.UpstreamResourceAdaptor(host_mr)
