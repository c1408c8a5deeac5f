#!/usr/bin/env python3
"""PyTorch through rmm's pool against PyTorch's own caching allocator.

    python benches/python/torch_bench.py                      # every mode, each in its own process
    python benches/python/torch_bench.py --mode rmm_pool --impl-name rmm-rs

Modes (PyTorch sets its allocator once per process, so each mode runs in a child process):
  native    PyTorch's caching allocator; rows labelled "torch-native".
  native_expandable  the same with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments that
            grow by mapping pages into a reserved range); rows labelled "torch-expandable".
  rmm_virtual_pool  rmm.mr.VirtualPoolMemoryResource() (rmm-rs only: a reserved range of the
            device's memory size, mapped in granules as it grows) set current, then the same
            allocator hook; rows labelled --impl-name plus "-virtual". Its peak is the bytes mapped
            (nothing is released during the run, so that is the high-water).
  rmm_pool  rmm.mr.PoolMemoryResource(StatisticsResourceAdaptor(CudaMemoryResource()),
            initial_pool_size=--initial-pool-size) set current, then
            torch.cuda.memory.change_current_allocator(rmm_torch_allocator); rows labelled by
            --impl-name (rmm-rs or rmm-26.10, whichever ``rmm`` PYTHONPATH finds).

Allocation history (--history, comma separated; each value runs every mode once more):
  off       nothing recorded (the default).
  on        history recorded without stacks: rmm.memory._record_memory_history(context=None) over
            rmm's modes, torch.cuda.memory._record_memory_history(context=None) over the native
            ones; rows labelled with "+history".
  stacks    the same with each event's Python stack (context="all", stacks="python"); rows
            labelled with "+history-stacks".
  At the end of each recorded run the snapshot is taken once, its time and size in rows
  snapshot_ms and snapshot_bytes.

Allocation log (--log FILE, the rmm modes): a LoggingResourceAdaptor on top of the stack writes
every allocation and free to FILE (RMM's CSV log), which ``rmm_replay`` replays on the host against
any pool. The rows of a logged run carry the adaptor's cost.

Workloads:
  empty_loop  ``torch.empty((100, 4), device="cuda")`` created and dropped in a loop: microseconds
              per iteration, median (and fastest, slowest) of --runs timed runs.
  train_step  a 6-layer nn.TransformerEncoder (d_model 512, 8 heads, feed-forward 2048, batch
              first) with a linear head, Adam, --steps steps whose (batch, sequence) shapes are
              drawn from --seed: milliseconds per step (each step ends in a synchronize; median,
              10th and 90th percentile over the steps), the final loss (to compare across modes:
              the same seed gives the same computation, up to the order of atomic adds) and the
              peak memory reserved.
  peak_reserved  bytes the allocator held from the device at its highest, over the whole process:
              native: torch.cuda.max_memory_reserved(); rmm_pool: the StatisticsResourceAdaptor's
              peak_bytes under the pool, i.e. the pool's size high-water (what the pool took from
              cudaMalloc, including the initial pool); rmm_virtual_pool: the bytes mapped at the end
              (it unmaps only when asked). pool_size_end is pool.pool_size() at the end.
  peak_live_bytes  (with --live) bytes allocated and not yet freed at the highest: native:
              torch.cuda.max_memory_allocated() (PyTorch's rounded block sizes); the rmm modes: a
              StatisticsResourceAdaptor over the pool (the requested sizes), which --live adds.
"""

import os
import random
import statistics
import subprocess
import sys
import time

import bench_common as bc

MODES = ("native", "rmm_pool")
# Modes run only when asked for (--modes).
EXTRA_MODES = ("native_expandable", "rmm_virtual_pool")


def setup(mode, args):
    """Installs the allocator for ``mode``; returns (impl label, function giving the peak, pool,
    the statistics adaptor on top of the pool that counts the live bytes)."""
    import torch

    if args.device == "cpu":  # the script's own check, without a GPU: nothing to compare
        if mode != "native":
            raise RuntimeError("--device cpu runs the native mode only")
        return "torch-cpu", None, None, None
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device visible to PyTorch")
    if mode in ("native", "native_expandable"):
        label = "torch-native" if mode == "native" else "torch-expandable"
        return label, torch.cuda.max_memory_reserved, None, None
    import rmm
    from rmm.allocators.torch import rmm_torch_allocator

    if rmm_torch_allocator is None:
        raise RuntimeError("rmm.allocators.torch.rmm_torch_allocator is None")
    if mode == "rmm_virtual_pool":
        # The virtual pool never unmaps on its own (only release() does): what it maps at the end
        # is what it mapped at its highest.
        vpool = rmm.mr.VirtualPoolMemoryResource()
        top = rmm.mr.StatisticsResourceAdaptor(vpool) if args.live else None
        rmm.mr.set_current_device_resource(logged(top or vpool, args))
        torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
        return bc.impl_name(args) + "-virtual", vpool.mapped_bytes, vpool, top
    stats = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
    pool = rmm.mr.PoolMemoryResource(stats, initial_pool_size=args.initial_pool_size,
                                     maximum_pool_size=args.maximum_pool_size)
    top = rmm.mr.StatisticsResourceAdaptor(pool) if args.live else None
    rmm.mr.set_current_device_resource(logged(top or pool, args))
    torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
    return bc.impl_name(args), lambda: stats.allocation_counts.peak_bytes, pool, top


def logged(resource, args):
    """``resource``, under a LoggingResourceAdaptor writing to --log where one is given."""
    if not args.log:
        return resource
    import rmm

    return rmm.mr.LoggingResourceAdaptor(resource, args.log)


def flush_log(args):
    """Writes out what the --log adaptor holds."""
    if args.log:
        import rmm

        rmm.mr.get_current_device_resource().flush()


HISTORY = ("off", "on", "stacks")


def start_history(mode, impl, args):
    """Starts recording for --history (one value in a child); returns the label to use."""
    if args.history == "off":
        return impl
    context = None if args.history == "on" else "all"
    if mode in ("native", "native_expandable"):
        import torch

        torch.cuda.memory._record_memory_history(context=context, stacks="python", max_entries=args.history_entries)
    else:
        import rmm.memory

        rmm.memory._record_memory_history(context=context, stacks="python", max_entries=args.history_entries)
    return impl + ("+history" if args.history == "on" else "+history-stacks")


def snapshot_rows(mode, impl, param, args):
    """The time and size of one snapshot of a recorded run."""
    import pickle

    t0 = time.perf_counter()
    if mode in ("native", "native_expandable"):
        import torch

        snap = torch.cuda.memory._snapshot()
    else:
        import rmm.memory

        snap = rmm.memory._snapshot()
    ms = (time.perf_counter() - t0) * 1e3
    bc.row(impl, "train_step", param, ms, "snapshot_ms")
    bc.row(impl, "train_step", param, len(pickle.dumps(snap)), "snapshot_bytes")


def sync(args):
    """Waits for the device's queued work (nothing to wait for on the CPU)."""
    import torch

    if args.device == "cuda":
        torch.cuda.synchronize()


def empty_loop(impl, args, budget):
    import torch

    dev = torch.device(args.device)

    def body(n):
        for _ in range(n):
            torch.empty((100, 4), device=dev)

    bc.emit_loop(impl, "empty_loop", "shape=100x4", bc.loop_us(body, budget, args.runs, lambda: sync(args)))


def train(impl, args):
    import torch
    from torch import nn

    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    dev = torch.device(args.device)
    layer = nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, dropout=0.1,
                                       batch_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, num_layers=6), nn.Linear(512, 512)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    times, loss = [], None
    deadline = time.perf_counter() + args.train_budget
    for step in range(args.steps):
        batch = min(rng.choice((8, 16, 24, 32, 48, 64)), args.max_shape or 64)
        seq = min(rng.choice((64, 128, 192, 256, 384, 512)), args.max_shape or 512)
        sync(args)
        t0 = time.perf_counter()
        x = torch.randn(batch, seq, 512, device=dev)
        target = torch.randn(batch, seq, 512, device=dev)
        loss = nn.functional.mse_loss(model(x), target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sync(args)
        times.append((time.perf_counter() - t0) * 1e3)
        if time.perf_counter() > deadline:
            bc.comment(f"{impl}: train_step stopped after {step + 1} of {args.steps} steps (--train-budget)")
            break
    param = f"steps={len(times)}"
    deciles = statistics.quantiles(times, n=10) if len(times) > 1 else times * 9
    bc.row(impl, "train_step", param, statistics.median(times), "ms_per_step")
    bc.row(impl, "train_step", param, deciles[0], "ms_per_step_p10")
    bc.row(impl, "train_step", param, deciles[-1], "ms_per_step_p90")
    bc.row(impl, "train_step", param, float(loss.item()), "final_loss")
    return param


def run_mode(mode, args):
    try:
        impl, peak, pool, top = setup(mode, args)
    except Exception as e:  # no GPU, no torch, an rmm without the allocator
        label = {"native": "torch-native", "native_expandable": "torch-expandable"}.get(mode, bc.impl_name(args))
        bc.fail(label, "setup", f"mode={mode}", e)
        return 1
    status, param = 0, f"steps={args.steps}"
    try:
        impl = start_history(mode, impl, args)
    except Exception as e:
        bc.fail(impl, "setup", f"mode={mode} history={args.history}", e)
        return 1
    try:
        empty_loop(impl, args, args.budget)
    except Exception as e:
        bc.fail(impl, "empty_loop", f"mode={mode}", e)
        status = 1
    try:
        param = train(impl, args)
    except Exception as e:
        bc.fail(impl, "train_step", f"mode={mode}", e)
        status = 1
    # Over the whole process (the empty loop's allocations are far below the training's).
    if peak is not None:
        bc.row(impl, "train_step", param, int(peak()), "peak_reserved_bytes")
    if top is not None:
        bc.row(impl, "train_step", param, int(top.allocation_counts.peak_bytes), "peak_live_bytes")
    elif peak is not None and args.live:
        import torch

        bc.row(impl, "train_step", param, int(torch.cuda.max_memory_allocated()), "peak_live_bytes")
    if pool is not None:
        bc.row(impl, "train_step", param, int(pool.pool_size()), "pool_size_end_bytes")
        flush_log(args)
    if args.history != "off":
        try:
            snapshot_rows(mode, impl, param, args)
        except Exception as e:
            bc.fail(impl, "snapshot", f"mode={mode}", e)
            status = 1
    return status


def main():
    p = bc.parser(__doc__.split("\n")[0])
    p.add_argument("--mode", choices=MODES + EXTRA_MODES + ("all",), default="all",
                   help="one mode in this process, or all (default): each in a child process")
    p.add_argument("--modes", default=",".join(MODES),
                   help="the modes 'all' runs (comma separated; also: " + ", ".join(EXTRA_MODES) + ")")
    p.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    p.add_argument("--train-budget", type=float, default=300.0,
                   help="seconds after which training stops early, with a comment (default 300)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--live", action="store_true",
                   help="also report peak_live_bytes (the rmm modes then count through a "
                        "StatisticsResourceAdaptor over the pool)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="cpu: the native mode on the CPU, a check of the script without a GPU")
    p.add_argument("--max-shape", type=int, default=None,
                   help="caps batch and sequence length (a short check; default: no cap)")
    p.add_argument("--initial-pool-size", default="0",
                   help="rmm_pool's initial_pool_size (bytes or '1GiB'; default 0: the peak is what "
                        "the pool grew to)")
    p.add_argument("--maximum-pool-size", default=None, help="rmm_pool's maximum_pool_size")
    p.add_argument("--history", default="off",
                   help="allocation history: off, on, stacks, or several comma separated (each runs "
                        "every mode; default off)")
    p.add_argument("--log", metavar="FILE", default=None,
                   help="the rmm modes: write every allocation and free to FILE (RMM's CSV log; "
                        "one mode at a time)")
    p.add_argument("--history-entries", type=int, default=100_000,
                   help="max_entries of the recorded history (default 100000)")
    args = p.parse_args()
    histories = [h for h in args.history.split(",") if h]
    for h in histories:
        if h not in HISTORY:
            sys.exit(f"unknown --history value {h!r} (known: {', '.join(HISTORY)})")
    if args.initial_pool_size.isdigit():
        args.initial_pool_size = int(args.initial_pool_size)
    if args.maximum_pool_size and args.maximum_pool_size.isdigit():
        args.maximum_pool_size = int(args.maximum_pool_size)
    rmm_modes = [m for m in args.modes.split(",") if m.startswith("rmm")] if args.mode == "all" else [args.mode]
    if args.log and (len(rmm_modes) != 1 or len(histories) != 1):
        sys.exit("--log writes one file: give it one rmm mode (--mode or --modes) and one --history value")
    if args.mode != "all":
        if len(histories) != 1:
            sys.exit("--mode runs one --history value")
        args.history = histories[0]
        bc.header(args)
        return run_mode(args.mode, args)
    bc.header(args)
    status = 0
    for mode in [m for m in args.modes.split(",") if m]:
        if mode not in MODES + EXTRA_MODES:
            sys.exit(f"unknown mode {mode!r} (known: {', '.join(MODES + EXTRA_MODES)})")
        for history in histories:
            # The child inherits every option but --mode/--modes/--history and prints rows only.
            child = [a for a in sys.argv[1:]]
            cmd = [sys.executable, os.path.abspath(__file__), *child, "--mode", mode, "--no-header",
                   "--history", history]
            env = dict(os.environ)
            env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
            if mode == "native_expandable":
                env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
            status |= subprocess.call(cmd, env=env)
    return status


if __name__ == "__main__":
    sys.exit(main())
