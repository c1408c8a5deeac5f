"""Helpers shared by the scenario modules: resource factories, pointer facts, size classes."""

import os
import re
import tempfile

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def no_addresses(text):
    """``text`` with every hexadecimal address replaced by ``0x...`` (reprs name their object's
    address)."""
    return _ADDRESS.sub("0x...", text)

#: Sizes every resource is asked for: 0, odd, around the 256-byte alignment, pages, megabytes.
SIZE_CLASSES = [0, 1, 7, 8, 255, 256, 257, 4096, 65536, 1 << 20, 3 << 20, 1 << 26]

#: A size no GPU has: every resource must refuse it.
HUGE = 1 << 60


def ptr_facts(ptr):
    """What may be recorded of a pointer: that it is an int, not null, and 256-byte aligned."""
    if not isinstance(ptr, int):
        return {"type": type(ptr).__name__}
    return {"nonzero": ptr != 0, "aligned256": ptr % 256 == 0}


def tmp_log_path(stem):
    """A fresh path in a temporary folder for a log file (not created)."""
    d = tempfile.mkdtemp(prefix="oracle-log-")
    return os.path.join(d, stem)


def _cuda(rmm):
    return rmm.mr.CudaMemoryResource()


def _callback(rmm):
    up = rmm.mr.CudaMemoryResource()

    def alloc(n, stream):
        return up.allocate(n, stream)

    def dealloc(p, n, stream):
        up.deallocate(p, n, stream)

    return rmm.mr.CallbackMemoryResource(alloc, dealloc)


#: Resources by a short name: each factory takes the ``rmm`` module and returns a fresh resource.
RESOURCES = {
    "cuda": _cuda,
    "managed": lambda rmm: rmm.mr.ManagedMemoryResource(),
    "pinned_host": lambda rmm: rmm.mr.PinnedHostMemoryResource(),
    "cuda_async": lambda rmm: rmm.mr.CudaAsyncMemoryResource(),
    "pool": lambda rmm: rmm.mr.PoolMemoryResource(_cuda(rmm), 1 << 22, 1 << 28),
    "pool_async": lambda rmm: rmm.mr.PoolMemoryResource(rmm.mr.CudaAsyncMemoryResource(), 1 << 22),
    "pool_managed": lambda rmm: rmm.mr.PoolMemoryResource(rmm.mr.ManagedMemoryResource(), 1 << 22),
    "arena": lambda rmm: rmm.mr.ArenaMemoryResource(_cuda(rmm), 1 << 28),
    "fixed_size": lambda rmm: rmm.mr.FixedSizeMemoryResource(_cuda(rmm), 1 << 20, 8),
    "binning": lambda rmm: rmm.mr.BinningMemoryResource(_cuda(rmm), 10, 20),
    "limiting": lambda rmm: rmm.mr.LimitingResourceAdaptor(_cuda(rmm), 1 << 28),
    "statistics": lambda rmm: rmm.mr.StatisticsResourceAdaptor(_cuda(rmm)),
    "tracking": lambda rmm: rmm.mr.TrackingResourceAdaptor(_cuda(rmm)),
    "failure_callback": lambda rmm: rmm.mr.FailureCallbackResourceAdaptor(
        _cuda(rmm), lambda n: False
    ),
    "prefetch": lambda rmm: rmm.mr.PrefetchResourceAdaptor(rmm.mr.ManagedMemoryResource()),
    "callback": _callback,
    "logging": lambda rmm: rmm.mr.LoggingResourceAdaptor(_cuda(rmm), tmp_log_path("log.csv")),
    "stats_over_pool": lambda rmm: rmm.mr.StatisticsResourceAdaptor(
        rmm.mr.PoolMemoryResource(_cuda(rmm), 1 << 22)
    ),
    "tracking_over_limiting": lambda rmm: rmm.mr.TrackingResourceAdaptor(
        rmm.mr.LimitingResourceAdaptor(_cuda(rmm), 1 << 24)
    ),
}

#: The resources whose allocation is device memory (DeviceBuffer copies work on every one).
DEVICE_RESOURCES = [n for n in RESOURCES if n != "pinned_host"]


def make(rmm, name):
    """A fresh resource by its short name."""
    return RESOURCES[name](rmm)


def stats_dict(s):
    """A Statistics value's six counters (or the value itself when it is not one)."""
    if s is None:
        return None
    keys = ["current_bytes", "current_count", "peak_bytes", "peak_count", "total_bytes",
            "total_count"]
    if all(hasattr(s, k) for k in keys):
        return {k: getattr(s, k) for k in keys}
    return {"type": type(s).__name__}
