"""Allocation statistics and memory profiling (RMM's ``rmm.statistics``).

Statistics are gathered by making a ``StatisticsResourceAdaptor`` the current device resource;
its stack of counter frames gives nested regions (``push_statistics``/``pop_statistics``, the
``statistics()`` context, the ``profiler``) their own counts.
"""

import inspect
import threading
from collections import defaultdict
from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import wraps
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar

# rmm.mr's functions are looked up at each call, so that the current resource is read afresh.
import rmm.mr

P = ParamSpec("P")
T = TypeVar("T")


@dataclass
class Statistics:
    """Statistics returned by ``{get,push,pop}_statistics()``.

    Attributes
    ----------
    current_bytes
        Bytes allocated now.
    current_count
        Allocations live now.
    peak_bytes
        Most bytes allocated at once.
    peak_count
        Most allocations live at once.
    total_bytes
        Bytes allocated in all.
    total_count
        Allocations made in all.
    """

    current_bytes: int
    current_count: int
    peak_bytes: int
    peak_count: int
    total_bytes: int
    total_count: int


def enable_statistics() -> None:
    """Enable allocation statistics: wrap the current device resource in a
    ``StatisticsResourceAdaptor`` unless it already is one (so calling this twice is harmless).

    The adaptor must stay the current resource while statistics are gathered.
    """
    mr = rmm.mr.get_current_device_resource()
    if not isinstance(mr, rmm.mr.StatisticsResourceAdaptor):
        rmm.mr.set_current_device_resource(rmm.mr.StatisticsResourceAdaptor(mr))


def get_statistics() -> Statistics | None:
    """The counters of the innermost frame, or None when statistics are not enabled."""
    mr = rmm.mr.get_current_device_resource()
    return None if not isinstance(mr, rmm.mr.StatisticsResourceAdaptor) else mr.allocation_counts


def push_statistics() -> Statistics | None:
    """Start a new frame of zeroed counters.

    Returns the counters of the frame that was current before the push, or None (and does
    nothing) when statistics are not enabled.
    """
    mr = rmm.mr.get_current_device_resource()
    return None if not isinstance(mr, rmm.mr.StatisticsResourceAdaptor) else mr.push_counters()


def pop_statistics() -> Statistics | None:
    """End the innermost frame (its counts are added to the frame below) and return its
    counters; None (and nothing done) when statistics are not enabled.

    Raises
    ------
    IndexError
        If no frame was pushed.
    """
    mr = rmm.mr.get_current_device_resource()
    return None if not isinstance(mr, rmm.mr.StatisticsResourceAdaptor) else mr.pop_counters()


@contextmanager
def statistics() -> Generator[None, None, None]:
    """Gather allocation statistics inside the ``with`` block.

    When statistics are already enabled, a new frame is pushed on entry and popped on exit.
    Otherwise a ``StatisticsResourceAdaptor`` becomes the current resource on entry and the
    previous resource is put back on exit.

    Raises
    ------
    ValueError
        If the current device resource was changed inside the block.
    """
    previous = None
    if push_statistics() is None:
        previous = rmm.mr.get_current_device_resource()
        enable_statistics()
    inside = rmm.mr.get_current_device_resource()
    try:
        yield
    finally:
        if rmm.mr.get_current_device_resource() is not inside:
            raise ValueError(
                "RMM memory source stack was changed while in the statistics context"
            )
        if previous is None:
            pop_statistics()
        else:
            rmm.mr.set_current_device_resource(previous)


class ProfilerRecords:
    """Memory statistics of profiled functions and code blocks, by name."""

    @dataclass
    class MemoryRecord:
        """Memory statistics of one function or code block.

        Attributes
        ----------
        num_calls
            Times it ran.
        memory_total
            Bytes it allocated in all.
        memory_peak
            Most bytes it had allocated at once, over all its runs.
        """

        num_calls: int = 0
        memory_total: int = 0
        memory_peak: int = 0

        def add(self, memory_total: int, memory_peak: int) -> None:
            """Count one more run that allocated `memory_total` with peak `memory_peak`."""
            self.num_calls += 1
            self.memory_total += memory_total
            if memory_peak > self.memory_peak:
                self.memory_peak = memory_peak

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, ProfilerRecords.MemoryRecord] = defaultdict(
            ProfilerRecords.MemoryRecord
        )

    def add(self, name: str, data: Statistics) -> None:
        """Add the statistics `data` of one run to the record `name` (thread-safe)."""
        with self._lock:
            self._records[name].add(
                memory_total=data.total_bytes, memory_peak=data.peak_bytes
            )

    @property
    def records(self) -> dict[str, MemoryRecord]:
        """A copy of the records, by name."""
        with self._lock:
            return dict(self._records)

    def report(
        self,
        ordered_by: Literal["num_calls", "memory_peak", "memory_total"] = "memory_peak",
    ) -> str:
        """The records as a readable table, largest `ordered_by` first."""
        rows = sorted(
            self.records.items(), key=lambda kv: getattr(kv[1], ordered_by), reverse=True
        )
        lines = ["Memory Profiling", "================", ""]
        if not rows:
            lines.append("No data, maybe profiling wasn't enabled?")
            return "\n".join(lines)
        lines += [
            "Legends:",
            "  ncalls       - number of times the function or code block was called",
            "  memory_peak  - peak memory allocated in function or code block (in bytes)",
            "  memory_total - total memory allocated in function or code block (in bytes)",
            "",
            f"Ordered by: {ordered_by}",
            "",
            "ncalls     memory_peak    memory_total  filename:lineno(function)",
        ]
        for name, rec in rows:
            lines.append(
                f"{rec.num_calls:6,d} {rec.memory_peak:15,d} {rec.memory_total:15,d}  {name}"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.records})"

    def __str__(self) -> str:
        return self.report()


def _get_descriptive_name_of_object(obj: object) -> str:
    """``file:line(qualified name)`` of a function, looking through decorators."""
    inner: Any = inspect.unwrap(obj)  # type: ignore[arg-type]
    _, line = inspect.getsourcelines(inner)
    return f"{inspect.getfile(inner)}:{line}({inner.__qualname__})"


default_profiler_records = ProfilerRecords()


class ProfilerContext:
    """Profiles the memory a function (as a decorator) or a code block (as a context manager)
    allocates, into `records` under `name`.

    Parameters
    ----------
    records
        Where the statistics of each run are added.
    name
        The record's name: required as a context manager; as a decorator an empty name means
        the function's file, line and name.
    """

    def __init__(self, records: ProfilerRecords, name: str) -> None:
        self._records = records
        self._name = name

    def __call__(self, func: Callable[P, T]) -> Callable[P, T]:
        """Wrap `func` so that each call is profiled."""
        name = self._name or _get_descriptive_name_of_object(func)
        records = self._records

        @wraps(func)
        def profiled(*args: P.args, **kwargs: P.kwargs) -> T:
            push_statistics()
            try:
                return func(*args, **kwargs)
            finally:
                stats = pop_statistics()
                if stats is not None:
                    records.add(name=name, data=stats)

        return profiled

    def __enter__(self) -> "ProfilerContext":
        if not self._name:
            raise ValueError(
                "When profiler is used as a context manager, a name must be provided"
            )
        push_statistics()
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        stats = pop_statistics()
        if stats is not None:
            self._records.add(name=self._name, data=stats)


def profiler(
    *,
    records: ProfilerRecords = default_profiler_records,
    name: str = "",
) -> ProfilerContext:
    """Decorator and context manager that profiles a function or code block.

    With statistics enabled (the current resource is a ``StatisticsResourceAdaptor``), each run
    adds its statistics to `records` under `name`; otherwise it does nothing.

    Parameters
    ----------
    records
        Where the statistics go (``default_profiler_records`` unless given).
    name
        The record's name; required as a context manager. As a decorator an empty name stands
        for the function's file, line and name.
    """
    return ProfilerContext(records, name)
