"""Allocation history and memory snapshots in PyTorch's format (an rmm-rs addition; RMM 26.10
has no such module).

The names and arguments are those of ``torch.cuda.memory``, so that a PyTorch user who plugs RMM
in with ``rmm.allocators.torch.rmm_torch_allocator`` keeps the workflow of PyTorch's own
allocator (whose recorder sees nothing once another allocator is plugged in)::

    import rmm.memory
    rmm.memory._record_memory_history(max_entries=100_000)
    ...                                            # run the code to look at
    rmm.memory._dump_snapshot("snapshot.pickle")   # drop it on pytorch.org/memory_viz
    snapshot = rmm.memory._snapshot()              # or render it with torch.cuda._memory_viz:
    html = torch.cuda._memory_viz.trace_plot(snapshot)

Recording wraps the device's current resource in a ``rmm.mr.HistoryResourceAdaptor`` (as
``rmm.statistics.enable_statistics`` wraps it in a ``StatisticsResourceAdaptor``), which must stay
the current resource while recording; until then nothing is recorded and nothing is paid. The
snapshot's ``segments`` are the chunks of the pool under the current resource (its
``PoolMemoryResource`` or ``VirtualPoolMemoryResource``, through any adaptors), their blocks
``active_allocated`` or ``inactive``; ``device_traces`` holds the recorded ``alloc``,
``free_requested``/``free_completed`` and ``oom`` events, each with its Python stack when
recorded with stacks. The trace has no ``segment_alloc`` events: the pool's growth shows in the
segments.
"""

import pickle
import sys
from typing import Any, Literal

import rmm.mr
from rmm import _native

__all__ = [
    "_dump_snapshot",
    "_record_memory_history",
    "_snapshot",
    "memory_snapshot",
]


def _device_id(device) -> int | None:
    """The device id of ``device``; None for the current device."""
    if device is None or isinstance(device, int):
        return device
    if getattr(device, "type", None) == "cuda":  # a torch.device
        return device.index
    raise TypeError(f"device must be an int, a CUDA torch.device or None, not {device!r}")


def _resource(device: int | None):
    if device is None:
        return rmm.mr.get_current_device_resource()
    return rmm.mr.get_per_device_resource(device)


def _set_resource(device: int | None, mr) -> None:
    if device is None:
        rmm.mr.set_current_device_resource(mr)
    else:
        rmm.mr.set_per_device_resource(device, mr)


def _record_memory_history(
    enabled: Literal[None, "state", "all"] | bool = "all",
    context: Literal[None, "state", "alloc", "all"] = "all",
    stacks: Literal["python", "all"] = "all",
    max_entries: int = sys.maxsize,
    device: Any = None,
    clear_history: bool = False,
    dump_on_oom: str | None = None,
) -> None:
    """Start or stop recording the allocation history of ``device`` (default: the current one).

    As ``torch.cuda.memory._record_memory_history``: ``enabled=None`` (or False) stops recording
    and keeps what was recorded for a snapshot; ``"all"`` (or ``"state"``, or True) records.
    ``context=None`` records no stacks; otherwise each event gets the Python stack of its
    caller (``stacks`` ``"python"`` or ``"all"``: C++ frames are not recorded). ``max_entries``
    bounds the events kept, the oldest dropped first. ``clear_history`` forgets what was
    recorded. ``dump_on_oom`` (an rmm-rs addition) names a folder where an allocation that runs
    out of memory writes the snapshot and a memory map (SVG), named in the ``MemoryError``.
    """
    if enabled not in (None, False, True, "state", "all"):
        raise ValueError(f"enabled must be None, 'state' or 'all', not {enabled!r}")
    if context not in (None, "state", "alloc", "all"):
        raise ValueError(f"context must be None, 'state', 'alloc' or 'all', not {context!r}")
    if stacks not in ("python", "all"):
        raise ValueError(f"stacks must be 'python' or 'all', not {stacks!r}")
    dev = _device_id(device)
    mr = _resource(dev)
    if enabled in (None, False):
        if isinstance(mr, rmm.mr.HistoryResourceAdaptor):
            mr.record_history(False, clear_history=clear_history)
            mr.dump_on_oom(None)
        return
    if not isinstance(mr, rmm.mr.HistoryResourceAdaptor):
        mr = rmm.mr.HistoryResourceAdaptor(mr, device=dev)
        _set_resource(dev, mr)
    mr.record_history(
        True,
        max_entries=max_entries,
        stacks=context is not None,
        clear_history=clear_history,
    )
    mr.dump_on_oom(None if dump_on_oom is None else str(dump_on_oom))


def _snapshot(device: Any = None) -> dict:
    """The snapshot of ``device``'s current resource (default: the current device), the
    dictionary of ``torch.cuda.memory._snapshot()``: ``segments``, ``device_traces`` and
    ``allocator_settings``. Without recording, the trace is empty and the segments are still
    the pool's."""
    mr = _resource(_device_id(device))
    return pickle.loads(_native._snapshot_pickle(mr))


def _dump_snapshot(filename: str = "dump_snapshot.pickle", device: Any = None) -> None:
    """Write ``_snapshot(device)`` as a pickle to ``filename``, for pytorch.org/memory_viz or
    ``python -m torch.cuda._memory_viz trace_plot filename``."""
    mr = _resource(_device_id(device))
    data = _native._snapshot_pickle(mr)
    with open(filename, "wb") as f:
        f.write(data)


def memory_snapshot(device: Any = None) -> list:
    """The segments of ``_snapshot(device)``, as ``torch.cuda.memory_snapshot()`` returns them."""
    return _snapshot(device)["segments"]
