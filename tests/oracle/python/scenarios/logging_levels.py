"""rmm's debug logger: levels, flush levels, should_log, the warnings RMM gives, wrong types."""

import warnings

from oracle_lib import register, scenario


def _warned(fn, *args):
    """Call fn; the result and the messages of the warnings it gave (in order)."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = fn(*args)
        except Exception as e:  # noqa: BLE001
            r = {"raises": type(e).__name__, "message": str(e)}
    return {"result": r, "warnings": [f"{x.category.__name__}: {x.message}" for x in w]}


@scenario(needs_gpus=0, isolate=True)
def defaults(t):
    import rmm

    t.rec("level", rmm.get_logging_level())
    t.rec("flush_level", rmm.get_flush_level())
    t.rec("should_log", {m.name: rmm.should_log(m) for m in rmm.level_enum})


def _set_level(member):
    def run(t):
        import rmm

        level = getattr(rmm.level_enum, member)
        t.rec("set", _warned(rmm.set_logging_level, level))
        t.rec("get", rmm.get_logging_level())
        t.rec("get_is_enum", isinstance(rmm.get_logging_level(), rmm.level_enum))
        t.rec("should_log", {m.name: rmm.should_log(m) for m in rmm.level_enum})
        t.rec("set_flush", _warned(rmm.set_flush_level, level))
        t.rec("get_flush", rmm.get_flush_level())
        t.call("flush", rmm.flush_logger)

    return run


for _m in ["trace", "debug", "info", "warn", "error", "critical", "off", "n_levels"]:
    register(_set_level(_m), __name__, f"set_level/{_m}", needs_gpus=0)


@scenario(needs_gpus=0)
def wrong_types(t):
    import rmm

    for label, v in [("int", 2), ("str", "info"), ("none", None), ("float", 1.0)]:
        t.call("set_logging_level." + label, rmm.set_logging_level, v, msg=True)
        t.call("set_flush_level." + label, rmm.set_flush_level, v, msg=True)
        t.call("should_log." + label, rmm.should_log, v, msg=True)
    t.rec("level_after", rmm.get_logging_level())


@scenario(needs_gpus=0)
def level_enum_facts(t):
    import rmm

    e = rmm.level_enum
    t.rec("names", [m.name for m in e])
    t.rec("values", [int(m) for m in e])
    t.call("by_value", lambda: e(2).name)
    t.call("by_name", lambda: e["warn"].name)
    t.call("bad_value", lambda: e(99))
    t.rec("str_info", str(e.info))
    t.rec("repr_info", repr(e.info))
    t.rec("format_info", f"{e.info}")
    t.rec("compare", e.info < e.warn)
    t.rec("eq_int", e.info == 2)
    t.rec("same_object", rmm.level_enum is rmm.pylibrmm.logger.level_enum)
    import rmm.librmm._logger as lg

    t.rec("same_as_librmm", lg.level_enum is rmm.level_enum)


@scenario(needs_gpus=0)
def level_roundtrip_all(t):
    import rmm

    for m in rmm.level_enum:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                rmm.set_logging_level(m)
            except Exception as e:  # noqa: BLE001
                t.rec(m.name, {"raises": type(e).__name__})
                continue
        t.rec(m.name, rmm.get_logging_level())


@scenario()
def logging_while_allocating(t):
    import rmm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rmm.set_logging_level(rmm.level_enum.trace)
        rmm.set_flush_level(rmm.level_enum.trace)
    b = rmm.DeviceBuffer(size=1000)
    mr = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), 1 << 20)
    p = mr.allocate(4096)
    mr.deallocate(p, 4096)
    t.call("flush", rmm.flush_logger)
    t.rec("level", rmm.get_logging_level())
    del b, mr


@scenario(isolate=True)
def enable_disable_logging(t):
    import os

    import rmm
    from scen_util import tmp_log_path

    path = tmp_log_path("global.csv")
    t.call("get_log_filenames0", rmm.get_log_filenames)
    t.call("enable", rmm.enable_logging, path)
    mr = rmm.mr.get_current_device_resource()
    t.rec("type", type(mr).__name__)
    names = rmm.get_log_filenames()
    t.rec("names", {k: os.path.basename(v) if v else v for k, v in names.items()})
    b = rmm.DeviceBuffer(size=1000)
    del b
    t.call("enable_again", rmm.enable_logging, path)
    t.rec("same_after_again", rmm.mr.get_current_device_resource() is mr)
    t.call("flush_logs", rmm.mr._flush_logs) if hasattr(rmm.mr, "_flush_logs") else t.rec(
        "flush_logs", "absent")
    t.call("disable", rmm.disable_logging)
    t.rec("type_after", type(rmm.mr.get_current_device_resource()).__name__)
    t.call("names_after", rmm.get_log_filenames)
    t.call("disable_again", rmm.disable_logging)
    name = names.get(0)
    if name and os.path.exists(name):
        with open(name) as f:
            lines = f.read().splitlines()
        t.rec("header", lines[0] if lines else None)
        t.rec("rows", len(lines) - 1)


@scenario(isolate=True)
def enable_logging_no_name(t):
    import os

    import rmm

    os.environ.pop("RMM_LOG_FILE", None)
    t.call("enable", rmm.enable_logging, msg=True)
    t.rec("type", type(rmm.mr.get_current_device_resource()).__name__)
