"""rmm.statistics: counters, the statistics context, the profiler.

The functions read and set the current device's resource. Without a GPU there is no current
device, so most tests stand a per-test "current resource" in for the per-device table (the two
module functions statistics.py calls), over a host resource; the last tests use the real table
on a GPU.
"""

import threading

import pytest

import rmm
import rmm._native as native
import rmm.pylibrmm.memory_resource as mr_module
import rmm.statistics as st
from rmm.pylibrmm.memory_resource import StatisticsResourceAdaptor


@pytest.fixture
def current(host_mr, monkeypatch):
    """A stand-in current device resource: a host resource, settable through the module."""
    slot = {"mr": host_mr}
    for module in (mr_module, rmm.mr):  # rmm.statistics calls rmm.mr's, as RMM's does
        monkeypatch.setattr(module, "get_current_device_resource", lambda: slot["mr"])
        monkeypatch.setattr(module, "set_current_device_resource", lambda mr: slot.update(mr=mr))
    return slot


def allocate(n):
    """Allocate `n` bytes from the (stand-in) current resource; freed when collected."""
    return rmm.DeviceBuffer(size=n, mr=mr_module.get_current_device_resource())


def test_statistics_fields_match_rmm():
    s = st.Statistics(1, 2, 3, 4, 5, 6)
    assert (s.current_bytes, s.current_count, s.peak_bytes, s.peak_count) == (1, 2, 3, 4)
    assert (s.total_bytes, s.total_count) == (5, 6)
    with pytest.raises(TypeError):
        st.Statistics()  # RMM's dataclass has no defaults


def test_disabled_statistics_are_none(current):
    assert st.get_statistics() is None
    assert st.push_statistics() is None
    assert st.pop_statistics() is None
    assert current["mr"] is not None and not isinstance(current["mr"], StatisticsResourceAdaptor)


def test_enable_wraps_once(current, host_mr):
    st.enable_statistics()
    wrapped = current["mr"]
    assert isinstance(wrapped, StatisticsResourceAdaptor) and wrapped.upstream_mr is host_mr
    st.enable_statistics()
    assert current["mr"] is wrapped
    a = allocate(1000)
    stats = st.get_statistics()
    assert (stats.current_bytes, stats.current_count, stats.total_bytes) == (1000, 1, 1000)
    del a
    stats = st.get_statistics()
    assert (stats.current_bytes, stats.peak_bytes, stats.total_count) == (0, 1000, 1)


def test_push_pop_nest_and_merge(current):
    st.enable_statistics()
    keep = allocate(1000)
    before = st.push_statistics()
    assert before.current_bytes == 1000
    assert st.get_statistics().current_bytes == 0
    tmp = allocate(2000)
    del tmp
    inner = st.pop_statistics()
    assert (inner.current_bytes, inner.peak_bytes, inner.total_bytes) == (0, 2000, 2000)
    outer = st.get_statistics()
    # The popped frame's traffic counts in the outer frame: its peak is the outer value plus
    # the inner peak.
    assert (outer.current_bytes, outer.peak_bytes, outer.total_bytes) == (1000, 3000, 3000)
    assert outer.total_count == 2
    del keep


def test_pop_of_the_last_frame_is_an_index_error(current):
    st.enable_statistics()
    with pytest.raises(IndexError):
        st.pop_statistics()
    assert st.get_statistics().current_count == 0


def test_statistics_context_installs_and_restores(current, host_mr):
    with st.statistics():
        assert isinstance(current["mr"], StatisticsResourceAdaptor)
        a = allocate(512)
        assert st.get_statistics().current_bytes == 512
        del a
    assert current["mr"] is host_mr
    assert st.get_statistics() is None


def test_statistics_context_pushes_when_enabled(current):
    st.enable_statistics()
    adaptor = current["mr"]
    keep = allocate(100)
    with st.statistics():
        assert current["mr"] is adaptor
        assert st.get_statistics().current_bytes == 0
        tmp = allocate(300)
        del tmp
    assert current["mr"] is adaptor
    after = st.get_statistics()
    assert (after.current_bytes, after.total_bytes) == (100, 400)
    del keep


def test_statistics_context_rejects_a_changed_resource(current, host_mr):
    with pytest.raises(ValueError, match="changed"):
        with st.statistics():
            current["mr"] = host_mr


def test_profiler_decorator_names_and_counts(current):
    records = st.ProfilerRecords()
    st.enable_statistics()

    @st.profiler(records=records)
    def work(n):
        a = allocate(n)
        b = allocate(n)
        del a, b
        return n

    assert work(1000) == 1000 and work(3000) == 3000
    (name,) = records.records
    assert name.endswith("(test_profiler_decorator_names_and_counts.<locals>.work)")
    assert __file__ in name
    rec = records.records[name]
    assert (rec.num_calls, rec.memory_total, rec.memory_peak) == (2, 8000, 6000)
    assert work.__name__ == "work"  # functools.wraps


def test_profiler_context_needs_a_name(current):
    st.enable_statistics()
    with pytest.raises(ValueError, match="name"):
        with st.profiler():
            pass


def test_profiler_context_records_under_its_name(current):
    records = st.ProfilerRecords()
    st.enable_statistics()
    for n in (100, 700):
        with st.profiler(records=records, name="block"):
            a = allocate(n)
            del a
    with st.profiler(records=records, name="tiny"):
        a = allocate(10)
        del a
    block = records.records["block"]
    assert (block.num_calls, block.memory_total, block.memory_peak) == (2, 800, 700)
    report = records.report()
    assert report.index("block") < report.index("tiny")  # ordered by peak, largest first
    assert "ncalls" in report and "memory_peak" in report
    by_calls = records.report(ordered_by="num_calls").splitlines()
    assert by_calls[-2].endswith("block") and by_calls[-1].endswith("tiny")
    assert str(records) == report
    assert repr(records).startswith("ProfilerRecords(")


def test_profiler_without_statistics_records_nothing(current):
    records = st.ProfilerRecords()

    @st.profiler(records=records)
    def work():
        return 7

    assert work() == 7
    with st.profiler(records=records, name="x"):
        pass
    assert records.records == {}
    assert "No data" in records.report()


def test_default_records_are_shared():
    assert isinstance(st.default_profiler_records, st.ProfilerRecords)


def test_records_add_is_thread_safe():
    records = st.ProfilerRecords()
    data = st.Statistics(0, 0, 5, 1, 10, 1)

    def add_many():
        for _ in range(2000):
            records.add("f", data)

    threads = [threading.Thread(target=add_many) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rec = records.records["f"]
    assert (rec.num_calls, rec.memory_total, rec.memory_peak) == (8000, 80000, 5)


@pytest.fixture
def restore_current_resource(gpu):
    """Puts the current device's resource back after a test that changes it."""
    before = mr_module.get_current_device_resource()
    yield
    mr_module.set_current_device_resource(before)


def test_statistics_over_the_device_table(restore_current_resource):
    base = mr_module.get_current_device_resource()
    with st.statistics():
        adaptor = mr_module.get_current_device_resource()
        assert isinstance(adaptor, StatisticsResourceAdaptor) and adaptor.upstream_mr is base
        a = rmm.DeviceBuffer(size=1 << 20)
        assert st.get_statistics().current_bytes == 1 << 20
        del a
        assert st.get_statistics().current_bytes == 0
    assert mr_module.get_current_device_resource() is base


def test_profiler_over_the_device_table(restore_current_resource):
    records = st.ProfilerRecords()
    st.enable_statistics()

    @st.profiler(records=records)
    def work():
        a = rmm.DeviceBuffer(size=4096)
        del a

    work()
    (rec,) = records.records.values()
    assert (rec.num_calls, rec.memory_total, rec.memory_peak) == (1, 4096, 4096)


def test_resources_import_statistics_as_rmm_does():
    import rmm

    assert rmm.statistics is st and st.Statistics.__module__ == "rmm.statistics"
