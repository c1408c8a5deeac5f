"""rmm.allocators: the CuPy allocator, the Numba EMM plugin, the PyTorch allocator. Each scenario
is skipped where its library is not installed (alike on both sides)."""

from oracle_lib import scenario
from scen_util import stats_dict


@scenario()
def cupy_allocator(t):
    cupy = t.need_module("cupy")
    import rmm
    from rmm.allocators.cupy import rmm_cupy_allocator

    st = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
    rmm.mr.set_current_device_resource(st)
    old = cupy.cuda.get_allocator()
    cupy.cuda.set_allocator(rmm_cupy_allocator)
    try:
        a = cupy.arange(1000, dtype=cupy.int32)
        t.rec("sum", int(a.sum()))
        t.rec("stats_live", stats_dict(st.allocation_counts)["current_count"] > 0)
        mp = rmm_cupy_allocator(256)
        t.rec("ptr_type", type(mp).__name__)
        t.rec("mem_size", mp.mem.size)
        t.rec("device_id", mp.device_id)
        t.rec("owner_type", type(getattr(mp.mem, "_owner", None)).__name__)
        z = rmm_cupy_allocator(0)
        t.rec("zero_ptr", int(z.ptr))
        t.rec("zero_device_id", z.device_id)
        with cupy.cuda.Stream():
            b = cupy.ones(10)
            t.rec("on_stream", float(b.sum()))
        del a, mp, z, b
    finally:
        cupy.cuda.set_allocator(old)
    import gc

    gc.collect()
    t.rec("stats_end", stats_dict(st.allocation_counts)["current_bytes"])


@scenario()
def cupy_allocator_without_cupy_module(t):
    t.need_module("cupy")
    import rmm.allocators.cupy as m

    t.rec("has_cupy_attr", hasattr(m, "cupy"))
    saved = m.cupy
    m.cupy = None
    try:
        t.call("no_cupy", m.rmm_cupy_allocator, 10, msg=True, conv=lambda p: type(p).__name__)
    finally:
        m.cupy = saved


@scenario()
def cupy_allocator_huge(t):
    t.need_module("cupy")
    from rmm.allocators.cupy import rmm_cupy_allocator

    t.call("huge", rmm_cupy_allocator, 1 << 60, conv=lambda p: type(p).__name__)


@scenario(isolate=True)
def numba_plugin(t):
    cuda = t.need_module("numba.cuda")
    import numpy as np

    import rmm
    from rmm.allocators.numba import RMMNumbaManager

    st = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
    rmm.mr.set_current_device_resource(st)
    cuda.set_memory_manager(RMMNumbaManager)
    a = cuda.to_device(np.arange(100, dtype=np.int64))
    t.rec("roundtrip", a.copy_to_host().tolist()[:5])
    t.rec("counted", st.allocation_counts.current_count)
    mgr = cuda.current_context().memory_manager
    t.rec("manager_type", type(mgr).__name__)
    t.rec("interface_version", mgr.interface_version)
    t.call("memory_info", mgr.get_memory_info)
    d = cuda.device_array(10)
    t.rec("counted2", st.allocation_counts.current_count)
    del a, d
    import gc

    gc.collect()
    t.rec("counted_end", st.allocation_counts.current_count)


@scenario(isolate=True)
def numba_plugin_ipc(t):
    cuda = t.need_module("numba.cuda")
    import numpy as np

    from rmm.allocators.numba import RMMNumbaManager

    cuda.set_memory_manager(RMMNumbaManager)
    a = cuda.to_device(np.arange(10, dtype=np.int32))
    h = t.call("ipc_handle", a.get_ipc_handle, conv=lambda h: type(h).__name__)
    if h is not None:
        t.rec("offset_ge0", h.offset >= 0)
        t.rec("size", h.size)


@scenario(needs_gpus=0)
def numba_module_names(t):
    t.need_module("numba.cuda")
    import rmm.allocators.numba as m

    t.rec("has_manager", hasattr(m, "RMMNumbaManager"))
    t.rec("alias", getattr(m, "_numba_memory_manager", None) is getattr(m, "RMMNumbaManager",
                                                                        None))


@scenario(isolate=True)
def torch_allocator(t):
    torch = t.need_module("torch")
    if not torch.cuda.is_available():
        t.skip("torch without CUDA")
    import rmm
    from rmm.allocators.torch import rmm_torch_allocator

    t.rec("type", type(rmm_torch_allocator).__name__)
    st = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
    rmm.mr.set_current_device_resource(st)
    torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
    x = torch.ones(1000, device="cuda")
    t.rec("sum", float(x.sum()))
    t.rec("counted", st.allocation_counts.current_count > 0)
    t.rec("bytes_ge", st.allocation_counts.current_bytes >= 4000)
    del x
    torch.cuda.synchronize()
    import gc

    gc.collect()
    t.rec("end_bytes", st.allocation_counts.current_bytes)


@scenario(isolate=True)
def torch_allocator_oom(t):
    torch = t.need_module("torch")
    if not torch.cuda.is_available():
        t.skip("torch without CUDA")
    import rmm
    from rmm.allocators.torch import rmm_torch_allocator

    rmm.mr.set_current_device_resource(
        rmm.mr.LimitingResourceAdaptor(rmm.mr.CudaMemoryResource(), 1 << 20))
    torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
    ok = torch.empty(1000, device="cuda")
    t.rec("small", ok.numel())
    t.call("too_big", torch.empty, 1 << 20, device="cuda", conv=lambda x: x.numel())
    t.rec("after", torch.empty(10, device="cuda").numel())


@scenario(needs_gpus=0)
def torch_module_without_cuda(t):
    torch = t.need_module("torch")
    import rmm.allocators.torch as m

    t.rec("defined", m.rmm_torch_allocator is not None)
    t.rec("cuda_available", torch.cuda.is_available())
