"""rmm.statistics: enable/get/push/pop, the statistics() context, the profiler and its report."""

from oracle_lib import register, scenario
from scen_util import HUGE, stats_dict


@scenario()
def disabled_returns_none(t):
    import rmm.statistics as s

    t.call("get", s.get_statistics, conv=stats_dict)
    t.call("push", s.push_statistics, conv=stats_dict)
    t.call("pop", s.pop_statistics, conv=stats_dict)


@scenario()
def enable_is_idempotent(t):
    import rmm
    import rmm.statistics as s

    before = rmm.mr.get_current_device_resource()
    s.enable_statistics()
    first = rmm.mr.get_current_device_resource()
    s.enable_statistics()
    t.rec("type", type(first).__name__)
    t.rec("same_after_second", rmm.mr.get_current_device_resource() is first)
    t.rec("upstream_is_before", first.get_upstream() is before)
    t.rec("get", stats_dict(s.get_statistics()))


def _counts_after(sizes, free_all):
    def run(t):
        import rmm
        import rmm.statistics as s

        s.enable_statistics()
        bufs = []
        for n in sizes:
            b = t.call(f"buf{n}", rmm.DeviceBuffer, size=n, conv=lambda b: b.size)
            if b is not None:
                bufs.append(b)
            t.rec(f"after{n}", stats_dict(s.get_statistics()))
        if free_all:
            bufs.clear()
            import gc

            gc.collect()
        t.rec("end", stats_dict(s.get_statistics()))

    return run


for _k, _sizes in {"zero": [0], "zero_twice": [0, 0], "small": [1, 2, 3], "mixed": [0, 10, 1000,
                   1 << 20], "huge": [10, HUGE, 20]}.items():
    for _free in (False, True):
        register(_counts_after(_sizes, _free), __name__, f"counts/{_k}/free={_free}")


@scenario()
def push_pop_sequence(t):
    import rmm
    import rmm.statistics as s

    s.enable_statistics()
    a = rmm.DeviceBuffer(size=100)
    t.rec("push1", stats_dict(s.push_statistics()))
    b = rmm.DeviceBuffer(size=200)
    t.rec("push2", stats_dict(s.push_statistics()))
    c = rmm.DeviceBuffer(size=300)
    del a
    t.rec("get_l2", stats_dict(s.get_statistics()))
    t.rec("pop2", stats_dict(s.pop_statistics()))
    del b
    t.rec("pop1", stats_dict(s.pop_statistics()))
    t.call("pop_last", s.pop_statistics, msg=True, conv=stats_dict)
    t.rec("get_end", stats_dict(s.get_statistics()))
    del c


@scenario()
def context_when_disabled(t):
    import rmm
    import rmm.statistics as s

    before = rmm.mr.get_current_device_resource()
    with s.statistics():
        t.rec("inside_type", type(rmm.mr.get_current_device_resource()).__name__)
        b = rmm.DeviceBuffer(size=1000)
        t.rec("inside", stats_dict(s.get_statistics()))
        del b
    t.rec("restored", rmm.mr.get_current_device_resource() is before)
    t.rec("after", stats_dict(s.get_statistics()))


@scenario()
def context_when_enabled(t):
    import rmm
    import rmm.statistics as s

    s.enable_statistics()
    top = rmm.mr.get_current_device_resource()
    x = rmm.DeviceBuffer(size=50)
    with s.statistics():
        t.rec("same_top", rmm.mr.get_current_device_resource() is top)
        b = rmm.DeviceBuffer(size=1000)
        t.rec("inside", stats_dict(s.get_statistics()))
        del b
    t.rec("after", stats_dict(s.get_statistics()))
    del x


@scenario()
def context_nested(t):
    import rmm
    import rmm.statistics as s

    with s.statistics():
        a = rmm.DeviceBuffer(size=10)
        with s.statistics():
            b = rmm.DeviceBuffer(size=20)
            t.rec("inner", stats_dict(s.get_statistics()))
            del b
        t.rec("outer", stats_dict(s.get_statistics()))
        del a
    t.rec("after", stats_dict(s.get_statistics()))


@scenario()
def context_resource_changed(t):
    import rmm
    import rmm.statistics as s

    def body():
        with s.statistics():
            rmm.mr.set_current_device_resource(rmm.mr.CudaMemoryResource())

    t.call("changed", body, msg=True)
    t.rec("after_type", type(rmm.mr.get_current_device_resource()).__name__)


@scenario()
def context_exception_inside(t):
    import rmm
    import rmm.statistics as s

    before = rmm.mr.get_current_device_resource()

    def body():
        with s.statistics():
            raise KeyError("inside")

    t.call("raises", body)
    t.rec("restored", rmm.mr.get_current_device_resource() is before)


@scenario()
def profiler_decorator(t):
    import rmm
    import rmm.statistics as s

    records = s.ProfilerRecords()

    @s.profiler(records=records)
    def f(n):
        return rmm.DeviceBuffer(size=n).size

    t.rec("disabled_call", f(100))
    t.rec("records_disabled", len(records.records))
    s.enable_statistics()
    t.rec("call1", f(100))
    t.rec("call2", f(300))
    recs = records.records
    t.rec("n_records", len(recs))
    (name, rec), = recs.items()
    t.rec("name_ends", name.split("(")[-1])
    t.rec("name_has_line", ":" in name)
    t.rec("record", {"num_calls": rec.num_calls, "memory_total": rec.memory_total,
                     "memory_peak": rec.memory_peak})
    t.rec("wrapped_name", f.__name__)


@scenario()
def profiler_context(t):
    import rmm
    import rmm.statistics as s

    records = s.ProfilerRecords()
    s.enable_statistics()
    with s.profiler(records=records, name="block"):
        a = rmm.DeviceBuffer(size=64)
        b = rmm.DeviceBuffer(size=128)
        del a
    with s.profiler(records=records, name="block"):
        c = rmm.DeviceBuffer(size=1000)
    with s.profiler(records=records, name="other"):
        pass
    t.rec("records", {k: [v.num_calls, v.memory_total, v.memory_peak]
                      for k, v in sorted(records.records.items())})
    t.rec("report_peak", records.report())
    t.rec("report_calls", records.report(ordered_by="num_calls"))
    t.rec("report_total", records.report(ordered_by="memory_total"))
    t.call("report_bad", records.report, ordered_by="nope", msg=True)
    t.rec("str_is_report", str(records) == records.report())
    t.rec("repr_starts", repr(records).split("(")[0])
    del b, c


@scenario()
def profiler_no_name_context(t):
    import rmm.statistics as s

    def body():
        with s.profiler():
            pass

    t.call("no_name", body, msg=True)
    t.rec("empty_report", s.ProfilerRecords().report())


@scenario()
def profiler_default_records(t):
    import rmm
    import rmm.statistics as s

    s.enable_statistics()
    with s.profiler(name="default-block"):
        b = rmm.DeviceBuffer(size=512)
        del b
    recs = s.default_profiler_records.records
    t.rec("has_block", "default-block" in recs)
    r = recs.get("default-block")
    t.rec("block", [r.num_calls, r.memory_total, r.memory_peak] if r else None)


@scenario(needs_gpus=0)
def profiler_records_add(t):
    import rmm.statistics as s

    r = s.ProfilerRecords()
    st = s.Statistics(current_bytes=1, current_count=1, peak_bytes=70, peak_count=2,
                      total_bytes=90, total_count=3)
    r.add("x", st)
    r.add("x", st)
    r.add("y", s.Statistics(0, 0, 5, 1, 5, 1))
    t.rec("records", {k: [v.num_calls, v.memory_total, v.memory_peak]
                      for k, v in sorted(r.records.items())})
    t.rec("report", r.report())
    m = s.ProfilerRecords.MemoryRecord()
    t.rec("memory_record_default", [m.num_calls, m.memory_total, m.memory_peak])
    m.add(memory_total=3, memory_peak=2)
    t.rec("memory_record_added", [m.num_calls, m.memory_total, m.memory_peak])


@scenario(needs_gpus=0)
def statistics_dataclass(t):
    import rmm.statistics as s

    st = s.Statistics(1, 2, 3, 4, 5, 6)
    t.rec("repr", repr(st))
    t.rec("eq", st == s.Statistics(1, 2, 3, 4, 5, 6))
    t.call("missing_field", s.Statistics, 1, 2, conv=repr)


@scenario(needs_gpus=0)
def descriptive_name(t):
    import rmm.statistics as s

    fn = getattr(s, "_get_descriptive_name_of_object", None)
    t.rec("exists", fn is not None)
    if fn is None:
        return

    def sample():
        pass

    name = fn(sample)
    t.rec("ends", name.split("(")[-1])
    t.rec("has_this_file", __file__.rsplit("/", 1)[-1] in name)
