"""Two GPUs: per-device resources, reinitialize over both, buffers used with the other device
current (resize, copy, reserve, drop), resources that check which device is current."""

import os

from oracle_lib import register, scenario
from scen_util import ptr_facts, stats_dict, tmp_log_path


def _set(dev):
    import rmm._cuda.gpu as gpu

    gpu.setDevice(dev)


def _dev():
    import rmm._cuda.gpu as gpu

    return gpu.getDevice()


@scenario(needs_gpus=2)
def per_device_resources(t):
    import rmm

    a = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
    _set(1)
    b = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
    _set(0)
    rmm.mr.set_per_device_resource(0, a)
    rmm.mr.set_per_device_resource(1, b)
    t.rec("get0", rmm.mr.get_per_device_resource(0) is a)
    t.rec("get1", rmm.mr.get_per_device_resource(1) is b)
    t.rec("current_on0", rmm.mr.get_current_device_resource() is a)
    _set(1)
    t.rec("current_on1", rmm.mr.get_current_device_resource() is b)
    buf = rmm.DeviceBuffer(size=1000)
    t.call("buf_mr_is_b", lambda buf=buf: buf.mr is b)
    t.rec("counts_b", stats_dict(b.allocation_counts))
    t.rec("counts_a", stats_dict(a.allocation_counts))
    del buf
    _set(0)
    t.rec("device_back", _dev())


@scenario(needs_gpus=2)
def set_current_on_device1(t):
    import rmm

    _set(1)
    mr = rmm.mr.CudaMemoryResource()
    rmm.mr.set_current_device_resource(mr)
    t.rec("per_device1", rmm.mr.get_per_device_resource(1) is mr)
    t.rec("per_device0_differs", rmm.mr.get_per_device_resource(0) is not mr)
    _set(0)


def _reinit_two(kwargs):
    def run(t):
        import rmm

        kw = dict(kwargs)
        if kw.get("log_file_name") == "<tmp>":
            kw["log_file_name"] = tmp_log_path("two.csv")
        t.call("reinitialize", rmm.reinitialize, devices=[0, 1], **kw, msg=True)
        for d in (0, 1):
            mr = rmm.mr.get_per_device_resource(d)
            t.rec(f"type{d}", type(mr).__name__)
            if hasattr(mr, "pool_size"):
                t.rec(f"pool_size{d}", mr.pool_size())
        t.rec("device_after", _dev())
        t.call("log_filenames", lambda: {k: os.path.basename(v) if v else v
                                          for k, v in rmm.get_log_filenames().items()})
        for d in (0, 1):
            _set(d)
            b = t.call(f"buffer_on{d}", rmm.DeviceBuffer, size=4096, conv=lambda b: b.size)
            del b
        _set(0)

    return run


for _k, _kw in {"default": {}, "pool": {"pool_allocator": True, "initial_pool_size": 1 << 24},
                "managed": {"managed_memory": True},
                "logging": {"logging": True, "log_file_name": "<tmp>"}}.items():
    register(_reinit_two(_kw), __name__, f"reinitialize_two/{_k}", needs_gpus=2, isolate=True)


@scenario(needs_gpus=2, isolate=True)
def reinitialize_device1_only(t):
    import rmm

    rmm.reinitialize(devices=1, pool_allocator=True, initial_pool_size=1 << 24)
    t.rec("device_after", _dev())
    t.rec("type1", type(rmm.mr.get_per_device_resource(1)).__name__)
    t.rec("type0", type(rmm.mr.get_per_device_resource(0)).__name__)
    t.call("is_initialized", rmm.is_initialized)


@scenario(needs_gpus=2, isolate=True)
def enable_logging_two(t):
    import rmm

    rmm.reinitialize(devices=[0, 1])
    t.call("enable", rmm.enable_logging, tmp_log_path("both.csv"))
    t.call("names", lambda: {k: os.path.basename(v) if v else v
                              for k, v in rmm.get_log_filenames().items()})
    t.call("disable", rmm.disable_logging)
    t.rec("types", [type(rmm.mr.get_per_device_resource(d)).__name__ for d in (0, 1)])


class _DeviceCheck:
    """A callback resource over CUDA that records the current device at each call."""

    def __init__(self, rmm, owner_device):
        self.seen = []
        self.owner = owner_device
        _set(owner_device)
        self.up = rmm.mr.CudaMemoryResource()

        def alloc(n, s):
            self.seen.append(["alloc", n, _dev()])
            return self.up.allocate(n, s)

        def dealloc(p, n, s):
            self.seen.append(["free", n, _dev()])
            self.up.deallocate(p, n, s)

        self.mr = rmm.mr.CallbackMemoryResource(alloc, dealloc)


def _buffer_other_device(op):
    def run(t):
        import rmm

        chk = _DeviceCheck(rmm, 0)
        _set(0)
        b = rmm.DeviceBuffer.to_device(bytes(range(200)), mr=chk.mr)
        _set(1)
        if op == "resize_up":
            t.call("op", b.resize, 5000)
        elif op == "resize_down":
            t.call("op", b.resize, 10)
        elif op == "reserve":
            t.call("op", b.reserve, 8192)
        elif op == "copy":
            c = t.call("op", b.copy, conv=lambda c: c.size)
            t.rec("copy_content", c.tobytes()[:5] if c is not None else None)
            del c
        elif op == "copy_to_host":
            t.call("op", b.tobytes, conv=lambda x: x[:5])
        elif op == "copy_from_host":
            t.call("op", b.copy_from_host, bytes(200))
        elif op == "drop":
            import gc

            del b
            gc.collect()
            b = None
        elif op == "resize_then_shrink":
            t.call("resize", b.resize, 100)
            t.call("op", b.reserve, 100)
        elif op == "prefetch":
            t.call("op", b.prefetch)
        t.rec("current_after", _dev())
        if b is not None:
            t.rec("content", b.tobytes()[:5])
            t.rec("size", b.size)
        t.rec("seen", chk.seen)
        _set(0)
        del b

    return run


for _op in ["resize_up", "resize_down", "reserve", "copy", "copy_to_host", "copy_from_host",
            "drop", "resize_then_shrink", "prefetch"]:
    register(_buffer_other_device(_op), __name__, f"buffer_other_device/{_op}", needs_gpus=2)


@scenario(needs_gpus=2)
def resources_on_device1(t):
    import rmm

    _set(1)
    for name, f in [("cuda_async", lambda: rmm.mr.CudaAsyncMemoryResource()),
                    ("pool", lambda: rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(),
                                                               1 << 20)),
                    ("arena", lambda: rmm.mr.ArenaMemoryResource(rmm.mr.CudaMemoryResource(),
                                                                 1 << 24))]:
        mr = f()
        p = t.call(name + ".alloc_on1", mr.allocate, 4096, conv=ptr_facts)
        _set(0)
        if p is not None:
            t.call(name + ".free_on0", mr.deallocate, p, 4096)
        _set(1)
    _set(0)


@scenario(needs_gpus=2)
def copy_between_devices(t):
    import rmm

    _set(0)
    a = rmm.DeviceBuffer.to_device(b"from-device-0")
    _set(1)
    b = rmm.DeviceBuffer(size=a.size)
    t.call("copy_from_device", b.copy_from_device, a)
    t.rec("content", b.tobytes())
    c = t.call("to_device_on1", rmm.DeviceBuffer.to_device, b"on1", conv=lambda c: c.tobytes())
    _set(0)
    t.rec("read_b_on0", b.tobytes())
    del a, b, c


@scenario(needs_gpus=2)
def statistics_per_device(t):
    import rmm
    import rmm.statistics as s

    _set(0)
    s.enable_statistics()
    _set(1)
    t.call("get_on1", s.get_statistics, conv=stats_dict)
    s.enable_statistics()
    b1 = rmm.DeviceBuffer(size=100)
    t.call("get_on1_after", s.get_statistics, conv=stats_dict)
    _set(0)
    b0 = rmm.DeviceBuffer(size=300)
    t.call("get_on0", s.get_statistics, conv=stats_dict)
    del b0, b1


@scenario(needs_gpus=2)
def available_memory_per_device(t):
    import rmm

    for d in (0, 1):
        _set(d)
        free, total = rmm.mr.available_device_memory()
        t.rec(f"dev{d}", 0 < free <= total)
    _set(0)
