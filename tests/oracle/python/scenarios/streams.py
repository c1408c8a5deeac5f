"""rmm.pylibrmm.stream: Stream from nothing, flags, another Stream, cupy, numba, the CUDA stream
protocol; the default streams; CudaStreamPool; as_stream."""

from oracle_lib import scenario


def _stream_facts(t, prefix, s):
    t.rec(prefix + "type", type(s).__name__)
    t.call(prefix + "is_default", s.is_default)
    t.call(prefix + "cuda_stream", s.__cuda_stream__,
           conv=lambda v: [len(v), v[0], type(v[1]).__name__])
    t.call(prefix + "synchronize", s.synchronize)


@scenario()
def new_stream(t):
    from rmm.pylibrmm.stream import Stream

    s = Stream()
    _stream_facts(t, "", s)
    t.rec("handle_nonzero", s.__cuda_stream__()[1] != 0)
    t.rec("eq_self", s == s)
    t.rec("hash_stable", hash(s) == hash(s))
    t.rec("ne_other", s != Stream())
    from scen_util import no_addresses

    t.rec("repr", no_addresses(repr(s)))


@scenario()
def default_streams(t):
    from rmm.pylibrmm import stream as m

    for name in ["DEFAULT_STREAM", "LEGACY_DEFAULT_STREAM", "PER_THREAD_DEFAULT_STREAM"]:
        s = getattr(m, name, None)
        t.rec(name + ".exists", s is not None)
        if s is not None:
            _stream_facts(t, name + ".", s)
            t.rec(name + ".handle", s.__cuda_stream__()[1])
    t.rec("default_eq_legacy", m.DEFAULT_STREAM == m.LEGACY_DEFAULT_STREAM)
    t.rec("default_eq_per_thread", m.DEFAULT_STREAM == m.PER_THREAD_DEFAULT_STREAM)
    t.rec("hash_default_eq_legacy", hash(m.DEFAULT_STREAM) == hash(m.LEGACY_DEFAULT_STREAM))


@scenario()
def stream_flags(t):
    from rmm.pylibrmm import CudaStreamFlags
    from rmm.pylibrmm.stream import Stream

    for f in CudaStreamFlags:
        s = t.call(f.name, Stream, flags=f, conv=lambda s: type(s).__name__)
        if s is not None:
            t.rec(f.name + ".is_default", s.is_default())
    t.call("int_flag", Stream, flags=1, conv=lambda s: type(s).__name__)
    t.call("bad_flag", Stream, flags="x", conv=lambda s: type(s).__name__)
    t.call("obj_and_flags", Stream, Stream(), CudaStreamFlags.NON_BLOCKING, msg=True,
           conv=lambda s: type(s).__name__)


@scenario()
def stream_from_stream(t):
    from rmm.pylibrmm.stream import DEFAULT_STREAM, Stream

    a = Stream()
    b = Stream(a)
    t.rec("eq", a == b)
    t.rec("hash_eq", hash(a) == hash(b))
    t.rec("handle_eq", a.__cuda_stream__() == b.__cuda_stream__())
    c = Stream(DEFAULT_STREAM)
    t.rec("default_copy_is_default", c.is_default())
    t.rec("default_copy_eq", c == DEFAULT_STREAM)


@scenario()
def stream_from_bad_objects(t):
    from rmm.pylibrmm.stream import Stream

    for label, obj in [("int", 0), ("int_nonzero", 12345), ("str", "s"), ("list", [1]),
                       ("float", 1.0), ("object", object())]:
        t.call(label, Stream, obj, msg=True, conv=lambda s: s.is_default())

    class Proto:
        def __init__(self, v):
            self.v = v

        def __cuda_stream__(self):
            return self.v

    t.call("protocol_default", Stream, Proto((0, 0)), conv=lambda s: s.is_default())
    t.call("protocol_bad_version", Stream, Proto((1, 0)), msg=True,
           conv=lambda s: s.is_default())
    t.call("protocol_not_tuple", Stream, Proto(5), conv=lambda s: s.is_default())
    t.call("protocol_raises", Stream, Proto(None), conv=lambda s: s.is_default())


@scenario()
def stream_from_cuda_core(t):
    core = t.need_module("cuda.core")
    from rmm.pylibrmm.stream import Stream

    dev = core.Device(0)
    dev.set_current()
    cs = dev.create_stream()
    s = t.call("from_core", Stream, cs, conv=lambda s: s.is_default())
    if s is not None:
        t.call("handle_matches", lambda: s.__cuda_stream__()[1] == int(cs.handle))


@scenario()
def stream_from_cupy(t):
    cupy = t.need_module("cupy")
    from rmm.pylibrmm.stream import Stream

    cs = cupy.cuda.Stream()
    s = t.call("from_cupy", Stream, cs, conv=lambda s: s.is_default())
    if s is not None:
        t.rec("handle_matches", s.__cuda_stream__()[1] == cs.ptr)
    s0 = t.call("from_cupy_null", Stream, cupy.cuda.Stream.null, conv=lambda s: s.is_default())
    del s0
    t.call("from_cupy_ptds", Stream, cupy.cuda.Stream.ptds, conv=lambda s: s.is_default())


@scenario()
def stream_from_numba(t):
    cuda = t.need_module("numba.cuda")
    from rmm.pylibrmm.stream import Stream

    ns = cuda.stream()
    s = t.call("from_numba", Stream, ns, conv=lambda s: s.is_default())
    if s is not None:
        h = ns.handle
        t.call("handle_matches", lambda: s.__cuda_stream__()[1] == int(
            h.value if hasattr(h, "value") else h))
    t.call("from_numba_default", Stream, cuda.default_stream(), conv=lambda s: s.is_default())


@scenario()
def stream_pool(t):
    from rmm.pylibrmm import CudaStreamPool
    from rmm.pylibrmm.stream import Stream

    p = CudaStreamPool()
    t.call("size_default", p.get_pool_size)
    s = p.get_stream()
    t.rec("stream_type", type(s).__name__)
    t.rec("not_default", not s.is_default())
    t.call("get_0", p.get_stream, 0, conv=lambda s: type(s).__name__)
    t.rec("same_id_same_stream", p.get_stream(3) == p.get_stream(3))
    t.rec("wraps", p.get_stream(0) == p.get_stream(16))
    t.call("negative_id", p.get_stream, -1, conv=lambda s: type(s).__name__)
    t.call("str_id", p.get_stream, "x", conv=lambda s: type(s).__name__)
    for label, args in [("four", (4,)), ("zero", (0,)), ("negative", (-1,)), ("str", ("x",))]:
        q = t.call("ctor_" + label, CudaStreamPool, *args, msg=True,
                   conv=lambda q: q.get_pool_size())
        del q
    from rmm.pylibrmm import CudaStreamFlags

    q = t.call("ctor_flags", CudaStreamPool, 2, CudaStreamFlags.NON_BLOCKING,
               conv=lambda q: q.get_pool_size())
    t.rec("is_stream", isinstance(s, Stream))
    del q


@scenario()
def as_stream(t):
    import rmm.pylibrmm.utils as utils
    from rmm.pylibrmm.stream import DEFAULT_STREAM, Stream

    f = getattr(utils, "as_stream", None)
    t.rec("exported", f is not None)
    if f is None:
        return
    s = Stream()
    t.call("stream", lambda: f(s) is s)
    t.call("default", lambda: f(DEFAULT_STREAM) is DEFAULT_STREAM)
    t.call("none", f, None, msg=True)
    t.call("int", f, 0)


@scenario()
def stream_in_allocations(t):
    import rmm
    from rmm.pylibrmm.stream import PER_THREAD_DEFAULT_STREAM, Stream

    for label, s in [("new", Stream()), ("ptds", PER_THREAD_DEFAULT_STREAM)]:
        for mrname in ["cuda", "cuda_async", "pool"]:
            from scen_util import make, ptr_facts

            mr = make(rmm, mrname)
            p = t.call(f"{label}.{mrname}.alloc", mr.allocate, 4096, s, conv=ptr_facts)
            if p is not None:
                t.call(f"{label}.{mrname}.free", mr.deallocate, p, 4096, s)
            s.synchronize()


def _wrong_stream(name):
    def run(t):
        import rmm
        from rmm.pylibrmm.stream import Stream
        from scen_util import make, ptr_facts

        mr = make(rmm, name)
        s1, s2 = Stream(), Stream()
        ptrs = []
        for i, n in enumerate([256, 4096, 1 << 20]):
            p = t.call(f"alloc_s1:{n}", mr.allocate, n, s1, conv=ptr_facts)
            if p is not None:
                ptrs.append((p, n))
        s1.synchronize()
        for p, n in ptrs:
            t.call(f"free_s2:{n}", mr.deallocate, p, n, s2)
        for n in [256, 4096, 1 << 20]:
            p = t.call(f"realloc_s2:{n}", mr.allocate, n, s2, conv=ptr_facts)
            if p is not None:
                t.call(f"refree_s1:{n}", mr.deallocate, p, n, s1)
        s1.synchronize()
        s2.synchronize()

    return run


for _n in ["cuda", "cuda_async", "pool", "arena", "binning", "fixed_size", "statistics",
           "tracking", "limiting"]:
    from oracle_lib import register as _register

    _register(_wrong_stream(_n), __name__, f"wrong_stream/{_n}")


@scenario()
def buffer_consumers(t):
    import rmm

    data = bytes(range(64))
    b = rmm.DeviceBuffer.to_device(data)
    try:
        import cupy
    except Exception:  # noqa: BLE001
        cupy = None
    if cupy is not None:
        a = t.call("cupy_asarray", cupy.asarray, b, conv=lambda a: [a.dtype.str, list(a.shape)])
        if a is not None:
            t.rec("cupy_content", bytes(cupy.asnumpy(a)) == data)
            t.rec("cupy_shares", a.data.ptr == b.ptr)
    try:
        from numba import cuda
    except Exception:  # noqa: BLE001
        cuda = None
    if cuda is not None:
        a = t.call("numba_as_cuda_array", cuda.as_cuda_array, b,
                   conv=lambda a: [str(a.dtype), list(a.shape)])
        if a is not None:
            t.rec("numba_content", a.copy_to_host().tobytes() == data)
    if cupy is None and cuda is None:
        t.skip("neither cupy nor numba-cuda installed")
