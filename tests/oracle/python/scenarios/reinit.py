"""rmm.reinitialize and its hooks, is_initialized, the current and per-device resources."""

import os

from oracle_lib import register, scenario
from scen_util import ptr_facts, tmp_log_path


def _describe(mr):
    """A resource and its upstream chain by type name."""
    chain = []
    while mr is not None and len(chain) < 8:
        chain.append(type(mr).__name__)
        get = getattr(mr, "get_upstream", None)
        mr = get() if get is not None else None
    return chain


def _reinit(kwargs):
    def run(t):
        import rmm

        kw = dict(kwargs)
        if kw.get("log_file_name") == "<tmp>":
            kw["log_file_name"] = tmp_log_path("reinit.csv")
        t.call("reinitialize", rmm.reinitialize, **kw, msg=True)
        t.call("is_initialized", rmm.is_initialized)
        mr = rmm.mr.get_current_device_resource()
        t.rec("chain", _describe(mr))
        pool = mr
        while pool is not None and not hasattr(pool, "pool_size"):
            pool = pool.get_upstream() if hasattr(pool, "get_upstream") else None
        if pool is not None:
            t.call("pool_size", pool.pool_size)
        t.call("log_filenames", lambda: {k: os.path.basename(v) if v else v
                                          for k, v in rmm.get_log_filenames().items()})
        b = t.call("buffer", rmm.DeviceBuffer, size=1000, conv=lambda b: ptr_facts(b.ptr))
        del b

    return run


_REINIT_CASES = {
    "default": {},
    "pool": {"pool_allocator": True, "initial_pool_size": 1 << 24},
    "pool_str": {"pool_allocator": True, "initial_pool_size": "16MiB"},
    "pool_max": {"pool_allocator": True, "initial_pool_size": 1 << 24,
                 "maximum_pool_size": 1 << 26},
    "pool_max_str": {"pool_allocator": True, "initial_pool_size": "16MB",
                     "maximum_pool_size": "64MB"},
    "pool_initial_over_max": {"pool_allocator": True, "initial_pool_size": 1 << 26,
                              "maximum_pool_size": 1 << 24},
    "pool_default_size": {"pool_allocator": True},
    "pool_zero": {"pool_allocator": True, "initial_pool_size": 0},
    "pool_unaligned": {"pool_allocator": True, "initial_pool_size": 1000},
    "managed": {"managed_memory": True},
    "managed_pool": {"managed_memory": True, "pool_allocator": True,
                     "initial_pool_size": 1 << 24},
    "sizes_without_pool": {"initial_pool_size": 1 << 24, "maximum_pool_size": 1 << 26},
    "bad_size": {"pool_allocator": True, "initial_pool_size": "lots"},
    "negative_size": {"pool_allocator": True, "initial_pool_size": -1},
    "devices_int": {"devices": 0},
    "devices_list": {"devices": [0]},
    "devices_none": {"devices": None},
    "devices_empty": {"devices": []},
    "devices_bad": {"devices": 99},
    "devices_str": {"devices": "0"},
    "logging": {"logging": True, "log_file_name": "<tmp>"},
    "logging_pool": {"logging": True, "log_file_name": "<tmp>", "pool_allocator": True,
                     "initial_pool_size": 1 << 24},
    "logging_no_name": {"logging": True},
    "log_name_without_logging": {"log_file_name": "<tmp>"},
    "everything": {"pool_allocator": True, "managed_memory": True, "initial_pool_size": "32MiB",
                   "maximum_pool_size": "64MiB", "devices": [0], "logging": True,
                   "log_file_name": "<tmp>"},
    "unknown_kw": {"color": "red"},
    "pool_allocator_int": {"pool_allocator": 1, "initial_pool_size": 1 << 24},
    "pool_allocator_str": {"pool_allocator": "yes"},
}
for _k, _kw in _REINIT_CASES.items():
    register(_reinit(_kw), __name__, f"reinitialize/{_k}", isolate=True)


@scenario(isolate=True)
def reinitialize_twice(t):
    import rmm

    rmm.reinitialize(pool_allocator=True, initial_pool_size=1 << 24)
    first = rmm.mr.get_current_device_resource()
    rmm.reinitialize()
    second = rmm.mr.get_current_device_resource()
    t.rec("first", _describe(first))
    t.rec("second", _describe(second))
    t.rec("distinct", first is not second)
    t.call("old_pool_still_allocates", first.allocate, 256, conv=ptr_facts)


@scenario(isolate=True)
def initial_state(t):
    import rmm

    t.call("is_initialized", rmm.is_initialized)
    t.call("log_filenames", rmm.get_log_filenames)
    mr = rmm.mr.get_current_device_resource()
    t.rec("current", _describe(mr))
    t.rec("current_stable", rmm.mr.get_current_device_resource() is mr)
    t.rec("per_device0_is_current", rmm.mr.get_per_device_resource(0) is mr)
    t.call("is_initialized_after", rmm.is_initialized)
    t.call("log_filenames_after", rmm.get_log_filenames)


@scenario(needs_gpus=0, isolate=True)
def initial_state_no_cuda_call(t):
    import rmm

    t.call("is_initialized", rmm.is_initialized)
    t.call("log_filenames", rmm.get_log_filenames)


@scenario(isolate=True)
def hooks_order_and_args(t):
    import rmm

    calls = []

    def h1(*a, **k):
        calls.append(["h1", list(a), sorted(k.items())])

    def h2(*a, **k):
        calls.append(["h2", list(a), sorted(k.items())])

    t.rec("register_returns_func", rmm.register_reinitialize_hook(h1, 1, x=2) is h1)
    rmm.register_reinitialize_hook(h2)
    rmm.register_reinitialize_hook(h1, "again")
    rmm.reinitialize()
    t.rec("calls", calls)
    calls.clear()
    t.call("unregister", rmm.unregister_reinitialize_hook, h1)
    rmm.reinitialize()
    t.rec("calls_after_unregister", calls)
    t.call("unregister_unknown", rmm.unregister_reinitialize_hook, print)
    rmm.unregister_reinitialize_hook(h2)


@scenario(isolate=True)
def hook_raises(t):
    import rmm

    def bad():
        raise RuntimeError("hook failed")

    rmm.register_reinitialize_hook(bad)
    before = rmm.mr.get_current_device_resource()
    t.call("reinitialize", rmm.reinitialize, pool_allocator=True, initial_pool_size=1 << 24,
           msg=True)
    t.rec("unchanged", rmm.mr.get_current_device_resource() is before)
    rmm.unregister_reinitialize_hook(bad)


@scenario()
def set_get_current(t):
    import rmm

    mr = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
    t.call("set", rmm.mr.set_current_device_resource, mr)
    t.rec("get_is_same", rmm.mr.get_current_device_resource() is mr)
    t.rec("per_device_is_same", rmm.mr.get_per_device_resource(0) is mr)
    t.call("set_none", rmm.mr.set_current_device_resource, None)
    t.call("set_int", rmm.mr.set_current_device_resource, 5)
    t.call("set_type", rmm.mr.set_current_device_resource, rmm.mr.CudaMemoryResource)
    t.rec("still_same", rmm.mr.get_current_device_resource() is mr)
    b = rmm.DeviceBuffer(size=10)
    t.rec("counted", mr.allocation_counts.total_count)
    del b


def _per_device_bad(label, fn_name, args):
    # One scenario per call: RMM may crash on some of these, and a crash ends its scenario only.
    def run(t):
        import rmm

        fn = getattr(rmm.mr, fn_name)
        real = [rmm.mr.CudaMemoryResource() if a == "<mr>" else a for a in args]
        t.call(label, fn, *real, conv=_describe)
        t.call("current_after", lambda: _describe(rmm.mr.get_current_device_resource()))

    return run


for _label, _fn, _args in [
    ("set_neg", "set_per_device_resource", (-1, "<mr>")),
    ("set_str", "set_per_device_resource", ("0", "<mr>")),
    ("set_none_mr", "set_per_device_resource", (0, None)),
    ("set_beyond", "set_per_device_resource", (64, "<mr>")),
    ("get_neg", "get_per_device_resource", (-1,)),
    ("get_str", "get_per_device_resource", ("0",)),
    ("get_beyond", "get_per_device_resource", (64,)),
]:
    register(_per_device_bad(_label, _fn, _args), __name__, f"per_device_bad/{_label}",
             isolate=True)


@scenario()
def current_survives_drop(t):
    import gc

    import rmm

    rmm.mr.set_current_device_resource(
        rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), 1 << 22))
    gc.collect()
    mr = rmm.mr.get_current_device_resource()
    t.rec("chain", _describe(mr))
    b = rmm.DeviceBuffer(size=1 << 20)
    t.call("buffer_mr_is_current", lambda b=b: b.mr is mr)
    rmm.mr.set_current_device_resource(rmm.mr.CudaMemoryResource())
    gc.collect()
    t.rec("buffer_still_readable", len(b.tobytes()))
    del b


@scenario(isolate=True)
def environment_log_file(t):
    import rmm

    os.environ["RMM_LOG_FILE"] = tmp_log_path("env-reinit.txt")
    t.call("reinitialize", rmm.reinitialize, logging=True)
    t.call("names", lambda: {k: os.path.basename(v) if v else v
                              for k, v in rmm.get_log_filenames().items()})
    os.environ.pop("RMM_LOG_FILE")
