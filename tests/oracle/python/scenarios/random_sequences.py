"""Randomised allocate/free sequences over each resource: the same seed drives both sides; each
step's success or failure and the counters at checkpoints are recorded."""

import random

from oracle_lib import register
from scen_util import RESOURCES, make, stats_dict

STEPS = 200
SEEDS = [1, 2, 3]


def _size(rng):
    r = rng.random()
    if r < 0.05:
        return 0
    if r < 0.45:
        return rng.randint(1, 512)
    if r < 0.85:
        return rng.randint(513, 1 << 16)
    return rng.randint(1 << 16, 4 << 20)


def _counters(mr):
    out = {}
    if hasattr(mr, "allocation_counts"):
        out["stats"] = stats_dict(mr.allocation_counts)
    if hasattr(mr, "get_allocation_limit"):
        out["limited_bytes"] = mr.get_allocated_bytes()
    elif hasattr(mr, "get_allocated_bytes"):
        out["tracked_bytes"] = mr.get_allocated_bytes()
    if hasattr(mr, "pool_size"):
        out["pool_size"] = mr.pool_size()
    return out


def _sequence(factory, seed):
    def run(t):
        import rmm

        mr = factory(rmm)
        rng = random.Random(seed)
        live = []
        for i in range(STEPS):
            if live and rng.random() < 0.45:
                p, n = live.pop(rng.randrange(len(live)))
                try:
                    mr.deallocate(p, n)
                    t.rec(f"{i}:free:{n}", True)
                except Exception as e:  # noqa: BLE001
                    t.rec(f"{i}:free:{n}", {"raises": type(e).__name__})
            else:
                n = _size(rng)
                try:
                    p = mr.allocate(n)
                    t.rec(f"{i}:alloc:{n}", p % 256 == 0)
                    live.append((p, n))
                except Exception as e:  # noqa: BLE001
                    t.rec(f"{i}:alloc:{n}", {"raises": type(e).__name__})
            if i % 50 == 49:
                t.rec(f"{i}:counters", _counters(mr))
        for p, n in live:
            mr.deallocate(p, n)
        t.rec("end:counters", _counters(mr))

    return run


#: Small limits so that refusals happen inside the sequences.
_TIGHT = {
    "tight_limiting": lambda rmm: rmm.mr.LimitingResourceAdaptor(
        rmm.mr.CudaMemoryResource(), 8 << 20),
    "tight_pool": lambda rmm: rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), 1 << 20,
                                                        16 << 20),
    "stats_over_tight_pool": lambda rmm: rmm.mr.StatisticsResourceAdaptor(
        rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), 0, 12 << 20)),
    "tracking_over_tight_limiting": lambda rmm: rmm.mr.TrackingResourceAdaptor(
        rmm.mr.LimitingResourceAdaptor(rmm.mr.CudaMemoryResource(), 6 << 20)),
    "pool_over_tight_limiting": lambda rmm: rmm.mr.PoolMemoryResource(
        rmm.mr.LimitingResourceAdaptor(rmm.mr.CudaMemoryResource(), 10 << 20), 0, 16 << 20),
    "binning_over_tight_pool": lambda rmm: rmm.mr.BinningMemoryResource(
        rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), 0, 24 << 20), 8, 16),
    "fixed_over_tight_limiting": lambda rmm: rmm.mr.FixedSizeMemoryResource(
        rmm.mr.LimitingResourceAdaptor(rmm.mr.CudaMemoryResource(), 20 << 20), 1 << 16, 4),
    "arena_small": lambda rmm: rmm.mr.ArenaMemoryResource(rmm.mr.CudaMemoryResource(), 32 << 20),
}

for _name in [n for n in RESOURCES if n not in ("pinned_host", "logging")]:
    for _seed in SEEDS:
        register(_sequence(lambda rmm, n=_name: make(rmm, n), _seed), __name__,
                 f"{_name}/seed{_seed}")
for _name, _factory in _TIGHT.items():
    for _seed in SEEDS:
        register(_sequence(_factory, _seed), __name__, f"{_name}/seed{_seed}")


def _buffer_sequence(seed):
    def run(t):
        import rmm

        rng = random.Random(seed)
        st = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
        bufs = []
        for i in range(100):
            op = rng.choice(["new", "new", "resize", "reserve", "copy", "drop", "to_device"])
            if op == "new" or not bufs:
                bufs.append(rmm.DeviceBuffer(size=_size(rng), mr=st))
            elif op == "resize":
                b = rng.choice(bufs)
                b.resize(_size(rng))
            elif op == "reserve":
                b = rng.choice(bufs)
                b.reserve(_size(rng))
            elif op == "copy":
                bufs.append(rng.choice(bufs).copy())
            elif op == "drop":
                bufs.pop(rng.randrange(len(bufs)))
            else:
                data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
                b = rmm.DeviceBuffer(size=len(data), mr=st)
                b.copy_from_host(data)
                t.rec(f"{i}:content", b.tobytes() == data)
                bufs.append(b)
            t.rec(f"{i}:{op}", [[b.size, b.capacity()] for b in bufs[-3:]])
            if i % 25 == 24:
                t.rec(f"{i}:stats", stats_dict(st.allocation_counts))
        bufs.clear()
        t.rec("end", stats_dict(st.allocation_counts))

    return run


for _seed in SEEDS + [4, 5]:
    register(_buffer_sequence(_seed), __name__, f"device_buffer/seed{_seed}")
