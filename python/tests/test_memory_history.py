"""Allocation history and PyTorch-format snapshots (``rmm.memory``, ``HistoryResourceAdaptor``).

Host tests run a pool over host memory: nothing recorded while off, the ring's bound, many
threads, the pickle's layout (the keys ``torch.cuda._memory_viz`` and its viewer read, checked
here without PyTorch), the dump on out-of-memory, and the module functions with a stand-in
current resource. The GPU tests run a PyTorch training loop with ``rmm_torch_allocator`` over a
pool, render the snapshot with ``torch.cuda._memory_viz`` and compare its numbers with the pool's.
"""

import json
import os
import pickle
import subprocess
import sys
import textwrap
import threading

import pytest

import rmm
import rmm.memory
import rmm.pylibrmm.memory_resource as mr_module
from rmm.pylibrmm.memory_resource import HistoryResourceAdaptor, PoolMemoryResource

MIB = 1 << 20
SEGMENT_KEYS = {
    "device", "address", "total_size", "allocated_size", "active_size", "requested_size",
    "stream", "segment_type", "segment_pool_id", "is_expandable", "frames", "blocks",
}
BLOCK_KEYS = {"address", "size", "requested_size", "state", "frames"}
EVENT_KEYS = {"action", "addr", "size", "stream", "time_us", "frames"}


@pytest.fixture
def pool(host_mr):
    return PoolMemoryResource(host_mr, initial_pool_size=4 * MIB)


@pytest.fixture
def history(pool):
    return HistoryResourceAdaptor(pool, device=0)


def check_layout(snap):
    """The structure ``torch.cuda.memory._snapshot()`` returns, as far as the viewer reads it."""
    assert {"segments", "device_traces", "allocator_settings"} <= set(snap)
    for seg in snap["segments"]:
        assert set(seg) == SEGMENT_KEYS
        assert sum(b["size"] for b in seg["blocks"]) == seg["total_size"]
        address = seg["address"]
        for b in seg["blocks"]:
            assert set(b) == BLOCK_KEYS
            assert b["address"] == address  # the viewer recomputes addresses by adding sizes
            address += b["size"]
            assert b["state"] in ("active_allocated", "inactive")
        active = [b for b in seg["blocks"] if b["state"] == "active_allocated"]
        assert seg["allocated_size"] == sum(b["size"] for b in active)
        assert seg["requested_size"] == sum(b["requested_size"] for b in active)
    assert isinstance(snap["device_traces"], list)
    for trace in snap["device_traces"]:
        for e in trace:
            assert EVENT_KEYS <= set(e)
            for f in e["frames"]:
                assert set(f) == {"filename", "line", "name"}


def test_nothing_is_recorded_until_asked(history):
    assert not history.is_recording
    p = history.allocate(1000)
    history.deallocate(p, 1000)
    assert history.history_length == 0


def test_snapshot_round_trips_through_pickle_with_stacks(history):
    history.record_history(max_entries=100, stacks=True)
    a = history.allocate(1000)
    b = history.allocate(5000)
    history.deallocate(a, 1000)
    snap = pickle.loads(history.snapshot_pickle())
    check_layout(snap)
    trace = snap["device_traces"][0]
    assert [e["action"] for e in trace] == ["alloc", "alloc", "free_requested", "free_completed"]
    assert [e["addr"] for e in trace] == [a, b, a, a]
    assert trace[0]["frames"][0]["name"] == "test_snapshot_round_trips_through_pickle_with_stacks"
    assert trace[0]["time_us"] <= trace[-1]["time_us"]
    active = [blk for seg in snap["segments"] for blk in seg["blocks"] if blk["state"] == "active_allocated"]
    assert [(blk["address"], blk["requested_size"], blk["size"]) for blk in active] == [(b, 5000, 5120)]
    assert active[0]["frames"][0]["name"] == "test_snapshot_round_trips_through_pickle_with_stacks"
    history.deallocate(b, 5000)


def test_the_ring_keeps_the_newest_events(history):
    with pytest.raises(ValueError, match="max_entries"):
        history.record_history(max_entries=0)
    history.record_history(max_entries=3)
    for n in (256, 512, 768):
        history.deallocate(history.allocate(n), n)
    assert history.history_length == 3
    trace = pickle.loads(history.snapshot_pickle())["device_traces"][0]
    assert [(e["action"], e["size"]) for e in trace] == [
        ("free_requested", 512), ("free_completed", 512), ("alloc", 768),
        ("free_requested", 768), ("free_completed", 768),
    ]
    assert pickle.loads(history.snapshot_pickle())["allocator_settings"]["dropped_entries"] == 3
    history.record_history(False, clear_history=True)
    assert history.history_length == 0 and not history.is_recording


def test_threads_record_every_event(history):
    history.record_history(max_entries=1 << 20)
    threads, rounds = 8, 300

    def work(t):
        for i in range(rounds):
            n = 256 * (1 + (i + t) % 5)
            history.deallocate(history.allocate(n), n)

    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert history.history_length == threads * rounds * 2
    live = {}
    for e in pickle.loads(history.snapshot_pickle())["device_traces"][0]:
        if e["action"] == "alloc":
            assert e["addr"] not in live
            live[e["addr"]] = e["size"]
        elif e["action"] == "free_completed":
            assert live.pop(e["addr"]) == e["size"]
    assert live == {}


def test_out_of_memory_dumps_the_snapshot_and_the_map(host_mr, tmp_path):
    capped = HistoryResourceAdaptor(
        PoolMemoryResource(host_mr, initial_pool_size=MIB, maximum_pool_size=2 * MIB), device=0)
    capped.record_history(max_entries=100)
    capped.dump_on_oom(str(tmp_path))
    with pytest.raises(MemoryError) as info:
        capped.allocate(4 * MIB)
    message = str(info.value)
    files = sorted(os.listdir(tmp_path))
    assert [f.rsplit(".", 1)[1] for f in files] == ["pickle", "svg"], files
    for f in files:
        assert str(tmp_path / f) in message, message
    snap = pickle.load(open(tmp_path / files[0], "rb"))
    check_layout(snap)
    assert snap["device_traces"][0][-1]["action"] == "oom"
    assert snap["device_traces"][0][-1]["size"] == 4 * MIB
    assert (tmp_path / files[1]).read_text().startswith("<svg")


@pytest.fixture
def current(host_mr, monkeypatch):
    """A stand-in current device resource (a pool over host memory), settable through rmm.mr."""
    slot = {"mr": PoolMemoryResource(host_mr, initial_pool_size=4 * MIB)}
    for module in (mr_module, rmm.mr):
        monkeypatch.setattr(module, "get_current_device_resource", lambda: slot["mr"])
        monkeypatch.setattr(module, "set_current_device_resource", lambda mr: slot.update(mr=mr))
    return slot


def test_module_functions_mirror_torch_cuda_memory(current, tmp_path):
    pool = current["mr"]
    rmm.memory._record_memory_history(max_entries=1000)
    wrapped = current["mr"]
    assert isinstance(wrapped, HistoryResourceAdaptor) and wrapped.upstream_mr is pool
    rmm.memory._record_memory_history(max_entries=1000)  # again: not wrapped twice
    assert current["mr"] is wrapped
    p = wrapped.allocate(3000)
    snap = rmm.memory._snapshot()
    check_layout(snap)
    assert snap["device_traces"][0][0]["frames"][0]["name"] == "test_module_functions_mirror_torch_cuda_memory"
    assert rmm.memory.memory_snapshot() == snap["segments"]
    path = tmp_path / "snapshot.pickle"
    rmm.memory._dump_snapshot(str(path))
    assert pickle.load(open(path, "rb"))["segments"] == snap["segments"]
    rmm.memory._record_memory_history(enabled=None)
    assert not wrapped.is_recording
    wrapped.deallocate(p, 3000)
    assert len(rmm.memory._snapshot()["device_traces"][0]) == 1  # kept, nothing added
    with pytest.raises(ValueError):
        rmm.memory._record_memory_history(enabled="sometimes")


def test_a_pool_without_history_still_shows_its_segments(current):
    p = current["mr"].allocate(10_000)
    snap = rmm.memory._snapshot()
    check_layout(snap)
    assert snap["device_traces"] == [[]]
    active = [b for s in snap["segments"] for b in s["blocks"] if b["state"] == "active_allocated"]
    assert [(b["address"], b["requested_size"]) for b in active] == [(p, 10_000)]
    current["mr"].deallocate(p, 10_000)


# --- PyTorch on a GPU: the viewer renders our file, the numbers match the pool's ---------------

TRAIN_WITH_HISTORY = """
import glob, json, os, pickle, sys
import torch
import rmm.memory
import rmm.pylibrmm.memory_resource as mr
from rmm.allocators.torch import rmm_torch_allocator
from torch.cuda import _memory_viz as viz

out_dir = sys.argv[1]
pool = mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=64 << 20)
stats = mr.StatisticsResourceAdaptor(pool)
mr.set_current_device_resource(stats)
torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
rmm.memory._record_memory_history(max_entries=100_000)

torch.manual_seed(0)
x = torch.randn(4096, 256, device="cuda")
y = torch.randn(4096, 1, device="cuda")
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1)).cuda()
opt = torch.optim.Adam(model.parameters())
for step in range(20):
    idx = torch.randint(0, 4096, (512,), device="cuda")
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x[idx]), y[idx])
    loss.backward()
    opt.step()
torch.cuda.synchronize()

snap = rmm.memory._snapshot()
# The pool's own numbers, read at the same moment (nothing allocates in between).
stats_bytes = stats.allocation_counts.current_bytes
stats_count = stats.allocation_counts.current_count
pool_size = pool.pool_size()
path = os.path.join(out_dir, "train.pickle")
rmm.memory._dump_snapshot(path)
loaded = pickle.load(open(path, "rb"))
trace_html = viz.trace_plot(loaded)
segment_html = viz.segment_plot(loaded)
summary = viz.segsum(loaded)          # asserts that every segment's blocks add up
listing = viz.trace(loaded)
active = [b for s in snap["segments"] for b in s["blocks"] if b["state"] == "active_allocated"]
trace = snap["device_traces"][0]
with open(os.path.join(out_dir, "trace_plot.html"), "w") as f:
    f.write(trace_html)
with open(os.path.join(out_dir, "segment_plot.html"), "w") as f:
    f.write(segment_html)

# Dump on out of memory, through PyTorch: a capped pool that cannot hold 1 GiB.
capped = mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=32 << 20, maximum_pool_size=256 << 20)
mr.set_current_device_resource(capped)
oom_dir = os.path.join(out_dir, "oom")
os.makedirs(oom_dir)
rmm.memory._record_memory_history(max_entries=1000, dump_on_oom=oom_dir)
try:
    torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    oom = None
except Exception as e:
    oom = f"{type(e).__name__}: {e}"
print(json.dumps({
    "trace_html": len(trace_html), "segment_html": len(segment_html),
    "segments": len(snap["segments"]), "active_blocks": len(active),
    "active_requested": sum(b["requested_size"] for b in active),
    "segment_total": sum(s["total_size"] for s in snap["segments"]),
    "segment_allocated": sum(s["allocated_size"] for s in snap["segments"]),
    "stats_bytes": stats_bytes, "stats_count": stats_count, "pool_size": pool_size,
    "events": len(trace), "actions": sorted({e["action"] for e in trace}),
    "segsum_lines": len(summary.splitlines()), "trace_lines": len(listing.splitlines()),
    "oom": oom, "oom_files": sorted(os.path.basename(p) for p in glob.glob(oom_dir + "/*")),
}))
"""


def test_torch_training_snapshot_renders_and_matches_the_pool(gpu, tmp_path):
    pytest.importorskip("torch")
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(TRAIN_WITH_HISTORY), str(tmp_path)],
        cwd=os.path.dirname(__file__),  # not python/, whose rmm/ has no _native
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    print(
        f"snapshot: {r['segments']} segments, {r['active_blocks']} active blocks, "
        f"{r['active_requested']} bytes active, {r['segment_total']} reserved; "
        f"trace_plot HTML {r['trace_html']} bytes, segment_plot HTML {r['segment_html']} bytes; "
        f"{r['events']} events {r['actions']}; OOM: {r['oom']} -> {r['oom_files']}"
    )
    assert r["trace_html"] > 10_000 and r["segment_html"] > 10_000
    assert r["segsum_lines"] > 3 and r["trace_lines"] > 3
    # A 0-byte request counts as an allocation in the statistics but takes no block.
    assert 0 < r["active_blocks"] <= r["stats_count"]
    assert r["active_requested"] == r["stats_bytes"]
    assert r["segment_total"] == r["pool_size"]
    assert r["segment_allocated"] >= r["active_requested"]
    assert {"alloc", "free_requested", "free_completed"} <= set(r["actions"])
    assert [f.rsplit(".", 1)[1] for f in r["oom_files"]] == ["pickle", "svg"]
