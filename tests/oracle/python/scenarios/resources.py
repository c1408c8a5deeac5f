"""Every resource of rmm.mr: construction, each size class, refusals, wrong arguments."""

from oracle_lib import register, scenario
from scen_util import HUGE, RESOURCES, SIZE_CLASSES, make, no_addresses, ptr_facts, stats_dict


def _alloc_size(name, size):
    def run(t):
        import rmm

        mr = make(rmm, name)
        ptr = t.call("allocate", mr.allocate, size, conv=ptr_facts)
        if ptr is None:
            return
        if name == "pool":
            t.call("pool_size", mr.pool_size)
        t.call("deallocate", mr.deallocate, ptr, size)

    return run


def _alloc_keyword_stream(name):
    def run(t):
        import rmm
        from rmm.pylibrmm.stream import DEFAULT_STREAM, Stream

        mr = make(rmm, name)
        s = Stream()
        p = t.call("allocate_kw", mr.allocate, nbytes=1000, stream=s, conv=ptr_facts)
        if p is not None:
            t.call("deallocate_kw", mr.deallocate, ptr=p, nbytes=1000, stream=s)
        s.synchronize()
        p = t.call("allocate_default", mr.allocate, 512, DEFAULT_STREAM, conv=ptr_facts)
        if p is not None:
            t.call("deallocate_default", mr.deallocate, p, 512, DEFAULT_STREAM)

    return run


def _refusals(name):
    def run(t):
        import rmm

        mr = make(rmm, name)
        t.call("huge", mr.allocate, HUGE, conv=ptr_facts)
        t.call("negative", mr.allocate, -1, conv=ptr_facts)
        t.call("float", mr.allocate, 1.5, conv=ptr_facts)
        t.call("str", mr.allocate, "10", conv=ptr_facts)
        t.call("none", mr.allocate, None, conv=ptr_facts)
        t.call("stream_none", mr.allocate, 10, None, conv=ptr_facts)
        t.call("stream_int", mr.allocate, 10, 0, conv=ptr_facts)
        t.call("too_many", mr.allocate, 10, None, 3, conv=ptr_facts)
        t.call("dealloc_stream_none", mr.deallocate, 0, 10, None)
        t.call("dealloc_str_ptr", mr.deallocate, "x", 10)
        t.call("dealloc_negative_ptr", mr.deallocate, -1, 10)
        # The resource still works after every refusal.
        p = t.call("after", mr.allocate, 4096, conv=ptr_facts)
        if p is not None:
            t.call("after_free", mr.deallocate, p, 4096)

    return run


def _facts(name):
    def run(t):
        import rmm

        mr = make(rmm, name)
        t.rec("type", type(mr).__name__)
        t.rec("repr", no_addresses(repr(mr)))
        t.rec("str", no_addresses(str(mr)))
        t.rec("is_device_mr", isinstance(mr, rmm.mr.DeviceMemoryResource))
        t.rec("is_adaptor", isinstance(mr, rmm.mr.UpstreamResourceAdaptor))
        if isinstance(mr, rmm.mr.UpstreamResourceAdaptor):
            up = mr.get_upstream()
            t.rec("upstream_type", type(up).__name__)
            t.rec("upstream_attr_is_same", mr.upstream_mr is up)
            t.rec("upstream_stable", mr.get_upstream() is up)
        t.call("weakref", lambda: __import__("weakref").ref(mr)() is mr)
        t.call("hashable", lambda: hash(mr) == hash(mr))
        t.call("eq_self", lambda: mr == mr)
        t.call("pickle", lambda: __import__("pickle").dumps(mr) is not None)
        t.call("copy", lambda: type(__import__("copy").copy(mr)).__name__)
        t.call("set_attr", setattr, mr, "oracle_extra", 1)

    return run


def _many(name):
    def run(t):
        import rmm

        mr = make(rmm, name)
        ptrs = []
        for i in range(64):
            p = mr.allocate(1000 + 37 * i)
            ptrs.append((p, 1000 + 37 * i))
        t.rec("distinct", len({p for p, _ in ptrs}) == len(ptrs))
        t.rec("aligned", all(p % 256 == 0 for p, _ in ptrs))
        for p, n in reversed(ptrs):
            mr.deallocate(p, n)
        t.rec("done", True)

    return run


for _name in RESOURCES:
    for _size in SIZE_CLASSES:
        register(_alloc_size(_name, _size), __name__, f"alloc/{_name}/{_size}")
    register(_alloc_keyword_stream(_name), __name__, f"keyword_stream/{_name}")
    register(_refusals(_name), __name__, f"refusals/{_name}")
    register(_facts(_name), __name__, f"facts/{_name}")
    register(_many(_name), __name__, f"many/{_name}")


@scenario()
def base_class_direct(t):
    import rmm

    t.call("construct", rmm.mr.DeviceMemoryResource, conv=lambda m: type(m).__name__)
    m = t.call("new", rmm.mr.DeviceMemoryResource.__new__, rmm.mr.DeviceMemoryResource,
               conv=lambda m: type(m).__name__)
    if m is not None:
        t.call("allocate_on_base", m.allocate, 10, conv=ptr_facts)
    t.call("adaptor_construct_none", rmm.mr.UpstreamResourceAdaptor, None, msg=True,
           conv=lambda m: type(m).__name__)
    t.call("adaptor_construct", rmm.mr.UpstreamResourceAdaptor, rmm.mr.CudaMemoryResource(),
           conv=lambda m: type(m).__name__)


def _upstream_none(cls_name, extra):
    def run(t):
        import rmm

        cls = getattr(rmm.mr, cls_name)
        t.call("none", cls, None, *extra, msg=True, conv=lambda m: type(m).__name__)
        t.call("not_mr", cls, 42, *extra, conv=lambda m: type(m).__name__)
        t.call("no_args", cls, conv=lambda m: type(m).__name__)

    return run


_ADAPTOR_EXTRA = {
    "PoolMemoryResource": (1 << 20,),
    "ArenaMemoryResource": (1 << 24,),
    "FixedSizeMemoryResource": (),
    "BinningMemoryResource": (),
    "LimitingResourceAdaptor": (1 << 20,),
    "LoggingResourceAdaptor": ("/tmp/oracle-none.csv",),
    "StatisticsResourceAdaptor": (),
    "TrackingResourceAdaptor": (),
    "FailureCallbackResourceAdaptor": (lambda n: False,),
    "PrefetchResourceAdaptor": (),
}
for _cls, _extra in _ADAPTOR_EXTRA.items():
    register(_upstream_none(_cls, _extra), __name__, f"upstream_none/{_cls}")


@scenario()
def pool_default_initial_is_half_free(t):
    import rmm

    free, total = rmm.mr.available_device_memory()
    mr = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource())
    size = mr.pool_size()
    # Half the free memory, rounded to 256 bytes: allow for what the context took meanwhile.
    t.rec("about_half_free", abs(size - free // 2) < (64 << 20))
    t.rec("aligned", size % 256 == 0)
    del mr


@scenario()
def pool_growth_and_limit(t):
    import rmm

    mr = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), 1 << 20, 1 << 22)
    t.call("size0", mr.pool_size)
    ptrs = []
    for i in range(6):
        p = t.call(f"alloc{i}", mr.allocate, 1 << 20, conv=ptr_facts)
        t.call(f"size{i + 1}", mr.pool_size)
        if p is not None:
            ptrs.append(p)
    for p in ptrs:
        mr.deallocate(p, 1 << 20)
    t.call("size_end", mr.pool_size)
    p = t.call("full", mr.allocate, 1 << 22, conv=ptr_facts)
    if p is not None:
        mr.deallocate(p, 1 << 22)
    t.call("over_max", mr.allocate, (1 << 22) + 256, conv=ptr_facts)


@scenario()
def pool_over_limiting_upstream(t):
    import rmm

    lim = rmm.mr.LimitingResourceAdaptor(rmm.mr.CudaMemoryResource(), 6000)
    mr = rmm.mr.PoolMemoryResource(lim, 0, 8192)
    a = t.call("a1000", mr.allocate, 1000, conv=ptr_facts)
    t.call("limit_used", lim.get_allocated_bytes)
    b = t.call("b4000", mr.allocate, 4000, conv=ptr_facts)
    t.call("limit_used2", lim.get_allocated_bytes)
    c = t.call("c2000", mr.allocate, 2000, conv=ptr_facts)
    t.call("limit_used3", lim.get_allocated_bytes)
    t.call("pool_size", mr.pool_size)
    for p, n in ((a, 1000), (b, 4000), (c, 2000)):
        if p is not None:
            mr.deallocate(p, n)
    t.call("pool_size_end", mr.pool_size)


@scenario()
def pool_zero_initial_grows(t):
    import rmm

    mr = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), 0)
    t.call("size0", mr.pool_size)
    for n in [1, 256, 1000, 1 << 20, 5 << 20]:
        p = t.call(f"alloc{n}", mr.allocate, n, conv=ptr_facts)
        t.call(f"size_after{n}", mr.pool_size)
        if p is not None:
            mr.deallocate(p, n)


@scenario()
def arena_exhaustion(t):
    import rmm

    mr = rmm.mr.ArenaMemoryResource(rmm.mr.CudaMemoryResource(), 1 << 24)
    ptrs = []
    for i in range(10):
        p = t.call(f"alloc{i}", mr.allocate, 4 << 20, conv=ptr_facts)
        if p is not None:
            ptrs.append(p)
    for p in ptrs:
        mr.deallocate(p, 4 << 20)
    p = t.call("after_free", mr.allocate, 4 << 20, conv=ptr_facts)
    if p is not None:
        mr.deallocate(p, 4 << 20)


@scenario()
def fixed_size_many_blocks(t):
    import rmm

    mr = rmm.mr.FixedSizeMemoryResource(rmm.mr.CudaMemoryResource(), 4096, 2)
    ptrs = [mr.allocate(4096) for _ in range(50)]
    t.rec("distinct", len(set(ptrs)))
    t.rec("aligned", all(p % 256 == 0 for p in ptrs))
    for p in ptrs:
        mr.deallocate(p, 4096)
    again = [mr.allocate(100) for _ in range(50)]
    t.rec("reused", len(set(again) & set(ptrs)))
    for p in again:
        mr.deallocate(p, 100)


@scenario()
def binning_add_bin(t):
    import rmm

    cuda = rmm.mr.CudaMemoryResource()
    mr = rmm.mr.BinningMemoryResource(cuda)
    t.call("bins0", lambda: [type(b).__name__ for b in mr.bin_mrs])
    t.call("add_default", mr.add_bin, 1024)
    t.call("bins1", lambda: [type(b).__name__ for b in mr.bin_mrs])
    fixed = rmm.mr.FixedSizeMemoryResource(cuda, 1 << 16, 2)
    t.call("add_fixed", mr.add_bin, 1 << 16, fixed)
    t.call("bins2", lambda: [type(b).__name__ for b in mr.bin_mrs])
    t.call("bin_is_same", lambda: any(b is fixed for b in mr.bin_mrs))
    t.call("add_kw", mr.add_bin, allocation_size=1 << 12, bin_resource=None)
    t.call("add_none_resource", mr.add_bin, 2048, None)
    t.call("add_bad_resource", mr.add_bin, 4096, 42)
    t.call("add_negative", mr.add_bin, -1)
    t.call("add_zero", mr.add_bin, 0)
    t.call("bins_end", lambda: [type(b).__name__ for b in mr.bin_mrs])
    t.call("bin_mrs_is_list", lambda: type(mr.bin_mrs).__name__)
    for n in (0, 1, 1024, 1025, 2048, 4096, 1 << 16, (1 << 16) + 1):
        p = t.call(f"alloc{n}", mr.allocate, n, conv=ptr_facts)
        if p is not None:
            mr.deallocate(p, n)


@scenario()
def cuda_async_view_over_default_pool(t):
    import rmm

    rt = t.need_module("cuda.bindings.runtime")
    err, pool = rt.cudaDeviceGetDefaultMemPool(0)
    t.rec("get_pool", int(err))
    mr = t.call("construct", rmm.mr.CudaAsyncViewMemoryResource, pool,
                conv=lambda m: type(m).__name__)
    if mr is None:
        return
    t.call("pool_handle_matches", lambda: int(mr.pool_handle()) == int(pool))
    p = t.call("alloc", mr.allocate, 1 << 16, conv=ptr_facts)
    if p is not None:
        mr.deallocate(p, 1 << 16)
    t.call("bad_handle", rmm.mr.CudaAsyncViewMemoryResource, "x", conv=lambda m: type(m).__name__)
    t.call("none_handle", rmm.mr.CudaAsyncViewMemoryResource, None,
           conv=lambda m: type(m).__name__)


@scenario()
def cuda_async_view_over_user_pool(t):
    import rmm

    rt = t.need_module("cuda.bindings.runtime")
    props = rt.cudaMemPoolProps()
    props.allocType = rt.cudaMemAllocationType.cudaMemAllocationTypePinned
    props.location.type = rt.cudaMemLocationType.cudaMemLocationTypeDevice
    props.location.id = 0
    err, pool = rt.cudaMemPoolCreate(props)
    t.rec("create", int(err))
    mr = t.call("construct", rmm.mr.CudaAsyncViewMemoryResource, pool,
                conv=lambda m: type(m).__name__)
    if mr is not None:
        for n in (256, 1 << 20):
            p = t.call(f"alloc{n}", mr.allocate, n, conv=ptr_facts)
            if p is not None:
                mr.deallocate(p, n)
        del mr
    rt.cudaDeviceSynchronize()
    t.rec("destroy", int(rt.cudaMemPoolDestroy(pool)[0]))


@scenario()
def cuda_async_pool_handle(t):
    import rmm

    mr = rmm.mr.CudaAsyncMemoryResource()
    t.call("pool_handle_type", lambda: type(mr.pool_handle()).__name__)
    t.call("pool_handle_nonzero", lambda: int(mr.pool_handle()) != 0)


@scenario()
def experimental_async_managed(t):
    import rmm

    cls = getattr(rmm.mr.experimental, "CudaAsyncManagedMemoryResource", None)
    t.rec("exists", cls is not None)
    if cls is None:
        return
    mr = t.call("construct", cls, conv=lambda m: type(m).__name__)
    if mr is None:
        return
    t.call("pool_handle_nonzero", lambda: int(mr.pool_handle()) != 0)
    p = t.call("alloc", mr.allocate, 1 << 16, conv=ptr_facts)
    if p is not None:
        mr.deallocate(p, 1 << 16)


@scenario()
def sam_headroom(t):
    import rmm

    for label, arg in [("zero", 0), ("gib", 1 << 30), ("str", "1GiB"), ("negative", -1)]:
        mr = t.call(label, rmm.mr.SamHeadroomMemoryResource, arg, conv=lambda m: type(m).__name__)
        if mr is not None:
            p = t.call(label + ".alloc", mr.allocate, 1 << 12, conv=ptr_facts)
            if p is not None:
                mr.deallocate(p, 1 << 12)
    t.call("no_arg", rmm.mr.SamHeadroomMemoryResource, conv=lambda m: type(m).__name__)


@scenario()
def system_resource(t):
    import rmm

    mr = t.call("construct", rmm.mr.SystemMemoryResource, conv=lambda m: type(m).__name__)
    if mr is not None:
        p = t.call("alloc", mr.allocate, 1 << 12, conv=ptr_facts)
        if p is not None:
            mr.deallocate(p, 1 << 12)


@scenario()
def constructors_take_no_args(t):
    import rmm

    for cls in ["CudaMemoryResource", "ManagedMemoryResource", "PinnedHostMemoryResource",
                "SystemMemoryResource"]:
        t.call(cls + ".extra_arg", getattr(rmm.mr, cls), 1, conv=lambda m: type(m).__name__)
        t.call(cls + ".kw", getattr(rmm.mr, cls), x=1, conv=lambda m: type(m).__name__)


@scenario()
def available_device_memory(t):
    import rmm

    v = t.call("call", rmm.mr.available_device_memory, conv=lambda v: [type(v).__name__, len(v)])
    if v is None:
        return
    free, total = v
    t.rec("free_le_total", 0 < free <= total)
    t.rec("types", [type(free).__name__, type(total).__name__])


@scenario()
def parse_bytes_via_pool(t):
    import rmm

    cuda = rmm.mr.CudaMemoryResource()
    for s in [0, 1024, "1", "1B", "1KB", "1kB", "1KiB", "1 MiB", "1.5MB", "2MiB", "10 MB", "1e3",
              "5kb", "1 kilobyte", "abc", "", "-1", "1.5", -5, 3.5, "MB", "1 M", "1MiB ", " 1MiB"]:
        t.call(f"pool({s!r})", lambda: rmm.mr.PoolMemoryResource(cuda, s).pool_size())


# ---------------------------------------------------------------------------------------------
# Constructor arguments: one scenario per case (RMM crashes on some, and a crash ends only its
# own scenario).


def _ctor_case(cls_name, with_upstream, args, kw, probes):
    def run(t):
        import rmm

        cls = getattr(rmm.mr, cls_name)
        pre = (rmm.mr.CudaMemoryResource(),) if with_upstream else ()
        mr = t.call("construct", cls, *pre, *args, **kw, conv=lambda m: type(m).__name__)
        if mr is None:
            return
        if hasattr(mr, "pool_size"):
            t.call("pool_size", mr.pool_size)
        if hasattr(mr, "bin_mrs"):
            t.call("bin_mrs", lambda: [type(b).__name__ for b in mr.bin_mrs])
        for n in probes:
            p = t.call(f"alloc{n}", mr.allocate, n, conv=ptr_facts)
            if p is not None:
                t.call(f"free{n}", mr.deallocate, p, n)

    return run


_CTOR_CASES = {
    "PoolMemoryResource": (True, [1 << 10, 1 << 21], [
        ("int", (1 << 20,), {}),
        ("int_max", (1 << 20, 1 << 22), {}),
        ("str", ("1MiB",), {}),
        ("str_max", ("1MiB", "4MiB"), {}),
        ("str_mb", ("1MB",), {}),
        ("kw", (), {"initial_pool_size": 1 << 20, "maximum_pool_size": 1 << 21}),
        ("zero", (0,), {}),
        ("zero_max", (0, 1 << 20), {}),
        ("unaligned", (1000,), {}),
        ("unaligned_max", (1 << 20, 1000 + (1 << 20)), {}),
        ("max_below_initial", (1 << 22, 1 << 20), {}),
        ("max_equal", (1 << 20, 1 << 20), {}),
        ("max_zero", (0, 0), {}),
        ("negative", (-1,), {}),
        ("negative_max", (0, -1), {}),
        ("float", (1.5e6,), {}),
        ("bad_str", ("lots",), {}),
        ("huge", (HUGE,), {}),
        ("max_only", (None, 1 << 24), {}),
        ("unknown_kw", (), {"initial_pool_size": 1 << 20, "color": 1}),
    ]),
    "ArenaMemoryResource": (True, [1 << 12, 1 << 20], [
        ("int", (1 << 26,), {}),
        ("str", ("64MiB",), {}),
        ("kw", (), {"arena_size": 1 << 26, "dump_log_on_failure": True}),
        ("dump", (1 << 26, True), {}),
        ("zero", (0,), {}),
        ("small", (1 << 10,), {}),
        ("unaligned", ((1 << 26) + 100,), {}),
        ("negative", (-1,), {}),
        ("bad", ("x",), {}),
        ("default", (), {}),
        ("huge", (HUGE,), {}),
    ]),
    "FixedSizeMemoryResource": (True, [1, 1000, 4096, (1 << 20) + 1], [
        ("default", (), {}),
        ("block", (4096,), {}),
        ("block_pre", (4096, 4), {}),
        ("kw", (), {"block_size": 1 << 16, "blocks_to_preallocate": 0}),
        ("unaligned_block", (1000, 2), {}),
        ("zero_block", (0, 2), {}),
        ("zero_block_zero_pre", (0, 0), {}),
        ("negative", (-1,), {}),
        ("negative_pre", (4096, -1), {}),
        ("str_block", ("1MiB",), {}),
        ("float_block", (1.5,), {}),
        ("huge_block", (HUGE, 1), {}),
    ]),
    "BinningMemoryResource": (True, [0, 1, 256, 1024, 5000, 1 << 16, 1 << 20], [
        ("default", (), {}),
        ("exps", (10, 16), {}),
        ("kw", (), {"min_size_exponent": 8, "max_size_exponent": 12}),
        ("one_exp", (10,), {}),
        ("equal", (12, 12), {}),
        ("reversed", (16, 10), {}),
        ("minus_one", (-1, 16), {}),
        ("negative", (-2, 16), {}),
        ("zero", (0, 4), {}),
        ("big", (20, 24), {}),
        ("str", ("10", "16"), {}),
    ]),
    "CudaAsyncMemoryResource": (False, [1 << 12], [
        ("default", (), {}),
        ("initial", (1 << 20,), {}),
        ("initial_str", ("1MiB",), {}),
        ("release", (), {"release_threshold": 1 << 20}),
        ("both", (1 << 20, 1 << 22), {}),
        ("ipc", (), {"enable_ipc": True}),
        ("fabric", (), {"enable_fabric": True}),
        ("ipc_and_fabric", (), {"enable_ipc": True, "enable_fabric": True}),
        ("negative", (-1,), {}),
        ("bad_release", (None, "x"), {}),
        ("zero", (0, 0), {}),
        ("huge_initial", (HUGE,), {}),
    ]),
    "LimitingResourceAdaptor": (True, [100, 1 << 20], [
        ("kw", (), {"allocation_limit": 100}),
        ("negative", (-1,), {}),
        ("str", ("1MiB",), {}),
        ("float", (1.5,), {}),
        ("none", (None,), {}),
        ("missing", (), {}),
    ]),
    "TrackingResourceAdaptor": (True, [100], [
        ("default", (), {}),
        ("kw", (), {"capture_stacks": True}),
        ("int", (1,), {}),
        ("str", ("yes",), {}),
        ("none", (None,), {}),
    ]),
}
for _cls, (_up, _probes, _cases) in _CTOR_CASES.items():
    for _label, _args, _kw in _cases:
        register(_ctor_case(_cls, _up, _args, _kw, _probes), __name__, f"ctor/{_cls}/{_label}")


@scenario()
def subclass_in_python(t):
    import rmm

    def define(base):
        class Mine(base):
            pass

        return Mine

    for base in ["DeviceMemoryResource", "CudaMemoryResource", "UpstreamResourceAdaptor",
                 "StatisticsResourceAdaptor"]:
        cls = t.call(base + ".subclass", define, getattr(rmm.mr, base),
                     conv=lambda c: c.__name__)
        if cls is None:
            continue
        if base in ("UpstreamResourceAdaptor", "StatisticsResourceAdaptor"):
            mr = t.call(base + ".construct", cls, rmm.mr.CudaMemoryResource(),
                        conv=lambda m: type(m).__name__)
        else:
            mr = t.call(base + ".construct", cls, conv=lambda m: type(m).__name__)
        if mr is None:
            continue
        p = t.call(base + ".allocate", mr.allocate, 1024, conv=ptr_facts)
        if p is not None:
            t.call(base + ".deallocate", mr.deallocate, p, 1024)
        t.call(base + ".as_current", rmm.mr.set_current_device_resource, mr)
        t.call(base + ".buffer", lambda: rmm.DeviceBuffer(size=10).size)
        rmm.mr.set_current_device_resource(rmm.mr.CudaMemoryResource())


@scenario()
def arena_dump_on_failure(t):
    import os
    import tempfile

    import rmm

    d = tempfile.mkdtemp(prefix="oracle-arena-")
    old = os.getcwd()
    os.chdir(d)
    try:
        mr = rmm.mr.ArenaMemoryResource(rmm.mr.CudaMemoryResource(), 1 << 22, True)
        t.call("too_big", mr.allocate, 1 << 23, conv=ptr_facts)
        del mr
        t.rec("files", sorted(os.listdir(d)))
    finally:
        os.chdir(old)


@scenario()
def refusals_terabyte(t):
    import rmm

    for name in ["cuda", "managed", "cuda_async", "pool", "arena", "limiting", "statistics"]:
        mr = make(rmm, name)
        t.call(name, mr.allocate, 1 << 40, conv=ptr_facts)
        if hasattr(mr, "allocation_counts"):
            t.rec(name + ".counts", stats_dict(mr.allocation_counts))
