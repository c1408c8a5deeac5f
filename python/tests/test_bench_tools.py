"""The Python benchmarks' own tools (benches/python/): the timing loop, the CSV rows, the table,
and each script's command line. The measurements themselves need a GPU, torch and cupy: the lead
runs them with benches/python/gpu_run.sh."""

import csv
import io
import pathlib
import subprocess
import sys
import time
from contextlib import redirect_stdout

import pytest

BENCHES = pathlib.Path(__file__).resolve().parents[2] / "benches" / "python"
if not BENCHES.is_dir():
    pytest.skip(f"no {BENCHES} (the wheel's tests run without the repository)", allow_module_level=True)
sys.path.insert(0, str(BENCHES))

import bench_common as bc  # noqa: E402
import table  # noqa: E402


def test_loop_us_times_every_iteration():
    calls = []

    def body(n):
        calls.append(n)

    med, lo, hi = bc.loop_us(body, budget_s=0.05, runs=5)
    assert calls[0] == 10  # the warm-up
    timed = calls[-5:]
    assert len(set(timed)) == 1 and timed[0] >= 1  # five runs of one calibrated count
    assert 0 <= lo <= med <= hi


def test_interleaved_loops_take_turns_with_one_count():
    events = []

    def case(label, cost):
        def body(n):
            events.append((label, n))
            t = time.perf_counter() + cost * n
            while time.perf_counter() < t:
                pass
        return (lambda: events.append((label, "select")), body)

    results = bc.interleaved_loops_us({"a": case("a", 2e-6), "b": case("b", 6e-6)}, budget_s=0.06, runs=4)
    timed = [(l, n) for l, n in events if n != "select" and n != 10][-8:]
    assert {n for _, n in timed} == {timed[0][1]}  # one iteration count for every timed run
    assert [l for l, _ in timed] == ["a", "b", "b", "a", "a", "b", "b", "a"]  # rounds rotate the order
    # each timed run follows a select of its own case
    for i, (label, n) in enumerate(events):
        if n != "select":
            assert (label, "select") in events[:i]
    assert results["a"][0] < results["b"][0]
    assert all(lo <= med <= hi for med, lo, hi in results.values())


def test_loop_us_waits_for_the_device_after_each_run():
    events = []
    bc.loop_us(lambda n: events.append("body"), budget_s=0.01, runs=3, sync=lambda: events.append("sync"))
    # every call of the body is followed by a sync before the next one
    assert all(events[i + 1] == "sync" for i, e in enumerate(events) if e == "body")


def test_rows_are_csv_with_five_fields():
    out = io.StringIO()
    with redirect_stdout(out):
        bc.row("rmm-rs", "device_buffer", "bytes=8", 1.25, "us_per_iter")
        bc.fail("rmm-rs", "device_buffer", "bytes=8", MemoryError("out of memory, really"))
    rows = list(csv.reader(out.getvalue().splitlines()))
    assert rows[0] == ["rmm-rs", "device_buffer", "bytes=8", "1.25", "us_per_iter"]
    assert rows[1][:4] == ["rmm-rs", "device_buffer", "bytes=8", "error"] and len(rows[1]) == 5
    assert "MemoryError" in rows[1][4]


def test_table_puts_implementations_side_by_side(tmp_path):
    src = tmp_path / "r.csv"
    src.write_text(
        "# a comment\nimpl,workload,param,value,unit\n"
        "rmm-rs,empty_loop,shape=100x4,5.0,us_per_iter\n"
        "rmm-26.10,empty_loop,shape=100x4,10.0,us_per_iter\n"
        "torch-native,empty_loop,shape=100x4,4.0,us_per_iter\n"
        "rmm-rs,cupy_empty,bytes=8,error,RuntimeError: boom\n")
    cells, impls = table.read([str(src)])
    assert impls == ["rmm-rs", "rmm-26.10", "torch-native"]
    head, rows = table.table(cells, impls, main_only=True)
    by = {(r[0], r[1]): dict(zip(head, r)) for r in rows}
    loop = by[("empty_loop", "shape=100x4")]
    assert loop["ratio"] == "0.50" and loop["vs base"] == "1.25"
    assert by[("cupy_empty", "bytes=8")]["rmm-rs"].startswith("error: RuntimeError")


@pytest.mark.parametrize("script", ["torch_bench.py", "cupy_bench.py", "device_buffer_bench.py"])
def test_scripts_take_the_common_options(script):
    out = subprocess.run([sys.executable, str(BENCHES / script), "--help"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for opt in ("--impl-name", "--budget", "--runs"):
        assert opt in out.stdout


def test_torch_bench_offers_an_allocation_log():
    out = subprocess.run([sys.executable, str(BENCHES / "torch_bench.py"), "--help"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "--log FILE" in out.stdout


def test_dask_bench_offers_the_allocator_timer():
    out = subprocess.run([sys.executable, str(BENCHES / "dask_bench.py"), "--help"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "--alloc-time" in out.stdout


def test_alloc_timer_times_allocations_and_frees_on_their_threads(monkeypatch):
    """alloc_timer over a stand-in CuPy: every allocation is counted and timed, every block is
    freed when CuPy drops the pointer (the free timed on the thread that drops it), and reset
    starts the sums again."""
    import threading
    import types

    import alloc_timer

    freed = []

    class Memory:
        def __init__(self, ptr, size, owner, device_id):
            self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id

    class Pointer:
        def __init__(self, mem, offset):
            self.mem, self.ptr, self.device_id = mem, mem.ptr + offset, mem.device_id

    class Block:
        def __init__(self, n):
            self.ptr = 0x1000 + n if n else 0

        def __del__(self):
            freed.append(self.ptr)

    def slow_alloc(n):
        time.sleep(0.002)
        block = Block(n)
        return Pointer(Memory(block.ptr, n, block, 0), 0)

    current = [slow_alloc]
    cuda = types.SimpleNamespace(
        get_allocator=lambda: current[0],
        set_allocator=lambda f: current.__setitem__(0, f),
        UnownedMemory=Memory,
        MemoryPointer=Pointer,
    )
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=cuda))
    worker = types.SimpleNamespace()
    alloc_timer.install(worker)
    alloc_timer.install(worker)  # once per process: a second call wraps nothing again
    held = [current[0](n) for n in (256, 512, 1024)]
    assert [p.ptr for p in held] == [0x1100, 0x1200, 0x1400]
    first = alloc_timer.report(worker)
    assert first["calls"] == 3 and first["alloc_s"] >= 0.006 and first["free_s"] == 0 and not freed
    done = threading.Thread(target=held.clear)  # the blocks are freed on another thread
    done.start()
    done.join()
    assert sorted(freed) == [0x1100, 0x1200, 0x1400]
    after = alloc_timer.report(worker)
    assert after["calls"] == 3 and after["free_s"] > 0 and after["threads"] == 2
    alloc_timer.reset(worker)
    assert alloc_timer.report(worker) == {"alloc_s": 0.0, "free_s": 0.0, "calls": 0, "threads": 0}
