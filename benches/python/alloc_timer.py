"""Time a process spends in CuPy's allocator: each allocation and each free, per thread.

``install()`` wraps the allocator CuPy uses now (on a Dask-CUDA worker, the ``rmm`` package's
``rmm_cupy_allocator``) so that every call is timed, and the memory it returns is owned by a small
object whose release, the free of the block, is timed on the thread that releases it. The wrapper
adds its own cost (two CuPy objects per allocation) to what it measures, the same on any ``rmm``.
Run with ``client.run`` on Dask workers: the clocks live on the ``dask_worker`` object.
"""

import threading
import time


class _Clock:
    """One thread's sums: nanoseconds in allocations and in frees, and the allocations."""

    __slots__ = ("alloc_ns", "free_ns", "calls")

    def __init__(self):
        self.alloc_ns = self.free_ns = self.calls = 0


class _Clocks:
    """Every thread's clock, each made on the thread's first call."""

    def __init__(self):
        self.local = threading.local()
        self.all = []
        self.lock = threading.Lock()

    def mine(self):
        clock = getattr(self.local, "clock", None)
        if clock is None:
            clock = self.local.clock = _Clock()
            with self.lock:
                self.all.append(clock)
        return clock


class _TimedOwner:
    """Owns the allocator's memory pointer; dropping it frees the block, and that is timed."""

    __slots__ = ("pointer", "clocks")

    def __init__(self, pointer, clocks):
        self.pointer = pointer
        self.clocks = clocks

    def __del__(self):
        start = time.perf_counter_ns()
        self.pointer = None
        self.clocks.mine().free_ns += time.perf_counter_ns() - start


def _holder(dask_worker):
    """Where the clocks live: the Dask worker, or this module's ``install`` outside Dask."""
    return dask_worker if dask_worker is not None else install


def install(dask_worker=None):
    """Wraps CuPy's current allocator in a timing one (once per process)."""
    import cupy

    holder = _holder(dask_worker)
    if getattr(holder, "_alloc_clocks", None) is not None:
        return
    inner = cupy.cuda.get_allocator()
    clocks = _Clocks()

    def timed(nbytes):
        clock = clocks.mine()
        start = time.perf_counter_ns()
        pointer = inner(nbytes)
        if pointer.ptr:
            memory = cupy.cuda.UnownedMemory(pointer.ptr, nbytes, _TimedOwner(pointer, clocks), pointer.device_id)
            pointer = cupy.cuda.MemoryPointer(memory, 0)
        clock.alloc_ns += time.perf_counter_ns() - start
        clock.calls += 1
        return pointer

    cupy.cuda.set_allocator(timed)
    holder._alloc_clocks = clocks


def reset(dask_worker=None):
    """Sets every thread's sums to zero."""
    for clock in list(_holder(dask_worker)._alloc_clocks.all):
        clock.alloc_ns = clock.free_ns = clock.calls = 0


def report(dask_worker=None):
    """The sums over every thread since the last reset: seconds allocating, seconds freeing,
    allocations, and the threads that allocated or freed."""
    clocks = list(_holder(dask_worker)._alloc_clocks.all)
    return {
        "alloc_s": sum(c.alloc_ns for c in clocks) / 1e9,
        "free_s": sum(c.free_ns for c in clocks) / 1e9,
        "calls": sum(c.calls for c in clocks),
        "threads": sum(1 for c in clocks if c.calls or c.free_ns),
    }
