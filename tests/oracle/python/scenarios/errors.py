"""Errors: what each refusal raises (type; message where it is RMM's own text), exceptions thrown
by user callbacks, double frees and frees through another resource, rmm._cuda.gpu's helpers, and
allocations whose upstream or driver fails with something other than out-of-memory."""

import re

from oracle_lib import register, scenario
from scen_util import HUGE, make, ptr_facts

_OOM_RESOURCES = ["cuda", "managed", "cuda_async", "pool", "arena", "binning", "limiting",
                  "statistics", "tracking", "failure_callback", "callback", "stats_over_pool"]


def _oom_type(name):
    def run(t):
        import rmm

        mr = make(rmm, name)
        t.call("allocate", mr.allocate, HUGE, conv=ptr_facts)
        t.call("buffer", rmm.DeviceBuffer, size=HUGE, mr=mr, conv=lambda b: b.size)
        try:
            mr.allocate(HUGE)
        except Exception as e:  # noqa: BLE001
            t.rec("is_memory_error", isinstance(e, MemoryError))
            t.rec("mro", [c.__name__ for c in type(e).__mro__])
            t.rec("has_args", len(e.args))

    return run


for _n in _OOM_RESOURCES:
    register(_oom_type(_n), __name__, f"out_of_memory/{_n}")


def _callback_exception(exc_factory, label):
    def run(t):
        import rmm

        def alloc(n, s):
            raise exc_factory()

        mr = rmm.mr.CallbackMemoryResource(alloc, lambda p, n, s: None)
        t.call("allocate", mr.allocate, 64, msg=True, conv=ptr_facts)
        t.call("buffer", rmm.DeviceBuffer, size=64, mr=mr, msg=True, conv=lambda b: b.size)
        ad = rmm.mr.StatisticsResourceAdaptor(mr)
        t.call("through_adaptor", ad.allocate, 64, msg=True, conv=ptr_facts)
        t.rec("counts_after", ad.allocation_counts.total_count)

    return run


_EXCEPTIONS = {
    "ValueError": lambda: ValueError("bad value"),
    "TypeError": lambda: TypeError("bad type"),
    "MemoryError": lambda: MemoryError("no memory"),
    "RuntimeError": lambda: RuntimeError("runtime"),
    "KeyError": lambda: KeyError("key"),
    "IndexError": lambda: IndexError("index"),
    "OverflowError": lambda: OverflowError("overflow"),
    "ZeroDivisionError": lambda: ZeroDivisionError("zero"),
    "NotImplementedError": lambda: NotImplementedError("ni"),
    "OSError": lambda: OSError("os"),
    "Exception": lambda: Exception("plain"),
    "custom": lambda: type("CustomError", (Exception,), {})("custom"),
    "custom_memory": lambda: type("CustomMemoryError", (MemoryError,), {})("custom oom"),
}
for _k, _f in _EXCEPTIONS.items():
    register(_callback_exception(_f, _k), __name__, f"callback_raises/{_k}")


def _failure_callback_exception(exc_factory):
    def run(t):
        import rmm

        def cb(n):
            raise exc_factory()

        lim = rmm.mr.LimitingResourceAdaptor(rmm.mr.CudaMemoryResource(), 128)
        mr = rmm.mr.FailureCallbackResourceAdaptor(lim, cb)
        t.call("allocate", mr.allocate, 1024, msg=True, conv=ptr_facts)
        t.call("buffer", rmm.DeviceBuffer, size=1024, mr=mr, msg=True, conv=lambda b: b.size)

    return run


for _k in ["ValueError", "MemoryError", "RuntimeError", "custom"]:
    register(_failure_callback_exception(_EXCEPTIONS[_k]), __name__,
             f"failure_callback_raises/{_k}")


@scenario()
def dealloc_callback_raises(t):
    import rmm

    up = rmm.mr.CudaMemoryResource()

    def dealloc(p, n, s):
        up.deallocate(p, n, s)
        raise ValueError("free failed")

    mr = rmm.mr.CallbackMemoryResource(lambda n, s: up.allocate(n, s), dealloc)
    p = mr.allocate(100)
    # The message names the method object (its address included): only the type is comparable.
    t.call("deallocate", mr.deallocate, p, 100)
    b = rmm.DeviceBuffer(size=100, mr=mr)
    import gc

    def drop():
        nonlocal b
        del b
        gc.collect()

    t.call("buffer_drop", drop)


@scenario()
def double_free_cuda(t):
    import rmm

    mr = rmm.mr.CudaMemoryResource()
    p = mr.allocate(1024)
    t.call("first", mr.deallocate, p, 1024)
    t.call("second", mr.deallocate, p, 1024)
    q = t.call("after", mr.allocate, 1024, conv=ptr_facts)
    if q is not None:
        mr.deallocate(q, 1024)


@scenario()
def free_null(t):
    import rmm

    for name in ["cuda", "managed", "cuda_async", "pool", "statistics", "tracking", "limiting"]:
        mr = make(rmm, name)
        t.call(name, mr.deallocate, 0, 0)
        t.call(name + ".sized", mr.deallocate, 0, 100)
        if hasattr(mr, "allocation_counts"):
            t.rec(name + ".counts", mr.allocation_counts.total_count)
        if hasattr(mr, "get_allocated_bytes"):
            t.rec(name + ".bytes", mr.get_allocated_bytes())


@scenario()
def free_through_other_adaptor(t):
    import rmm

    cuda = rmm.mr.CudaMemoryResource()
    st = rmm.mr.StatisticsResourceAdaptor(cuda)
    lim = rmm.mr.LimitingResourceAdaptor(cuda, 1 << 20)
    p = cuda.allocate(1000)
    t.call("stats_free_foreign", st.deallocate, p, 1000)
    t.rec("stats_counts", [st.allocation_counts.current_bytes, st.allocation_counts.current_count,
                           st.allocation_counts.total_count])
    q = cuda.allocate(500)
    t.call("limiting_free_foreign", lim.deallocate, q, 500)
    t.rec("limiting_bytes", lim.get_allocated_bytes())


@scenario()
def tracking_free_foreign(t):
    import rmm

    cuda = rmm.mr.CudaMemoryResource()
    tr = rmm.mr.TrackingResourceAdaptor(cuda)
    p = cuda.allocate(1000)
    t.call("free_foreign", tr.deallocate, p, 1000)
    t.rec("bytes", tr.get_allocated_bytes())
    t.rec("str_empty", tr.get_outstanding_allocations_str() == "")


@scenario()
def wrong_size_free_statistics(t):
    import rmm

    st = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
    p = st.allocate(1000)
    t.call("free_smaller", st.deallocate, p, 500)
    t.rec("counts", [st.allocation_counts.current_bytes, st.allocation_counts.current_count,
                     st.allocation_counts.peak_bytes])


@scenario()
def limiting_wrong_size_free(t):
    import rmm

    lim = rmm.mr.LimitingResourceAdaptor(rmm.mr.CudaMemoryResource(), 1 << 20)
    p = lim.allocate(1000)
    t.call("free_smaller", lim.deallocate, p, 500)
    t.rec("bytes", lim.get_allocated_bytes())


@scenario()
def gpu_helpers(t):
    import rmm._cuda.gpu as gpu

    t.call("getDevice", gpu.getDevice)
    t.call("getDeviceCount_positive", lambda: gpu.getDeviceCount() > 0)
    t.call("driverGetVersion_positive", lambda: gpu.driverGetVersion() > 0)
    t.call("runtimeGetVersion_ge_13000", lambda: gpu.runtimeGetVersion() >= 13000)
    t.call("setDevice0", gpu.setDevice, 0)
    t.call("setDevice_bad", gpu.setDevice, 99, msg=True)
    t.call("setDevice_neg", gpu.setDevice, -1)
    t.call("setDevice_str", gpu.setDevice, "0")
    t.call("getDevice_after", gpu.getDevice)
    t.call("deviceGetName_nonempty", lambda: len(gpu.deviceGetName(0)) > 0)
    t.call("deviceGetName_bad", lambda: gpu.deviceGetName(99))
    t.call("getDeviceProperties_name_matches",
           lambda: gpu.getDeviceProperties(0).name.decode().rstrip("\0").startswith(
               gpu.deviceGetName(0)[:8]))


@scenario()
def gpu_device_attribute(t):
    import rmm._cuda.gpu as gpu

    rt = t.need_module("cuda.bindings.runtime")
    f = getattr(gpu, "getDeviceAttribute", None)
    t.rec("exists", f is not None)
    if f is None:
        return
    for attr in ["cudaDevAttrComputeCapabilityMajor", "cudaDevAttrWarpSize",
                 "cudaDevAttrConcurrentManagedAccess", "cudaDevAttrPageableMemoryAccess",
                 "cudaDevAttrMemoryPoolsSupported"]:
        a = getattr(rt.cudaDeviceAttr, attr)
        t.call(attr, f, a, gpu.getDevice())
    t.call("bad_device", f, rt.cudaDeviceAttr.cudaDevAttrWarpSize, 99)
    t.call("bad_attr", f, 12345, 0)


@scenario()
def cuda_errors_types(t):
    import rmm._cuda.gpu as gpu

    try:
        gpu.setDevice(99)
    except Exception as e:  # noqa: BLE001
        t.rec("type", type(e).__name__)
        t.rec("is_runtime_error", isinstance(e, RuntimeError))
        t.rec("has_status", hasattr(e, "status"))
        t.rec("status", str(getattr(e, "status", None)))
        t.rec("str", str(e))


# An allocation that fails with a CUDA error other than out-of-memory (RMM_CUDA_TRY_ALLOC's
# rmm::bad_alloc), or under a pool whose upstream throws: the exception's type, and whether its
# message names a CUDA error. RMM names the runtime's (cudaErrorInvalidValue), rmm-rs the driver's
# (CUDA_ERROR_INVALID_VALUE), and RMM's message holds a source path: the text is not compared.
_CUDA_ERROR_NAME = re.compile(r"cudaError[A-Za-z]+|CUDA_ERROR_[A-Z_]+")


def _allocation_failure(t, label, fn, *args, **kwargs):
    try:
        value = fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - recording what raised is the point
        t.rec(label, {"raises": type(e).__name__,
                      "names_cuda_error": bool(_CUDA_ERROR_NAME.search(str(e)))})
        return None
    t.rec(label, {"returned": type(value).__name__})
    return value


@scenario(isolate=True)
def allocation_failure_view_of_destroyed_pool(t):
    import rmm

    rt = t.need_module("cuda.bindings.runtime")
    props = rt.cudaMemPoolProps()
    props.allocType = rt.cudaMemAllocationType.cudaMemAllocationTypePinned
    props.location.type = rt.cudaMemLocationType.cudaMemLocationTypeDevice
    props.location.id = 0
    err, pool = rt.cudaMemPoolCreate(props)
    t.rec("create", int(err))
    view = t.call("construct", rmm.mr.CudaAsyncViewMemoryResource, pool)
    if view is None:
        return
    p = t.call("alloc_while_live", view.allocate, 256, conv=ptr_facts)
    if p is not None:
        view.deallocate(p, 256)
    rt.cudaDeviceSynchronize()
    t.rec("destroy", int(rt.cudaMemPoolDestroy(pool)[0]))
    # The view still names the destroyed pool: cudaMallocFromPoolAsync fails.
    _allocation_failure(t, "alloc", view.allocate, 256)
    _allocation_failure(t, "buffer", rmm.DeviceBuffer, size=256, mr=view)
    stats = rmm.mr.StatisticsResourceAdaptor(view)
    _allocation_failure(t, "statistics", stats.allocate, 256)
    t.rec("statistics_count", stats.allocation_counts.total_count)
    limiting = rmm.mr.LimitingResourceAdaptor(view, 1 << 20)
    _allocation_failure(t, "limiting", limiting.allocate, 256)
    t.rec("limiting_allocated", limiting.get_allocated_bytes())
    calls = []
    fcb = rmm.mr.FailureCallbackResourceAdaptor(view, lambda n: calls.append(n) or False)
    _allocation_failure(t, "failure_callback", fcb.allocate, 256)
    t.rec("failure_callback_calls", len(calls))
    pool_mr = rmm.mr.PoolMemoryResource(view, initial_pool_size=0)
    _allocation_failure(t, "pool_grows", pool_mr.allocate, 256)
    t.rec("pool_size", pool_mr.pool_size())
    _allocation_failure(t, "pool_initial", rmm.mr.PoolMemoryResource, view, 1 << 20)
    _allocation_failure(t, "fixed_size_initial", rmm.mr.FixedSizeMemoryResource, view, 1 << 16, 4)
    _allocation_failure(t, "arena_initial", rmm.mr.ArenaMemoryResource, view, 1 << 24)


def _callback_under_pool(exc_factory):
    def run(t):
        import rmm

        def alloc(n, s):
            raise exc_factory()

        cb = rmm.mr.CallbackMemoryResource(alloc, lambda p, n, s: None)
        pool = rmm.mr.PoolMemoryResource(cb, initial_pool_size=0)
        _allocation_failure(t, "grows", pool.allocate, 1 << 20)
        t.rec("pool_size", pool.pool_size())
        stats = rmm.mr.StatisticsResourceAdaptor(pool)
        _allocation_failure(t, "through_statistics", stats.allocate, 1 << 20)
        t.rec("counts_after", stats.allocation_counts.total_count)
        _allocation_failure(t, "initial", rmm.mr.PoolMemoryResource, cb, 1 << 20)
        _allocation_failure(t, "fixed_size_initial", rmm.mr.FixedSizeMemoryResource, cb, 1 << 16, 4)

    return run


for _k in ["MemoryError", "RuntimeError", "ValueError"]:
    register(_callback_under_pool(_EXCEPTIONS[_k]), __name__, f"callback_under_pool/{_k}")
