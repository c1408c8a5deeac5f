"""rmm.DeviceBuffer: constructors, size facts, copies, host transfers, the CUDA array interface,
pickling, resize/reserve, refusals, and the module-level copy helpers."""

from oracle_lib import register, scenario
from scen_util import DEVICE_RESOURCES, HUGE, make, no_addresses, ptr_facts

BUFFER_SIZES = [0, 1, 7, 255, 256, 1000, 4096, 1 << 20]


def _facts(t, prefix, buf):
    t.rec(prefix + "size", buf.size)
    t.rec(prefix + "nbytes", buf.nbytes)
    t.rec(prefix + "len", len(buf))
    t.rec(prefix + "capacity", buf.capacity())
    t.rec(prefix + "ptr", ptr_facts(buf.ptr))


def _sized(size):
    def run(t):
        import rmm

        buf = t.call("construct", rmm.DeviceBuffer, size=size, conv=lambda b: type(b).__name__)
        if buf is None:
            return
        _facts(t, "", buf)
        t.rec("sizeof_ge_size", buf.__sizeof__() >= size)
        cai = buf.__cuda_array_interface__
        t.rec("cai_keys", sorted(cai))
        t.rec("cai_shape", cai["shape"])
        t.rec("cai_typestr", cai["typestr"])
        t.rec("cai_version", cai["version"])
        t.rec("cai_strides", cai.get("strides"))
        t.rec("cai_readonly", cai["data"][1])
        t.rec("cai_data_is_ptr", cai["data"][0] == buf.ptr)
        t.rec("cai_stream", cai.get("stream", "<absent>"))
        t.rec("cai_mask", cai.get("mask", "<absent>"))
        t.rec("tobytes_len", len(buf.tobytes()))
        t.rec("bytes_len", len(bytes(buf)))
        t.rec("copy_to_host", buf.copy_to_host().shape if hasattr(buf.copy_to_host(), "shape")
              else type(buf.copy_to_host()).__name__)
        t.rec("copy_to_host_dtype", str(getattr(buf.copy_to_host(), "dtype", None)))
        t.call("stream_is_default", lambda: buf.stream.is_default())
        t.call("mr_type", lambda: type(buf.mr).__name__)

    return run


def _roundtrip(size):
    def run(t):
        import numpy as np

        import rmm

        data = bytes((i * 7 + 3) % 256 for i in range(size))
        buf = rmm.DeviceBuffer.to_device(data)
        _facts(t, "", buf)
        t.rec("same_bytes", buf.tobytes() == data)
        host = np.zeros(size, dtype=np.uint8)
        out = t.call("copy_to_host_into", buf.copy_to_host, host, conv=lambda a: type(a).__name__)
        t.rec("returned_same", out is host)
        t.rec("host_equal", host.tobytes() == data)
        c = buf.copy()
        t.rec("copy_equal", c.tobytes() == data)
        t.rec("copy_new_ptr", c.ptr != buf.ptr or size == 0)
        t.rec("copy_size", c.size)
        import copy as _copy

        c2 = _copy.copy(buf)
        t.rec("copy_copy_equal", c2.tobytes() == data)
        import pickle

        p = pickle.loads(pickle.dumps(buf))
        t.rec("pickle_type", type(p).__name__)
        t.rec("pickle_equal", p.tobytes() == data)
        t.rec("pickle_size", p.size)
        r = buf.__reduce__()
        t.rec("reduce_len", len(r))
        t.rec("reduce_callable", getattr(r[0], "__name__", type(r[0]).__name__))
        fresh = rmm.DeviceBuffer(size=size)
        t.call("copy_from_host", fresh.copy_from_host, np.frombuffer(data, dtype=np.uint8))
        t.rec("from_host_equal", fresh.tobytes() == data)
        other = rmm.DeviceBuffer(size=size)
        t.call("copy_from_device", other.copy_from_device, buf)
        t.rec("from_device_equal", other.tobytes() == data)
        mod = rmm.pylibrmm.device_buffer
        d2 = mod.to_device(data)
        t.rec("module_to_device_equal", d2.tobytes() == data)

    return run


for _s in BUFFER_SIZES:
    register(_sized(_s), __name__, f"sized/{_s}")
    register(_roundtrip(_s), __name__, f"roundtrip/{_s}")


def _with_mr(name):
    def run(t):
        import rmm

        mr = make(rmm, name)
        buf = t.call("construct", rmm.DeviceBuffer, size=5000, mr=mr,
                     conv=lambda b: type(b).__name__)
        if buf is None:
            return
        _facts(t, "", buf)
        t.call("mr_is_given", lambda: buf.mr is mr)
        data = bytes(range(256)) * 4
        b2 = t.call("to_device_mr", lambda: rmm.DeviceBuffer(ptr=0, size=0, mr=mr),
                    conv=lambda b: b.size)
        buf.copy_from_host(bytearray(data + bytes(5000 - len(data))))
        t.rec("content", buf.tobytes()[:1024] == data)
        c = buf.copy()
        t.call("copy_mr_type", lambda: type(c.mr).__name__)
        t.call("copy_mr_is_same", lambda: c.mr is mr)
        t.call("resize_up", buf.resize, 9000)
        _facts(t, "after_up.", buf)
        t.rec("content_kept", buf.tobytes()[:1024] == data)
        t.call("resize_down", buf.resize, 100)
        _facts(t, "after_down.", buf)
        t.call("reserve", buf.reserve, 20000)
        _facts(t, "after_reserve.", buf)
        del b2

    return run


for _n in DEVICE_RESOURCES:
    register(_with_mr(_n), __name__, f"with_mr/{_n}")


@scenario()
def default_constructor(t):
    import rmm

    b = rmm.DeviceBuffer()
    _facts(t, "", b)
    t.rec("ptr_is_zero", b.ptr == 0)
    t.rec("tobytes", b.tobytes())
    t.call("mr_type", lambda: type(b.mr).__name__)


@scenario()
def constructor_refusals(t):
    import rmm

    D = rmm.DeviceBuffer
    conv = lambda b: [b.size, b.ptr != 0]  # noqa: E731
    t.call("positional", D, 10, conv=conv)
    t.call("negative", D, size=-1, conv=conv)
    t.call("float", D, size=1.5, conv=conv)
    t.call("str", D, size="10", conv=conv)
    t.call("none", D, size=None, conv=conv)
    t.call("huge", D, size=HUGE, conv=conv)
    t.call("stream_none", D, size=10, stream=None, conv=conv)
    t.call("stream_int", D, size=10, stream=0, conv=conv)
    t.call("mr_wrong", D, size=10, mr=42, conv=conv)
    t.call("mr_none", D, size=10, mr=None, conv=conv)
    t.call("unknown_kw", D, size=10, color="red", conv=conv)
    t.call("ptr_zero_size", D, ptr=0, size=10, conv=conv)


@scenario()
def construct_from_ptr(t):
    import rmm

    src = rmm.DeviceBuffer.to_device(b"0123456789abcdef")
    b = t.call("from_ptr", rmm.DeviceBuffer, ptr=src.ptr, size=16, conv=lambda b: b.size)
    if b is not None:
        t.rec("content", b.tobytes())
        t.rec("distinct", b.ptr != src.ptr)
    b = t.call("from_ptr_part", rmm.DeviceBuffer, ptr=src.ptr + 4, size=4, conv=lambda b: b.size)
    if b is not None:
        t.rec("content_part", b.tobytes())
    t.call("from_ptr_zero", rmm.DeviceBuffer, ptr=src.ptr, size=0, conv=lambda b: b.size)


@scenario()
def huge_is_memory_error(t):
    import rmm

    for n in [HUGE, 1 << 50, (1 << 64) - 1]:
        t.call(f"size{n}", rmm.DeviceBuffer, size=n, conv=lambda b: b.size)
    t.call("over_size_t", rmm.DeviceBuffer, size=1 << 64, conv=lambda b: b.size)


@scenario()
def resize_reserve_sequence(t):
    import rmm

    b = rmm.DeviceBuffer.to_device(b"abcdefgh" * 32)
    for label, fn, arg in [
        ("resize_same", b.resize, 256),
        ("resize_0", b.resize, 0),
        ("resize_512", b.resize, 512),
        ("reserve_small", b.reserve, 10),
        ("reserve_1024", b.reserve, 1024),
        ("resize_1000", b.resize, 1000),
        ("resize_2000", b.resize, 2000),
        ("resize_neg", b.resize, -1),
        ("reserve_neg", b.reserve, -1),
        ("resize_huge", b.resize, HUGE),
        ("reserve_huge", b.reserve, HUGE),
        ("resize_str", b.resize, "3"),
    ]:
        t.call(label, fn, arg)
        _facts(t, label + ".", b)
    t.call("resize_stream_none", b.resize, 10, None)
    t.call("reserve_stream_kw", b.reserve, new_capacity=4096)
    _facts(t, "end.", b)


@scenario()
def resize_keeps_content(t):
    import rmm

    data = bytes(range(200))
    b = rmm.DeviceBuffer.to_device(data)
    b.resize(1000)
    t.rec("prefix_up", b.tobytes()[:200] == data)
    b.resize(50)
    t.rec("prefix_down", b.tobytes() == data[:50])
    b.reserve(4096)
    t.rec("prefix_reserve", b.tobytes() == data[:50])
    t.rec("capacity", b.capacity())


@scenario()
def host_copy_refusals(t):
    import numpy as np

    import rmm

    b = rmm.DeviceBuffer.to_device(b"x" * 100)
    t.call("to_host_small", b.copy_to_host, np.zeros(10, dtype=np.uint8), msg=True,
           conv=lambda a: len(a))
    t.call("to_host_big", b.copy_to_host, np.zeros(200, dtype=np.uint8), conv=lambda a: len(a))
    t.call("to_host_bytes", b.copy_to_host, b"\0" * 100, conv=lambda a: len(a))
    t.call("to_host_bytearray", b.copy_to_host, bytearray(100), conv=lambda a: bytes(a[:3]))
    t.call("to_host_int32", b.copy_to_host, np.zeros(25, dtype=np.int32), conv=lambda a: len(a))
    t.call("to_host_list", b.copy_to_host, [0] * 100, conv=lambda a: len(a))
    t.call("from_host_big", b.copy_from_host, np.zeros(200, dtype=np.uint8), msg=True)
    t.call("from_host_small", b.copy_from_host, np.ones(10, dtype=np.uint8))
    t.rec("after_small", b.tobytes()[:12])
    t.call("from_host_bytes", b.copy_from_host, b"y" * 100)
    t.call("from_host_str", b.copy_from_host, "y" * 100)
    t.call("from_host_list", b.copy_from_host, [1] * 100)
    t.call("from_host_int64", b.copy_from_host, np.arange(5, dtype=np.int64))
    t.call("from_host_2d", b.copy_from_host, np.zeros((10, 10), dtype=np.uint8))
    t.call("from_host_noncontig", b.copy_from_host, np.zeros(200, dtype=np.uint8)[::2])
    t.rec("after", b.tobytes()[:8])
    t.call("to_device_str", rmm.DeviceBuffer.to_device, "abc", conv=lambda d: d.size)
    t.call("to_device_list", rmm.DeviceBuffer.to_device, [1, 2], conv=lambda d: d.size)
    t.call("to_device_int64", rmm.DeviceBuffer.to_device, np.arange(4, dtype=np.int64),
           conv=lambda d: d.size)
    t.call("to_device_memoryview", rmm.DeviceBuffer.to_device, memoryview(b"abcd"),
           conv=lambda d: d.tobytes())
    t.call("to_device_bytearray", rmm.DeviceBuffer.to_device, bytearray(b"abcd"),
           conv=lambda d: d.tobytes())
    t.call("to_device_empty", rmm.DeviceBuffer.to_device, b"", conv=lambda d: d.size)
    t.call("to_device_none", rmm.DeviceBuffer.to_device, None, conv=lambda d: d.size)


@scenario()
def copy_from_device_refusals(t):
    import numpy as np

    import rmm

    b = rmm.DeviceBuffer(size=64)
    t.call("host_array", b.copy_from_device, np.zeros(64, dtype=np.uint8), msg=True)
    t.call("none", b.copy_from_device, None, msg=True)
    t.call("bigger", b.copy_from_device, rmm.DeviceBuffer(size=128), msg=True)
    t.call("smaller", b.copy_from_device, rmm.DeviceBuffer.to_device(b"z" * 8))
    t.rec("after_smaller", b.tobytes()[:9])

    class Fake:
        def __init__(self, intf):
            self.__cuda_array_interface__ = intf

    src = rmm.DeviceBuffer.to_device(bytes(range(64)))
    base = {"data": (src.ptr, False), "shape": (16,), "typestr": "<i4", "version": 3}
    t.call("int32_cai", b.copy_from_device, Fake(dict(base)))
    t.rec("after_int32", b.tobytes() == bytes(range(64)))
    t.call("2d", b.copy_from_device, Fake(dict(base, shape=(4, 4))), msg=True)
    t.call("strided", b.copy_from_device, Fake(dict(base, strides=(8,), shape=(8,))), msg=True)
    t.call("contig_strides", b.copy_from_device, Fake(dict(base, strides=(4,))))
    t.call("no_typestr", b.copy_from_device, Fake({"data": (src.ptr, False), "shape": (16,),
                                                    "version": 3}))


@scenario()
def module_copy_helpers(t):
    import numpy as np

    import rmm
    from rmm.pylibrmm import device_buffer as m

    src = rmm.DeviceBuffer.to_device(b"hello world!" * 2)
    host = np.zeros(24, dtype=np.uint8)
    t.call("copy_ptr_to_host", m.copy_ptr_to_host, src.ptr, host)
    t.rec("host", host.tobytes())
    dst = rmm.DeviceBuffer(size=24)
    t.call("copy_host_to_ptr", m.copy_host_to_ptr, np.frombuffer(b"ABCDEFGHIJKL" * 2,
                                                                  dtype=np.uint8), dst.ptr)
    t.rec("dst", dst.tobytes())
    t.call("copy_device_to_ptr", m.copy_device_to_ptr, src.ptr, dst.ptr, 5)
    t.rec("dst2", dst.tobytes())
    t.call("copy_ptr_to_host_bytes", m.copy_ptr_to_host, src.ptr, b"\0" * 24, msg=True)
    t.call("copy_ptr_to_host_none", m.copy_ptr_to_host, src.ptr, None, msg=True)
    t.call("copy_host_to_ptr_none", m.copy_host_to_ptr, None, dst.ptr, msg=True)
    t.call("copy_device_to_ptr_zero", m.copy_device_to_ptr, src.ptr, dst.ptr, 0)
    t.call("to_device_fn", lambda: m.to_device(b"abc").tobytes())


@scenario()
def prefetch(t):
    import rmm
    from rmm.pylibrmm.stream import Stream

    for name in ["managed", "cuda"]:
        mr = make(rmm, name)
        b = rmm.DeviceBuffer(size=1 << 16, mr=mr)
        t.call(name + ".prefetch", b.prefetch)
        t.call(name + ".prefetch_dev0", b.prefetch, 0)
        t.call(name + ".prefetch_stream", b.prefetch, stream=Stream())
        t.call(name + ".prefetch_cpu", b.prefetch, -1)
        t.call(name + ".prefetch_bad_dev", b.prefetch, 99)
        t.call(name + ".prefetch_str", b.prefetch, "x")
    e = rmm.DeviceBuffer()
    t.call("empty.prefetch", e.prefetch)


@scenario()
def buffer_uses_current_resource(t):
    import rmm

    st = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
    rmm.mr.set_current_device_resource(st)
    b = rmm.DeviceBuffer(size=1000)
    t.call("mr_is_current", lambda b=b: b.mr is st)
    t.rec("counts", st.allocation_counts.current_bytes)
    c = b.copy()
    t.rec("counts_after_copy", st.allocation_counts.current_bytes)
    d = rmm.DeviceBuffer.to_device(b"abc")
    t.rec("counts_after_to_device", st.allocation_counts.current_count)
    del b, c, d
    import gc

    gc.collect()
    t.rec("counts_after_del", st.allocation_counts.current_bytes)
    t.rec("total", st.allocation_counts.total_count)


@scenario()
def buffer_attributes(t):
    import rmm

    b = rmm.DeviceBuffer(size=10)
    t.call("set_size", setattr, b, "size", 5)
    t.call("set_ptr", setattr, b, "ptr", 5)
    t.call("set_nbytes", setattr, b, "nbytes", 5)
    t.call("set_mr", setattr, b, "mr", rmm.mr.CudaMemoryResource())
    t.call("set_extra", setattr, b, "extra", 5)
    t.call("hash", lambda: hash(b) == hash(b))
    t.call("eq", lambda: b == b)
    t.call("bool", lambda: bool(b))
    t.call("iter", lambda: list(iter(b)))
    t.call("index", lambda: b[0])
    t.call("weakref", lambda: __import__("weakref").ref(b)() is b)
    t.call("memoryview", lambda: memoryview(b).nbytes)
    t.call("stream_type", lambda: type(b.stream).__name__)
    t.call("deepcopy", lambda: __import__("copy").deepcopy(b).size)
    t.rec("repr", no_addresses(repr(b)))
    t.rec("str", no_addresses(str(b)))


@scenario()
def buffer_on_stream(t):
    import rmm
    from rmm.pylibrmm.stream import Stream

    s = Stream()
    b = rmm.DeviceBuffer(size=100, stream=s)
    t.call("stream_same", lambda: b.stream is s or b.stream == s)
    t.call("is_default", lambda: b.stream.is_default())
    c = rmm.DeviceBuffer.to_device(b"abc", stream=s)
    s.synchronize()
    t.rec("to_device_stream", c.tobytes(stream=s))
    t.call("copy_to_host_stream", c.copy_to_host, stream=s, conv=lambda a: bytes(a))
    t.call("tobytes_none", c.tobytes, None)
    t.call("tobytes_int", c.tobytes, 0)


def _mr_size(name, size):
    def run(t):
        import rmm

        mr = make(rmm, name)
        data = bytes((i * 13) % 251 for i in range(size))
        b = t.call("construct", rmm.DeviceBuffer, size=size, mr=mr, conv=lambda b: b.size)
        if b is None:
            return
        t.rec("ptr", ptr_facts(b.ptr))
        t.rec("capacity", b.capacity())
        t.call("copy_from_host", b.copy_from_host, data)
        t.rec("content", b.tobytes() == data)
        c = t.call("copy", b.copy, conv=lambda c: [c.size, c.capacity()])
        if c is not None:
            t.rec("copy_content", c.tobytes() == data)
        t.call("resize_double", b.resize, 2 * size + 1)
        t.rec("after_resize", [b.size, b.capacity(), b.tobytes()[:size] == data])
        del b, c

    return run


for _n in DEVICE_RESOURCES:
    for _s in [0, 1, 1000, 1 << 20]:
        register(_mr_size(_n, _s), __name__, f"mr_size/{_n}/{_s}")


@scenario()
def pinned_host_buffer(t):
    import rmm

    mr = rmm.mr.PinnedHostMemoryResource()
    b = t.call("construct", rmm.DeviceBuffer, size=1000, mr=mr, conv=lambda b: b.size)
    if b is None:
        return
    t.call("copy_from_host", b.copy_from_host, bytes(range(250)) * 4)
    t.call("tobytes", lambda: b.tobytes()[:4])
    t.call("copy", lambda: b.copy().tobytes()[-4:])
    t.call("resize", b.resize, 3000)
    t.rec("size", b.size)


@scenario()
def free_memory_tracks_buffers(t):
    import gc

    import rmm

    free0, _ = rmm.mr.available_device_memory()
    b = rmm.DeviceBuffer(size=256 << 20)
    free1, _ = rmm.mr.available_device_memory()
    t.rec("dropped_by_at_least_size", free0 - free1 >= 256 << 20)
    del b
    gc.collect()
    free2, _ = rmm.mr.available_device_memory()
    t.rec("given_back", free2 - free1 >= 256 << 20)
