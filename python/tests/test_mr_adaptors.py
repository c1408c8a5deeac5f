"""Limiting, tracking, logging, failure-callback and prefetch adaptors over host memory."""

import csv
import inspect
import os

import pytest

import rmm
import rmm.mr as mr


def test_limiting(host_mr):
    lim = mr.LimitingResourceAdaptor(host_mr, allocation_limit=4096)
    assert lim.upstream_mr is host_mr
    assert lim.get_allocation_limit() == 4096
    p = lim.allocate(1000)
    assert lim.get_allocated_bytes() == 1024  # rounded up to the alignment, as RMM
    with pytest.raises(MemoryError):
        lim.allocate(4000)
    assert lim.get_allocated_bytes() == 1024  # a refused request changes nothing
    lim.deallocate(p, 1000)
    assert lim.get_allocated_bytes() == 0
    with pytest.raises(TypeError):
        mr.LimitingResourceAdaptor(host_mr)  # the limit is required


def test_tracking(host_mr):
    assert inspect.signature(mr.TrackingResourceAdaptor).parameters["capture_stacks"].default is False
    tr = mr.TrackingResourceAdaptor(host_mr)
    assert tr.upstream_mr is host_mr
    a, b = tr.allocate(100), tr.allocate(300)
    assert tr.get_allocated_bytes() == 400
    report = tr.get_outstanding_allocations_str()
    assert hex(a) in report and hex(b) in report
    tr.log_outstanding_allocations()
    tr.deallocate(a, 100)
    assert tr.get_allocated_bytes() == 300
    tr.deallocate(b, 300)
    assert tr.get_allocated_bytes() == 0
    assert hex(a) not in tr.get_outstanding_allocations_str()


def test_tracking_captures_stacks(host_mr):
    tr = mr.TrackingResourceAdaptor(host_mr, capture_stacks=True)
    p = tr.allocate(64)
    assert " B : callstack:\n#0 in " in tr.get_outstanding_allocations_str()
    tr.deallocate(p, 64)


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_logging_writes_csv(host_mr, tmp_path):
    log = mr.LoggingResourceAdaptor(host_mr, log_file_name=str(tmp_path / "rmm.csv"))
    name = log.get_file_name()
    assert os.path.isabs(name) and name.endswith(".dev0.csv")
    assert log.upstream_mr is host_mr
    p = log.allocate(1234)
    log.deallocate(p, 1234)
    log.flush()
    rows = _rows(name)
    assert rows[0] == ["Thread", "Time", "Action", "Pointer", "Size", "Stream"]
    assert [r[2] for r in rows[1:]] == ["allocate", "free"]
    assert [r[4] for r in rows[1:]] == ["1234", "1234"]


def test_logging_file_from_environment(host_mr, tmp_path, monkeypatch):
    monkeypatch.setenv("RMM_LOG_FILE", str(tmp_path / "env.txt"))
    log = mr.LoggingResourceAdaptor(host_mr)
    assert log.get_file_name() == str(tmp_path / "env.dev0.txt")
    log.flush()
    assert _rows(log.get_file_name())[0][0] == "Thread"


def test_logging_needs_a_file_name(host_mr, monkeypatch):
    monkeypatch.delenv("RMM_LOG_FILE", raising=False)
    with pytest.raises(ValueError, match="RMM_LOG_FILE"):
        mr.LoggingResourceAdaptor(host_mr)
    monkeypatch.setenv("RMM_LOG_FILE", "")
    with pytest.raises(ValueError):
        mr.LoggingResourceAdaptor(host_mr, None)


def test_failure_callback_retries_while_true(host_mr):
    lim = mr.LimitingResourceAdaptor(host_mr, 1024)
    held = [lim.allocate(1024)]
    calls = []

    def callback(nbytes):
        calls.append(nbytes)
        if held:  # free what blocks the request, then ask for a retry
            lim.deallocate(held.pop(), 1024)
            return True
        return False

    fc = mr.FailureCallbackResourceAdaptor(lim, callback)
    assert fc.upstream_mr is lim
    p = fc.allocate(512)
    assert calls == [512]
    with pytest.raises(MemoryError):
        fc.allocate(4096)  # callback frees nothing more and answers False
    assert calls == [512, 4096]
    fc.deallocate(p, 512)


def test_failure_callback_exceptions(host_mr):
    lim = mr.LimitingResourceAdaptor(host_mr, 256)

    def raises_value_error(nbytes):
        raise ValueError(f"callback failed for {nbytes}")

    def raises_memory_error(nbytes):
        raise MemoryError("callback out of memory")

    with pytest.raises(RuntimeError, match="callback failed for 1000"):
        mr.FailureCallbackResourceAdaptor(lim, raises_value_error).allocate(1000)
    with pytest.raises(MemoryError, match="callback out of memory"):
        mr.FailureCallbackResourceAdaptor(lim, raises_memory_error).allocate(1000)
    # A later failure with a callback answering False is the limiting adaptor's, in RMM's words.
    with pytest.raises(
        MemoryError,
        match="^std::bad_alloc: out_of_memory: Exceeded memory limit 256; Allocated bytes 0; Requested bytes 1000$",
    ):
        mr.FailureCallbackResourceAdaptor(lim, lambda n: False).allocate(1000)
    assert lim.get_allocated_bytes() == 0


def test_statistics_adaptor_stack(host_mr):
    st = mr.StatisticsResourceAdaptor(host_mr)
    p = st.allocate(100)
    before = st.push_counters()
    assert before.current_bytes == 100
    q = st.allocate(200)
    assert st.allocation_counts.current_bytes == 200
    popped = st.pop_counters()
    assert popped.total_bytes == 200
    assert st.allocation_counts.current_bytes == 300
    st.deallocate(q, 200)
    st.deallocate(p, 100)
    assert isinstance(before, rmm.statistics.Statistics)


def test_prefetch_over_host(host_mr):
    pre = mr.PrefetchResourceAdaptor(host_mr)
    assert pre.upstream_mr is host_mr
    assert isinstance(pre, mr.UpstreamResourceAdaptor)


def test_every_rmm_name_is_importable():
    for name in mr.__all__:
        assert hasattr(mr, name), name
    import rmm.pylibrmm.memory_resource as pmr

    for name in pmr.__all__:
        if name != "experimental":  # each package has its own module of that name, as in RMM
            assert getattr(pmr, name) is getattr(mr, name)
    assert "experimental" in pmr.__all__ and "experimental" in mr.__all__
    assert mr.experimental.__name__ == "rmm.mr.experimental"
    from rmm.mr.experimental import CudaAsyncManagedMemoryResource

    assert issubclass(CudaAsyncManagedMemoryResource, mr.DeviceMemoryResource)
    assert mr.LoggingResourceAdaptor.__module__ == "rmm.pylibrmm.memory_resource._memory_resource"
