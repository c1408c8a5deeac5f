"""The resource adaptors: limiting, tracking, statistics, logging, failure callback, prefetch,
callback resource — their counters and strings after sequences of allocations."""

import os
import shutil
import re

from oracle_lib import register, scenario
from scen_util import HUGE, make, ptr_facts, stats_dict, tmp_log_path

# ---------------------------------------------------------------------------------------------
# Limiting


def _limiting(limit, sizes):
    def run(t):
        import rmm

        mr = rmm.mr.LimitingResourceAdaptor(rmm.mr.CudaMemoryResource(), limit)
        t.call("limit", mr.get_allocation_limit)
        live = []
        for i, n in enumerate(sizes):
            p = t.call(f"alloc{i}:{n}", mr.allocate, n, conv=ptr_facts)
            t.call(f"allocated{i}", mr.get_allocated_bytes)
            if p is not None:
                live.append((p, n))
        for p, n in live:
            mr.deallocate(p, n)
            t.call(f"after_free:{n}", mr.get_allocated_bytes)

    return run


_LIMIT_CASES = {
    "exact": (4096, [4096, 1]),
    "unaligned": (1000, [1, 255, 256, 257, 500]),
    "zero_limit": (0, [0, 1]),
    "zero_sizes": (1024, [0, 0, 1024, 0]),
    "many_small": (10000, [100] * 30),
    "big": (1 << 24, [1 << 23, 1 << 22, 1 << 22, 1]),
    "over": (1 << 20, [(1 << 20) + 1, 1 << 20]),
    "huge_limit": ((1 << 64) - 1, [1 << 20, HUGE]),
}
for _k, (_lim, _sizes) in _LIMIT_CASES.items():
    register(_limiting(_lim, _sizes), __name__, f"limiting/{_k}")


@scenario()
def limiting_over_pool(t):
    import rmm

    pool = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), 1 << 20)
    mr = rmm.mr.LimitingResourceAdaptor(pool, 3000)
    a = t.call("a", mr.allocate, 1000, conv=ptr_facts)
    t.call("bytes_a", mr.get_allocated_bytes)
    b = t.call("b", mr.allocate, 1800, conv=ptr_facts)
    t.call("bytes_b", mr.get_allocated_bytes)
    t.call("c", mr.allocate, 300, conv=ptr_facts)
    for p, n in ((a, 1000), (b, 1800)):
        if p is not None:
            mr.deallocate(p, n)
    t.call("bytes_end", mr.get_allocated_bytes)


# ---------------------------------------------------------------------------------------------
# Tracking


_HEX = re.compile(r"0x[0-9a-fA-F]+")


def _outstanding_facts(s):
    lines = s.splitlines()
    return {"empty": s == "", "lines": len(lines), "ends_newline": s.endswith("\n"),
            "first_words": [_HEX.sub("0x...", w) for w in lines[0].split()[:3]] if lines else []}


def _tracking(sizes, capture_stacks):
    def run(t):
        import rmm

        mr = rmm.mr.TrackingResourceAdaptor(rmm.mr.CudaMemoryResource(), capture_stacks)
        t.call("bytes0", mr.get_allocated_bytes)
        t.call("str0", mr.get_outstanding_allocations_str)
        live = []
        for i, n in enumerate(sizes):
            p = t.call(f"alloc{i}:{n}", mr.allocate, n, conv=ptr_facts)
            if p is not None:
                live.append((p, n))
            t.call(f"bytes{i + 1}", mr.get_allocated_bytes)
        # With stacks, the text holds each implementation's own call stacks: only its start is
        # comparable.
        conv = _outstanding_facts if not capture_stacks else (
            lambda s: {"empty": s == "", "first_words": [_HEX.sub("0x...", w) for w in (s.splitlines() or [""])[0].split()[:3]]})
        t.call("str_live", mr.get_outstanding_allocations_str, conv=conv)
        t.call("log_outstanding", mr.log_outstanding_allocations)
        for p, n in live:
            mr.deallocate(p, n)
        t.call("bytes_end", mr.get_allocated_bytes)
        t.call("str_end", mr.get_outstanding_allocations_str)

    return run


for _cs in (False, True):
    for _k, _sizes in {"one": [1000], "zero": [0, 0], "mixed": [1, 256, 4096, 1 << 20],
                       "many": [128] * 20}.items():
        register(_tracking(_sizes, _cs), __name__, f"tracking/{_k}/stacks={_cs}")


@scenario()
def tracking_over_tracking(t):
    import rmm

    inner = rmm.mr.TrackingResourceAdaptor(rmm.mr.CudaMemoryResource())
    outer = rmm.mr.TrackingResourceAdaptor(inner)
    p = outer.allocate(1000)
    t.rec("outer", outer.get_allocated_bytes())
    t.rec("inner", inner.get_allocated_bytes())
    outer.deallocate(p, 1000)
    t.rec("outer_end", outer.get_allocated_bytes())
    t.rec("inner_end", inner.get_allocated_bytes())
    q = inner.allocate(500)
    t.call("free_untracked_via_outer", outer.deallocate, q, 500)
    t.rec("outer_after_untracked", outer.get_allocated_bytes())
    t.rec("inner_after_untracked", inner.get_allocated_bytes())
    t.call("inner_str_end", inner.get_outstanding_allocations_str, conv=_outstanding_facts)


@scenario()
def tracking_wrong_size_free(t):
    import rmm

    mr = rmm.mr.TrackingResourceAdaptor(rmm.mr.CudaMemoryResource())
    p = mr.allocate(1000)
    t.call("free_wrong_size", mr.deallocate, p, 999)
    t.rec("bytes_after", mr.get_allocated_bytes())
    t.call("str_after", mr.get_outstanding_allocations_str, conv=_outstanding_facts)


# ---------------------------------------------------------------------------------------------
# Statistics


def _statistics(sizes):
    def run(t):
        import rmm

        mr = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
        t.rec("counts0", stats_dict(mr.allocation_counts))
        t.rec("counts_type", type(mr.allocation_counts).__name__)
        live = []
        for i, n in enumerate(sizes):
            p = t.call(f"alloc{i}:{n}", mr.allocate, n, conv=ptr_facts)
            if p is not None:
                live.append((p, n))
            t.rec(f"counts{i + 1}", stats_dict(mr.allocation_counts))
        for p, n in live[::2]:
            mr.deallocate(p, n)
        t.rec("counts_half", stats_dict(mr.allocation_counts))
        for p, n in live[1::2]:
            mr.deallocate(p, n)
        t.rec("counts_end", stats_dict(mr.allocation_counts))

    return run


for _k, _sizes in {"zero_twice": [0, 0], "one": [1], "mixed": [0, 1, 255, 256, 4096, 1 << 20],
                   "huge_fails": [1000, HUGE, 10], "same": [512] * 8}.items():
    register(_statistics(_sizes), __name__, f"statistics/{_k}")


@scenario()
def statistics_push_pop(t):
    import rmm

    mr = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
    a = mr.allocate(100)
    t.rec("push1", stats_dict(mr.push_counters()))
    b = mr.allocate(200)
    t.rec("counts_l1", stats_dict(mr.allocation_counts))
    t.rec("push2", stats_dict(mr.push_counters()))
    c = mr.allocate(300)
    mr.deallocate(a, 100)
    t.rec("counts_l2", stats_dict(mr.allocation_counts))
    t.rec("pop2", stats_dict(mr.pop_counters()))
    t.rec("counts_after_pop2", stats_dict(mr.allocation_counts))
    mr.deallocate(b, 200)
    t.rec("pop1", stats_dict(mr.pop_counters()))
    t.rec("counts_after_pop1", stats_dict(mr.allocation_counts))
    t.call("pop_last", mr.pop_counters, msg=True, conv=stats_dict)
    t.call("pop_last_again", mr.pop_counters, msg=True, conv=stats_dict)
    mr.deallocate(c, 300)
    t.rec("counts_end", stats_dict(mr.allocation_counts))


@scenario()
def statistics_nested_adaptors(t):
    import rmm

    inner = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
    outer = rmm.mr.StatisticsResourceAdaptor(inner)
    p = outer.allocate(1000)
    q = inner.allocate(24)
    t.rec("outer", stats_dict(outer.allocation_counts))
    t.rec("inner", stats_dict(inner.allocation_counts))
    outer.deallocate(p, 1000)
    inner.deallocate(q, 24)
    t.rec("outer_end", stats_dict(outer.allocation_counts))
    t.rec("inner_end", stats_dict(inner.allocation_counts))


@scenario()
def statistics_value_type(t):
    import dataclasses

    import rmm

    mr = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
    s = mr.allocation_counts
    t.rec("is_dataclass", dataclasses.is_dataclass(s))
    t.rec("repr", repr(s))
    t.rec("eq_fresh", s == mr.allocation_counts)
    t.rec("module", type(s).__module__)
    t.call("fields", lambda: [f.name for f in dataclasses.fields(s)])
    t.call("asdict", dataclasses.asdict, s)


# ---------------------------------------------------------------------------------------------
# Logging


def _read_log(path):
    with open(path) as f:
        return f.read().splitlines()


def _logging(sizes):
    def run(t):
        import rmm

        base = tmp_log_path("oracle.csv")
        mr = rmm.mr.LoggingResourceAdaptor(rmm.mr.CudaMemoryResource(), log_file_name=base)
        name = mr.get_file_name()
        t.rec("file_name_is_str", isinstance(name, str))
        t.rec("file_basename", os.path.basename(name))
        t.rec("same_dir", os.path.dirname(name) == os.path.dirname(base))
        live = []
        for n in sizes:
            p = t.call(f"alloc:{n}", mr.allocate, n, conv=ptr_facts)
            if p is not None:
                live.append((p, n))
        for p, n in live:
            mr.deallocate(p, n)
        t.call("flush", mr.flush)
        lines = _read_log(name) if os.path.exists(name) else None
        t.rec("exists", lines is not None)
        if lines is None:
            return
        t.rec("header", lines[0] if lines else None)
        t.rec("line_count", len(lines))
        rows = [ln.split(",") for ln in lines[1:]]
        t.rec("fields_per_row", sorted({len(r) for r in rows}))
        header = lines[0].split(",") if lines else []
        if "Action" in header:
            ai = header.index("Action")
            t.rec("actions", [r[ai] for r in rows if len(r) > ai])
        if "Size" in header:
            si = header.index("Size")
            t.rec("sizes", [r[si] for r in rows if len(r) > si])

    return run


for _k, _sizes in {"none": [], "one": [1000], "mixed": [0, 1, 4096, 1 << 20],
                   "fails": [100, HUGE]}.items():
    register(_logging(_sizes), __name__, f"logging_adaptor/{_k}")


@scenario()
def logging_adaptor_names(t):
    import rmm

    cuda = rmm.mr.CudaMemoryResource()
    for stem in ["plain", "with.ext.csv", "dir.d/noext", "trailing."]:
        path = tmp_log_path(stem)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if "/" in stem:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        mr = t.call(stem, rmm.mr.LoggingResourceAdaptor, cuda, path,
                    conv=lambda m: os.path.basename(m.get_file_name()))
        del mr


@scenario()
def logging_adaptor_env(t):
    import rmm

    cuda = rmm.mr.CudaMemoryResource()
    old = os.environ.pop("RMM_LOG_FILE", None)
    try:
        t.call("no_name_no_env", rmm.mr.LoggingResourceAdaptor, cuda, msg=True,
               conv=lambda m: type(m).__name__)
        os.environ["RMM_LOG_FILE"] = ""
        t.call("empty_env", rmm.mr.LoggingResourceAdaptor, cuda, msg=True,
               conv=lambda m: type(m).__name__)
        path = tmp_log_path("env.txt")
        os.environ["RMM_LOG_FILE"] = path
        t.call("env", rmm.mr.LoggingResourceAdaptor, cuda,
               conv=lambda m: os.path.basename(m.get_file_name()))
        t.call("none_env", rmm.mr.LoggingResourceAdaptor, cuda, None,
               conv=lambda m: os.path.basename(m.get_file_name()))
    finally:
        os.environ.pop("RMM_LOG_FILE", None)
        if old is not None:
            os.environ["RMM_LOG_FILE"] = old
    t.call("bad_type", rmm.mr.LoggingResourceAdaptor, cuda, 42, conv=lambda m: type(m).__name__)
    # Both sides create the missing folders (RMM's Python layer does); remove them again, so that
    # tests run later on the same machine still find no such folder.
    existed = os.path.exists("/nonexistent-dir")
    try:
        t.call("bad_dir", rmm.mr.LoggingResourceAdaptor, cuda, "/nonexistent-dir/x/log.csv",
               conv=lambda m: type(m).__name__)
    finally:
        if not existed:
            shutil.rmtree("/nonexistent-dir", ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Failure callback


def _failure_callback(answers, upstream_limit, request):
    def run(t):
        import rmm

        calls = []

        def cb(nbytes):
            calls.append(nbytes)
            i = len(calls) - 1
            return answers[i] if i < len(answers) else False

        lim = rmm.mr.LimitingResourceAdaptor(rmm.mr.CudaMemoryResource(), upstream_limit)
        mr = rmm.mr.FailureCallbackResourceAdaptor(lim, cb)
        p = t.call("alloc", mr.allocate, request, conv=ptr_facts)
        t.rec("calls", calls)
        if p is not None:
            mr.deallocate(p, request)
        p = t.call("small", mr.allocate, 16, conv=ptr_facts)
        t.rec("calls_after_small", len(calls))
        if p is not None:
            mr.deallocate(p, 16)

    return run


for _k, (_ans, _lim, _req) in {
    "no_failure": ([], 1 << 20, 1000),
    "fail_once_no_retry": ([False], 1000, 2000),
    "retry_twice": ([True, True, False], 1000, 2000),
    "retry_five": ([True] * 5 + [False], 1000, 2000),
    "truthy_int": ([1, 0], 1000, 2000),
    "none_answer": ([None], 1000, 2000),
}.items():
    register(_failure_callback(_ans, _lim, _req), __name__, f"failure_callback/{_k}")


@scenario()
def failure_callback_frees_then_succeeds(t):
    import rmm

    lim = rmm.mr.LimitingResourceAdaptor(rmm.mr.CudaMemoryResource(), 4096)
    held = [lim.allocate(4096)]
    calls = []

    def cb(n):
        calls.append(n)
        if held:
            lim.deallocate(held.pop(), 4096)
            return True
        return False

    mr = rmm.mr.FailureCallbackResourceAdaptor(lim, cb)
    p = t.call("alloc", mr.allocate, 2048, conv=ptr_facts)
    t.rec("calls", calls)
    if p is not None:
        mr.deallocate(p, 2048)


@scenario()
def failure_callback_raises(t):
    import rmm

    def cb(n):
        raise KeyError("from callback")

    lim = rmm.mr.LimitingResourceAdaptor(rmm.mr.CudaMemoryResource(), 100)
    mr = rmm.mr.FailureCallbackResourceAdaptor(lim, cb)
    t.call("alloc", mr.allocate, 1000, msg=True, conv=ptr_facts)
    p = t.call("still_works", mr.allocate, 50, conv=ptr_facts)
    if p is not None:
        mr.deallocate(p, 50)


@scenario()
def failure_callback_constructor(t):
    import rmm

    F = rmm.mr.FailureCallbackResourceAdaptor
    cuda = rmm.mr.CudaMemoryResource()
    t.call("not_callable", F, cuda, 42, conv=lambda m: type(m).__name__)
    t.call("none_cb", F, cuda, None, conv=lambda m: type(m).__name__)
    t.call("kw", F, upstream_mr=cuda, callback=lambda n: False, conv=lambda m: type(m).__name__)
    t.call("missing", F, cuda, conv=lambda m: type(m).__name__)


# ---------------------------------------------------------------------------------------------
# Callback resource


@scenario()
def callback_resource_sequence(t):
    import rmm

    up = rmm.mr.CudaMemoryResource()
    log = []

    def alloc(n, stream):
        log.append(["alloc", n, type(stream).__name__, stream.is_default()])
        return up.allocate(n, stream)

    def dealloc(p, n, stream):
        log.append(["free", n, type(stream).__name__])
        up.deallocate(p, n, stream)

    mr = rmm.mr.CallbackMemoryResource(alloc, dealloc)
    for n in [0, 1, 1000]:
        p = t.call(f"alloc{n}", mr.allocate, n, conv=ptr_facts)
        if p is not None:
            t.call(f"free{n}", mr.deallocate, p, n)
    b = rmm.DeviceBuffer(size=300, mr=mr)
    del b
    t.rec("log", log)


@scenario()
def callback_resource_bad_returns(t):
    import rmm

    for label, ret in [("none", None), ("str", "x"), ("negative", -1), ("float", 1.5),
                       ("zero", 0), ("huge", 1 << 70)]:
        mr = rmm.mr.CallbackMemoryResource(lambda n, s, r=ret: r, lambda p, n, s: None)
        t.call(label, mr.allocate, 100, conv=lambda p: p if isinstance(p, int) and p in (0, -1)
               else ptr_facts(p))


@scenario()
def callback_resource_raises(t):
    import rmm

    def alloc(n, s):
        raise ValueError("alloc refused")

    def dealloc(p, n, s):
        raise ValueError("free refused")

    mr = rmm.mr.CallbackMemoryResource(alloc, dealloc)
    t.call("alloc", mr.allocate, 100, msg=True, conv=ptr_facts)
    # RMM's message names the method object at its address: the type alone is compared.
    t.call("free", mr.deallocate, 0, 100)

    def alloc_mem(n, s):
        raise MemoryError("no room")

    mr2 = rmm.mr.CallbackMemoryResource(alloc_mem, lambda p, n, s: None)
    t.call("alloc_memoryerror", mr2.allocate, 100, msg=True, conv=ptr_facts)
    t.call("buffer_memoryerror", rmm.DeviceBuffer, size=100, mr=mr2, msg=True,
           conv=lambda b: b.size)

    def alloc_kb(n, s):
        raise KeyboardInterrupt()

    mr3 = rmm.mr.CallbackMemoryResource(alloc_kb, lambda p, n, s: None)
    try:
        t.call("alloc_keyboardinterrupt", mr3.allocate, 100, conv=ptr_facts)
    except KeyboardInterrupt:
        t.rec("alloc_keyboardinterrupt", {"raises": "KeyboardInterrupt"})


@scenario()
def callback_resource_constructor(t):
    import rmm

    C = rmm.mr.CallbackMemoryResource
    t.call("not_callable", C, 1, 2, conv=lambda m: type(m).__name__)
    t.call("one_arg", C, lambda n, s: 0, conv=lambda m: type(m).__name__)
    t.call("kw", C, allocate_func=lambda n, s: 0, deallocate_func=lambda p, n, s: None,
           conv=lambda m: type(m).__name__)
    mr = C(lambda n: 0, lambda p, n, s: None)
    t.call("wrong_arity", mr.allocate, 10, conv=ptr_facts)


# ---------------------------------------------------------------------------------------------
# Prefetch


@scenario()
def prefetch_adaptor(t):
    import rmm

    for up in ["managed", "cuda"]:
        mr = rmm.mr.PrefetchResourceAdaptor(make(rmm, up))
        for n in [0, 100, 1 << 20]:
            p = t.call(f"{up}.alloc{n}", mr.allocate, n, conv=ptr_facts)
            if p is not None:
                mr.deallocate(p, n)
